"""The workspace's files and names: what ``link`` knows about every file at once, and what an edit can affect.

Built from :class:`FileSummary` objects only (no AST, no re-parsing). It resolves a name as one file sees it to the
class, function, module-level binding or module of the workspace it stands for, across imports and re-exports, and
knows which files can see which (so that the editor's next link redoes only what an edit can have changed).
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from dynamo_lens.static import exprs
from dynamo_lens.static.summary import (
    LOCAL,
    ClassSummary,
    CompileSite,
    FileSummary,
    FunctionSummary,
    ModuleBinding,
    Ref,
)

ClassKey = tuple[str, str]
"""(path, class qualname)."""
FunctionKey = tuple[str, str]
"""(path, function qualname)."""

_T = TypeVar("_T")
_MAX_DEPTH = 8


@dataclass(frozen=True, slots=True)
class Symbol:
    """What a name resolves to in the workspace. ``binding``: a module-level name bound to a value (``qualname`` is
    the name; :class:`~dynamo_lens.static.semantic.evaluate.Evaluator` says what it holds)."""

    kind: Literal["class", "function", "method", "binding", "module"]
    path: str
    qualname: str


@dataclass(slots=True)
class _FileTables:
    summary: FileSummary
    classes: dict[str, ClassSummary]
    functions: dict[str, FunctionSummary]
    bindings: dict[str, list[ModuleBinding]]
    imports: dict[str, Ref]


class Files:
    def __init__(self, summaries: Sequence[FileSummary], previous: Files | None = None) -> None:
        """``previous``: the files of an earlier version of the same workspace (the editor links one after each
        edit). It hands over the tables of the files that did not change (the same summary objects), and the
        results of :meth:`carried` that no change can have reached. It must not be used again afterwards."""
        known = previous._files if previous is not None else {}
        self._files: dict[str, _FileTables] = {}
        changed: list[str] = []
        for summary in summaries:
            tables = known.get(summary.path)
            if tables is None or tables.summary is not summary:
                bindings: dict[str, list[ModuleBinding]] = {}
                for binding in summary.bindings:
                    bindings.setdefault(binding.name, []).append(binding)
                tables = _FileTables(
                    summary,
                    {c.qualname: c for c in summary.classes},
                    {f.qualname: f for f in summary.functions},
                    bindings,
                    dict(summary.imports),
                )
                changed.append(summary.path)
            self._files[summary.path] = tables
        self._paths = tuple(self._files)
        self._modules: dict[str, list[str]]
        self._carried: dict[Any, Any] = {}
        self._previous_carried: dict[Any, Any] = {}
        self._affected: set[str] | None = None
        """Files whose view of the workspace may differ from ``previous``'s (None: every file's may)."""
        self._targets: dict[str, frozenset[str]] = {}
        self._sources: dict[str, set[str]] = {}
        self._absolute: dict[str, tuple[str, ...]] = {}
        self._relative_prefixes: dict[tuple[str, str], tuple[str, ...]] = {}
        self.same_files = previous is not None and previous._paths == self._paths
        """The same set of files as ``previous`` (only their contents may differ)."""
        if previous is not None and self.same_files:
            self._modules = previous._modules  # the same files: the same module names
            self._carry_over(previous, changed)
        else:
            self._modules = {}
            for path in self._paths:
                for name in _module_names(path):
                    self._modules.setdefault(name, []).append(path)
        self._resolved: dict[tuple[str, Ref], Symbol | None] = {}
        self._relative: dict[tuple[str, str], tuple[str, int] | None] = {}
        self._programs: dict[str, frozenset[str]] = {}
        self._reached: dict[str, frozenset[str]] = {}

    # -- files -------------------------------------------------------------------------------------------------------
    @property
    def summaries(self) -> Iterable[FileSummary]:
        return (tables.summary for tables in self._files.values())

    def summary(self, path: str) -> FileSummary | None:
        tables = self._files.get(path)
        return tables.summary if tables is not None else None

    def compile_sites(self) -> list[CompileSite]:
        return [site for tables in self._files.values() for site in tables.summary.compile_sites]

    def classes(self) -> Iterable[tuple[ClassKey, ClassSummary]]:
        for path, tables in self._files.items():
            for qualname, summary in tables.classes.items():
                yield (path, qualname), summary

    def classes_of(self, path: str) -> Iterable[tuple[ClassKey, ClassSummary]]:
        tables = self._files.get(path)
        return (((path, qualname), summary) for qualname, summary in tables.classes.items()) if tables else ()

    def offered(self, path: str) -> bool:
        """``path`` is a module of a package the workspace offers its users: its folder holds an ``__init__.py``, and
        no folder on the way names tests, benchmarks or examples (code only its own programs run)."""
        folder = path.replace("\\", "/").rpartition("/")[0]
        init = f"{folder}/__init__.py" if folder else "__init__.py"
        return init in self._files and not any(part.lower() in _PRIVATE_FOLDERS for part in folder.split("/"))

    def class_summary(self, key: ClassKey) -> ClassSummary | None:
        tables = self._files.get(key[0])
        return tables.classes.get(key[1]) if tables is not None else None

    @property
    def paths(self) -> tuple[str, ...]:
        return self._paths

    @property
    def affected(self) -> frozenset[str] | None:
        """The files whose view of the workspace may differ from the previous index's (None: all of them)."""
        return frozenset(self._affected) if self._affected is not None else None

    def carried(self, key: Any, path: str, compute: Callable[[], _T]) -> _T:
        """``compute()`` once per link, for a result that depends on nothing but what the file ``path`` can reach
        through its names (its classes, their bases and methods, what those call, across imports: everything
        :meth:`resolve` may visit from there). The previous index's result for ``key`` is reused when no file that
        ``path`` reaches has changed since: an edit then costs what it touches, not the whole workspace."""
        if key in self._carried:
            result: _T = self._carried[key]
            return result
        value: _T
        if self._affected is not None and path not in self._affected and key in self._previous_carried:
            value = self._previous_carried[key]
        else:
            value = compute()
        self._carried[key] = value
        return value

    def track_changes(self) -> None:
        """Know which files reach which, so that the next index (given this one as ``previous``) can tell what an
        edit affects (done once; later indexes update it for the files that changed)."""
        if not self._targets:
            for path in self._paths:
                self._link_file(path)

    def together(self, a: str, b: str) -> bool:
        """Whether the files ``a`` and ``b`` can run in one program: some file that no other file of the workspace
        refers to (a script, a test, an entry point) reaches both through the names it uses, or one reaches the
        other. Code in two programs that share no file never runs together (a mode switch in one script does not
        change a module another script compiles)."""
        if a == b:
            return True
        entries_a, entries_b = self._entries(a), self._entries(b)
        return not entries_a or not entries_b or not entries_a.isdisjoint(entries_b)

    def imported_by(self, path: str, other: str) -> bool:
        """Whether ``path`` reaches ``other`` through the names it uses (directly or through other files): the
        module level of ``other`` has run by the time ``path``'s functions are called."""
        found = self._reached.get(path)
        if found is None:
            self.track_changes()
            seen, pending = {path}, [path]
            while pending:
                for target in self._targets.get(pending.pop(), ()):
                    if target not in seen:
                        seen.add(target)
                        pending.append(target)
            found = self._reached[path] = frozenset(seen)
        return other in found

    def _entries(self, path: str) -> frozenset[str]:
        """The entry files whose program reaches ``path`` (itself, if nothing refers to it; none when it is reached
        only from an import cycle, which any program may run)."""
        found = self._programs.get(path)
        if found is None:
            self.track_changes()
            seen, pending, entries = {path}, [path], set()
            while pending:
                sources = self._sources.get(pending.pop(), set())
                for source in sources:
                    if source not in seen:
                        seen.add(source)
                        pending.append(source)
            for file in seen:
                if not self._sources.get(file, set()) - {file}:
                    entries.add(file)
            found = self._programs[path] = frozenset(entries)
        return found

    def _carry_over(self, previous: Files, changed: list[str]) -> None:
        """Take over ``previous``'s carried results and file graph, and find the files ``changed`` can affect:
        themselves, and every file that reaches one of them through its names."""
        self._previous_carried = previous._carried
        if not previous._targets:
            return  # ``previous`` did not track changes: nothing is known to be unaffected
        self._targets, self._sources = previous._targets, previous._sources
        for path in changed:
            for target in self._targets.get(path, ()):
                self._sources[target].discard(path)
            self._link_file(path)
        affected = set(changed)
        pending = list(changed)
        while pending:
            for source in self._sources.get(pending.pop(), ()):
                if source not in affected:
                    affected.add(source)
                    pending.append(source)
        self._affected = affected

    def _link_file(self, path: str) -> None:
        targets = self._targets[path] = self._referenced_files(path)
        for target in targets:
            self._sources.setdefault(target, set()).add(path)

    def _absolute_files(self, dotted: str) -> tuple[str, ...]:
        """The files of every prefix of the absolute name ``dotted`` (``a``, ``a.b``, ``a.b.c``)."""
        found = self._absolute.get(dotted)
        if found is None:
            parts = dotted.split(".")
            found = self._absolute[dotted] = tuple(
                file for cut in range(1, len(parts) + 1) for file in self._modules.get(".".join(parts[:cut]), ())
            )
        return found

    def _relative_files(self, base: str, dotted: str) -> tuple[str, ...]:
        """The files of every prefix of ``dotted`` under the package directory ``base`` (``from ..a.b import c``)."""
        key = (base, dotted)
        found = self._relative_prefixes.get(key)
        if found is None:
            parts = dotted.split(".") if dotted else []
            files: list[str] = []
            for cut in range(len(parts) + 1):
                stem = "/".join([base, *parts[:cut]]) if base else "/".join(parts[:cut])
                for candidate in (f"{stem}.py", f"{stem}/__init__.py" if stem else "__init__.py"):
                    if candidate in self._files:
                        files.append(candidate)
            found = self._relative_prefixes[key] = tuple(files)
        return found

    def _referenced_files(self, path: str) -> frozenset[str]:
        """The files any name of ``path``'s summary may resolve into (more than :meth:`resolve` visits, never
        fewer): every file a prefix of an absolute name, or of a relative name from its package, is."""
        names = self._files[path].summary.names
        found = {path}
        for dotted, level in names:
            if level == 0:
                found.update(self._absolute_files(dotted))
                continue
            base = path
            for _ in range(level):
                base = base.rpartition("/")[0]
            found.update(self._relative_files(base, dotted))
        return frozenset(found)

    # -- names ---------------------------------------------------------------------------------------------------
    def resolve(self, path: str, ref: Ref, _depth: int = 0) -> Symbol | None:
        """What ``ref`` (as seen from the file ``path``) names in the workspace; None if outside it or unknown."""
        if _depth > _MAX_DEPTH:
            return None
        key = (path, ref)
        if key in self._resolved:
            return self._resolved[key]
        found = self._resolve(path, ref, _depth)
        if _depth == 0:  # deeper results depend on the depth budget left
            self._resolved[key] = found
        return found

    def _resolve(self, path: str, ref: Ref, _depth: int) -> Symbol | None:
        if ref.level == LOCAL:
            return self._resolve_in_file(path, ref.dotted.split("."), _depth)
        parts = ref.dotted.split(".") if ref.dotted else []
        if ref.level > 0:
            base = path
            for _ in range(ref.level):
                base = base.rpartition("/")[0]
            found = self._relative_module(base, ref.dotted)
            if found is None:
                return None
            return self._resolve_in_module(found[0], parts[found[1] :], _depth)
        for cut in range(len(parts), 0, -1):
            paths = self._modules.get(".".join(parts[:cut]))
            if paths:
                return self._resolve_in_module(_closest(paths, path), parts[cut:], _depth)
        return None

    def _relative_module(self, base: str, dotted: str) -> tuple[str, int] | None:
        """The file of the longest module prefix of ``dotted`` under directory ``base``, and how many parts it took."""
        key = (base, dotted)
        if key in self._relative:
            return self._relative[key]
        parts = dotted.split(".") if dotted else []
        found: tuple[str, int] | None = None
        for cut in range(len(parts), -1, -1):
            stem = "/".join([base, *parts[:cut]]) if base else "/".join(parts[:cut])
            for candidate in (f"{stem}.py", f"{stem}/__init__.py" if stem else "__init__.py"):
                if candidate in self._files:
                    found = (candidate, cut)
                    break
            if found is not None:
                break
        self._relative[key] = found
        return found

    def _resolve_in_module(self, path: str, rest: list[str], depth: int) -> Symbol | None:
        if not rest:
            return Symbol("module", path, "")
        return self._resolve_in_file(path, rest, depth)

    def _resolve_in_file(self, path: str, parts: list[str], depth: int) -> Symbol | None:
        tables = self._files.get(path)
        if tables is None or not parts:
            return None
        qualname = ".".join(parts)
        if qualname in tables.classes:
            return Symbol("class", path, qualname)
        if qualname in tables.functions:
            return Symbol("function", path, qualname)
        owner, _, member = qualname.rpartition(".")
        if owner in tables.classes and tables.classes[owner].method(member) is not None:
            return Symbol("method", path, qualname)
        head = parts[0]
        if len(parts) == 1 and head in tables.bindings:
            return Symbol("binding", path, head)
        imported = tables.imports.get(head)
        if imported is not None:
            dotted = ".".join([imported.dotted, *parts[1:]]) if imported.dotted else ".".join(parts[1:])
            return self.resolve(path, Ref(dotted, imported.level), depth + 1)
        return None

    def resolve_class(self, path: str, ref: Ref | None) -> ClassKey | None:
        """The workspace class ``ref`` names (a class, or a classmethod constructor such as ``Model.from_config``)."""
        if ref is None:
            return None
        symbol = self.resolve(path, ref)
        if symbol is None:
            return None
        if symbol.kind == "class":
            return symbol.path, symbol.qualname
        if symbol.kind == "method":
            owner, _, name = symbol.qualname.rpartition(".")
            summary = self.class_summary((symbol.path, owner))
            method = summary.method(name) if summary is not None else None
            if method is not None and method.kind == "classmethod":
                return symbol.path, owner
        return None

    def resolve_in_module(self, path: str, name: str) -> Symbol | None:
        """What ``name`` is in the module file ``path`` (``pkg.model`` then ``.Net``)."""
        return self._resolve_in_file(path, [name], 0)

    def bindings(self, path: str, name: str) -> list[ModuleBinding]:
        """The module-level bindings of ``name`` in ``path``, in source order."""
        tables = self._files.get(path)
        return tables.bindings.get(name, []) if tables is not None else []

    def function_summary(self, key: FunctionKey) -> FunctionSummary | None:
        tables = self._files.get(key[0])
        return tables.functions.get(key[1]) if tables is not None else None

    def imports(self, path: str) -> dict[str, Ref]:
        tables = self._files.get(path)
        return tables.imports if tables is not None else {}


def referenced_names(summary: FileSummary) -> tuple[tuple[str, int], ...]:
    """The (dotted name, relative level) of every reference out of the file ``summary`` holds
    (:attr:`FileSummary.names`)."""
    refs: list[Ref | None] = [ref for _, ref in summary.imports]
    for expr in summary_exprs(summary):
        refs.extend(exprs.refs_in(expr))
    for cls in summary.classes:
        refs += cls.bases
        for attr in cls.init_attrs:
            refs += attr.constructors
        for method in cls.methods:
            refs += [event.ctor for event in method.events]
            refs += [call.ref for call in method.builds]
    return tuple(sorted({(ref.dotted, ref.level) for ref in refs if ref is not None and ref.level != LOCAL}))


def summary_exprs(summary: FileSummary) -> Iterator[exprs.Expr]:
    """Every lowered expression a file summary holds."""
    yield from (binding.value for binding in summary.bindings)
    yield from (site.target for site in summary.compile_sites)
    yield from (switch.receiver for switch in summary.switches)
    yield from (write.receiver for write in summary.writes)
    calls = list(summary.calls)
    for function in summary.functions:
        calls.extend(function.calls)
        yield from function.returns
    for cls in summary.classes:
        yield from (value for _, value in (*cls.attr_values, *cls.class_values))
        for method in cls.methods:
            calls.extend(method.calls)
            yield from method.returns
    for call in calls:
        yield call.func
        yield from call.args
        yield from (value for _, value in call.keywords)


_PRIVATE_FOLDERS = frozenset(
    {"test", "tests", "testing", "benchmark", "benchmarks", "example", "examples", "scripts", "tools", "docs"}
)


def _module_names(path: str) -> list[str]:
    """Every dotted module name ``path`` might be imported as (``a/b/c.py`` → ``c``, ``b.c``, ``a.b.c``)."""
    stem = path[:-4] if path.endswith(".pyi") else path[:-3] if path.endswith(".py") else path
    parts = [p for p in stem.replace("\\", "/").split("/") if p and p != "."]
    if parts and parts[-1] == "__init__":
        parts.pop()
    names: list[str] = []
    suffix = ""
    for part in reversed(parts):
        if not part.isidentifier():
            break
        suffix = f"{part}.{suffix}" if suffix else part
        names.append(suffix)
    return names


def _closest(paths: list[str], importer: str) -> str:
    """Of several files with the same module name, the one sharing the longest directory prefix with the importer."""
    if len(paths) == 1:
        return paths[0]
    here = posixpath.dirname(importer)
    return max(
        paths, key=lambda p: (len(posixpath.commonpath([here, posixpath.dirname(p)]) if _same_root(here, p) else ""), p)
    )


def _same_root(a: str, b: str) -> bool:
    return a.startswith("/") == b.startswith("/")
