"""The workspace index: what ``link`` knows about all files at once.

Built from :class:`FileSummary` objects only (no AST, no re-parsing). It resolves names across files and imports,
knows which classes are ``nn.Module`` subclasses (also indirectly), resolves what each compile site compiles, and
computes which methods and functions each compile site reaches: a compiled module's ``forward``, the methods it
calls as ``self.m()`` or reads as properties (through the class's MRO), the ``forward`` of its submodules, and the
functions called by name from all of those. Every query is a dictionary lookup after a linear build.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from dynamo_lens.codes import Rule
from dynamo_lens.model import Finding, Fix, Related, Severity, Span
from dynamo_lens.static.summary import (
    LOCAL,
    AttrInit,
    ClassSummary,
    CompileSite,
    FileSummary,
    FunctionSummary,
    InstanceBinding,
    MethodSummary,
    Ref,
)

ClassKey = tuple[str, str]
"""(path, class qualname)."""
FunctionKey = tuple[str, str]
"""(path, function qualname)."""

_T = TypeVar("_T")
_MAX_DEPTH = 8
_NO_SITES: tuple[CompileSite, ...] = ()

TORCH_MODULE_BASES = frozenset({"torch.nn.Module", "torch.nn.modules.module.Module"})
"""Bases after which a class's own ``__init__`` is all there is (no attributes defined elsewhere)."""
_EXTERNAL_MODULE_BASES = frozenset({"PreTrainedModel", "ModelMixin", "LightningModule"})


@dataclass(frozen=True, slots=True)
class Symbol:
    """What a name resolves to in the workspace. For ``instance``, ``qualname`` is the instance's class."""

    kind: Literal["class", "function", "method", "instance", "module"]
    path: str
    qualname: str


@dataclass(slots=True)
class _FileTables:
    summary: FileSummary
    classes: dict[str, ClassSummary]
    functions: dict[str, FunctionSummary]
    module_instances: dict[str, InstanceBinding]
    imports: dict[str, Ref]


_Node = tuple[Literal["method"], ClassKey, str] | tuple[Literal["function"], FunctionKey]


class WorkspaceIndex:
    def __init__(self, summaries: Sequence[FileSummary], previous: WorkspaceIndex | None = None) -> None:
        """``previous``: the index of an earlier version of the same workspace (the editor links one after each
        edit). It hands over the tables of the files that did not change (the same summary objects), and the
        results of :meth:`carried` that no change can have reached. It must not be used again afterwards."""
        known = previous._files if previous is not None else {}
        self._files: dict[str, _FileTables] = {}
        changed: list[str] = []
        for summary in summaries:
            tables = known.get(summary.path)
            if tables is None or tables.summary is not summary:
                tables = _FileTables(
                    summary,
                    {c.qualname: c for c in summary.classes},
                    {f.qualname: f for f in summary.functions},
                    {b.name: b for b in summary.instances if b.scope == ""},
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
        same_files = previous is not None and previous._paths == self._paths
        if previous is not None and same_files:
            self._modules = previous._modules  # the same files: the same module names
            self._carry_over(previous, changed)
        else:
            self._modules = {}
            for path in self._paths:
                for name in _module_names(path):
                    self._modules.setdefault(name, []).append(path)
        self._memo: dict[Any, Any] = {}
        self._resolved: dict[tuple[str, Ref], Symbol | None] = {}
        self._relative: dict[tuple[str, str], tuple[str, int] | None] = {}
        self._methods: dict[ClassKey, dict[str, MethodSummary]] = {}
        self._found_methods: dict[tuple[ClassKey, str, ClassKey | None], tuple[ClassKey, MethodSummary] | None] = {}
        self._mros: dict[ClassKey, tuple[tuple[ClassKey, ...], bool]] = {}
        self._is_module: dict[ClassKey, bool] = {}
        self._method_sites: dict[tuple[ClassKey, str], set[CompileSite]] = {}
        self._class_sites: dict[ClassKey, set[CompileSite]] = {}
        self._function_sites: dict[FunctionKey, set[CompileSite]] = {}
        self._bindings: dict[tuple[str, str, str], CompileSite] = {}
        self._link_compile_sites()
        self._site_reach = (
            tuple(self.compile_sites()),
            self._method_sites,
            self._class_sites,
            self._function_sites,
            self._bindings,
        )
        self.sites_version = 0
        """Changes whenever a compile site, or what one reaches, does (between the links of one editor session)."""
        if previous is not None and same_files:
            same = previous._site_reach == self._site_reach
            self.sites_version = previous.sites_version + (0 if same else 1)

    # -- files and classes ---------------------------------------------------------------------------------------
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

    def memo(self, key: Any, compute: Callable[[], _T]) -> _T:
        """Compute a workspace-wide analysis once per link (shared by checks, e.g. the state flow of DL101-DL106)."""
        if key not in self._memo:
            self._memo[key] = compute()
        result: _T = self._memo[key]
        return result

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

    def _carry_over(self, previous: WorkspaceIndex, changed: list[str]) -> None:
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
        summary = self._files[path].summary
        refs: list[Ref | None] = [ref for _, ref in summary.imports]
        refs += [b.callee for b in summary.instances]
        refs += [site.target.ref for site in summary.compile_sites]
        for function in summary.functions:
            refs += [call.ref for call in function.calls]
        for cls in summary.classes:
            refs += cls.bases
            for attr in cls.init_attrs:
                refs += attr.constructors
            for method in cls.methods:
                refs += [call.ref for call in method.calls]
                refs += [event.ctor for event in method.events]
        names = {(ref.dotted, ref.level) for ref in refs if ref is not None and ref.level != LOCAL}  # hash tuples
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
        if len(parts) == 1 and head in tables.module_instances:
            found = self.resolve(path, tables.module_instances[head].callee, depth + 1)
            if found is not None and found.kind == "class":
                return Symbol("instance", found.path, found.qualname)
            return None
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

    # -- class hierarchy -----------------------------------------------------------------------------------------
    def is_module_class(self, key: ClassKey) -> bool:
        """``key`` derives from ``torch.nn.Module`` (through workspace classes, imports, or a known torch class)."""
        known = self._is_module.get(key)
        if known is not None:
            return known
        self._is_module[key] = False  # cycles
        summary = self.class_summary(key)
        result = False
        if summary is not None:
            for base in summary.bases:
                if base is None:
                    continue
                base_key = self.resolve_class(key[0], base)
                if base_key is not None:
                    result = self.is_module_class(base_key)
                elif base.level == 0:
                    result = _is_external_module_base(base.dotted)
                if result:
                    break
        self._is_module[key] = result
        return result

    def mro(self, key: ClassKey) -> tuple[tuple[ClassKey, ...], bool]:
        """The workspace classes of ``key``'s MRO (depth-first, left to right, duplicates dropped), and whether
        every base is known (workspace classes, ``object``, ``torch.nn.Module``): if not, attributes may come from
        code we cannot see."""

        def compute() -> tuple[tuple[ClassKey, ...], bool]:
            order: list[ClassKey] = []
            complete = True
            stack = [key]
            while stack:
                current = stack.pop()
                if current in order:
                    continue
                order.append(current)
                summary = self.class_summary(current)
                if summary is None:
                    continue
                bases: list[ClassKey] = []
                for base in summary.bases:
                    base_key = self.resolve_class(current[0], base)
                    if base_key is not None:
                        bases.append(base_key)
                    elif not _is_plain_base(base):
                        complete = False
                stack.extend(reversed(bases))
            return tuple(order), complete

        known = self._mros.get(key)
        if known is None:
            known = self._mros[key] = compute()
        return known

    def find_method(
        self, key: ClassKey, name: str, after: ClassKey | None = None
    ) -> tuple[ClassKey, MethodSummary] | None:
        """The method ``name`` as ``key``'s instances see it (``after``: start past that class, for ``super()``)."""
        memo_key = (key, name, after)
        if memo_key in self._found_methods:
            return self._found_methods[memo_key]
        order, _ = self.mro(key)
        if after is not None and after in order:
            order = order[order.index(after) + 1 :]
        found: tuple[ClassKey, MethodSummary] | None = None
        for current in order:
            method = self._method_table(current).get(name)
            if method is not None:
                found = current, method
                break
        self._found_methods[memo_key] = found
        return found

    def _method_table(self, key: ClassKey) -> dict[str, MethodSummary]:
        table = self._methods.get(key)
        if table is None:
            summary = self.class_summary(key)
            table = self._methods[key] = {} if summary is None else {m.name: m for m in reversed(summary.methods)}
        return table

    def init_attr(self, key: ClassKey, name: str) -> tuple[ClassKey, AttrInit] | None:
        """The ``__init__`` assignment of ``self.<name>`` that instances of ``key`` run (first in MRO order)."""
        for current in self.mro(key)[0]:
            summary = self.class_summary(current)
            attr = summary.init_attr(name) if summary is not None else None
            if attr is not None:
                return current, attr
        return None

    def submodule_class(self, key: ClassKey, attr: str) -> ClassKey | None:
        """The workspace module class stored in ``self.<attr>`` by ``__init__`` (also inside ModuleList/Sequential)."""

        def compute() -> ClassKey | None:
            found = self.init_attr(key, attr)
            if found is None:
                return None
            owner, init = found
            for constructor in init.constructors:
                sub = self.resolve_class(owner[0], constructor)
                if sub is not None and self.is_module_class(sub):
                    return sub
            return None

        return self.memo(("submodule", key, attr), compute)

    # -- compile sites and reachability --------------------------------------------------------------------------
    def _link_compile_sites(self) -> None:
        reach_cache: dict[_Node, frozenset[_Node]] = {}
        for path, tables in self._files.items():
            for site in tables.summary.compile_sites:
                for name in site.names:
                    self._bindings.setdefault((path, site.scope, name), site)
                for entry in self._entries(path, site):
                    if entry[0] == "method":
                        self._class_sites.setdefault(entry[1], set()).add(site)
                    reached = reach_cache.get(entry)
                    if reached is None:
                        reached = reach_cache[entry] = self._reach(entry)
                    for node in reached:
                        if node[0] == "method":
                            self._method_sites.setdefault((node[1], node[2]), set()).add(site)
                        else:
                            self._function_sites.setdefault(node[1], set()).add(site)
                    for node in reached:
                        if node[0] == "method" and node[2] == "forward":
                            self._class_sites.setdefault(node[1], set()).add(site)

    def compiled_entries(self, path: str, site: CompileSite) -> list[_Node]:
        """What a site compiles, resolved: ``("method", class_key, name)`` or ``("function", function_key)``."""
        return self._entries(path, site)

    def _entries(self, path: str, site: CompileSite) -> list[_Node]:
        target = site.target
        ref = target.ref
        if ref is None:
            return []
        if target.kind == "self_attr":
            owner = self.resolve_class(path, ref)
            if owner is None:
                return []
            if self.find_method(owner, target.member) is not None:  # torch.compile(self.forward)
                return [("method", owner, target.member)]
            sub = self.submodule_class(owner, target.member)
            return [("method", sub, "forward")] if sub is not None else []
        if target.kind == "method":
            key = self.resolve_class(path, ref)
            return [("method", key, target.member)] if key is not None else []
        if target.kind == "instance":
            key = self.resolve_class(path, ref)
            return [self._instance_entry(key)] if key is not None else []
        symbol = self.resolve(path, ref)
        if symbol is None:
            return []
        if symbol.kind == "function":
            return [("function", (symbol.path, symbol.qualname))]
        if symbol.kind == "instance":
            return [self._instance_entry((symbol.path, symbol.qualname))]
        if symbol.kind == "method":
            owner_name, _, member = symbol.qualname.rpartition(".")
            return [("method", (symbol.path, owner_name), member)]
        return []

    def _instance_entry(self, key: ClassKey) -> _Node:
        return ("method", key, "forward" if self.is_module_class(key) else "__call__")

    def _reach(self, entry: _Node) -> frozenset[_Node]:
        """Methods and functions that compiled code entering at ``entry`` may run (Dynamo traces or inlines them)."""
        seen: set[_Node] = set()
        work = [entry]
        while work:
            node = work.pop()
            if node in seen:
                continue
            if node[0] == "function":
                function = self._function(node[1])
                if function is None or function.disabled:
                    continue
                seen.add(node)
                work.extend(self._called_functions(node[1][0], function.calls))
                continue
            key, name = node[1], node[2]
            found = self.find_method(key, name)
            if found is None:
                continue
            owner, method = found
            if method.disabled:
                continue
            seen.add(("method", owner, name))
            work.extend(self.method_successors(key, owner, method))
            work.extend(self._called_functions(owner[0], method.calls))
        return frozenset(seen)

    def method_successors(self, key: ClassKey, owner: ClassKey, method: MethodSummary) -> list[_Node]:
        """Methods run by ``method`` (defined in ``owner``) on an instance of ``key``: ``self.m()`` calls,
        ``super().m()``, property reads, and the ``forward`` of submodules it reads or calls."""
        successors: list[_Node] = []
        for event in method.events:
            if event.kind == "call" and event.detail == "super":
                parent = self.find_method(key, event.attr, after=owner)
                if parent is not None:
                    successors.append(("method", parent[0], event.attr))
            elif event.kind in ("call", "read"):
                target = self.find_method(key, event.attr)
                if target is not None:
                    if event.kind == "call" or target[1].kind == "property":
                        successors.append(("method", key, event.attr))
                    continue
                sub = self.submodule_class(key, event.attr)
                if sub is not None:
                    successors.append(("method", sub, "forward"))
        return successors

    def _called_functions(self, path: str, calls: Iterable[Any]) -> list[_Node]:
        nodes: list[_Node] = []
        for call in calls:
            symbol = self.resolve(path, call.ref)
            if symbol is not None and symbol.kind == "function":
                nodes.append(("function", (symbol.path, symbol.qualname)))
        return nodes

    def _function(self, key: FunctionKey) -> FunctionSummary | None:
        tables = self._files.get(key[0])
        return tables.functions.get(key[1]) if tables is not None else None

    # -- reachability queries ------------------------------------------------------------------------------------
    def sites_for_method(self, key: ClassKey, name: str) -> tuple[CompileSite, ...]:
        """Compile sites whose compiled code runs the method ``name`` *as defined in* class ``key``."""
        return _sorted(self._method_sites.get((key, name)))

    def sites_for_class(self, key: ClassKey) -> tuple[CompileSite, ...]:
        """Compile sites that compile an instance of ``key`` (or a module that contains one as a submodule)."""
        return _sorted(self._class_sites.get(key))

    def sites_for_function(self, key: FunctionKey) -> tuple[CompileSite, ...]:
        return _sorted(self._function_sites.get(key))

    def sites_for_scope(self, path: str, qualname: str) -> tuple[CompileSite, ...]:
        """Compile sites reaching the function or method ``qualname`` of ``path`` (a nested function inherits the
        sites of the function that defines it)."""
        tables = self._files.get(path)
        while tables is not None and qualname:
            owner, _, name = qualname.rpartition(".")
            if owner in tables.classes:
                return self.sites_for_method((path, owner), name)
            sites = self.sites_for_function((path, qualname))
            if sites or not owner:
                return sites
            qualname = owner
        return _NO_SITES

    def compiled_binding(self, path: str, scope: str, name: str) -> CompileSite | None:
        """The compile site if ``name`` (in function ``scope`` of ``path``, or at its module level, or imported
        from another file's module level) is a compiled callable or the instance that was compiled."""
        for key in ((path, scope, name), (path, "", name)):
            site = self._bindings.get(key)
            if site is not None:
                return site
        tables = self._files.get(path)
        imported = tables.imports.get(name) if tables is not None else None
        if imported is None or not imported.dotted:
            return None
        module, _, symbol = imported.dotted.rpartition(".")
        target = self.resolve(path, Ref(module, imported.level)) if module or imported.level else None
        if target is not None and target.kind == "module":
            return self._bindings.get((target.path, "", symbol))
        return None

    # -- findings ------------------------------------------------------------------------------------------------
    def finding(
        self,
        rule: Rule,
        span: Span,
        message: str,
        sites: Iterable[CompileSite],
        *,
        severity: Severity | None = None,
        related: Iterable[Related] = (),
        fixes: Iterable[Fix] = (),
        data: Mapping[str, Any] | None = None,
    ) -> Finding:
        """A finding of ``rule``: ``severity`` (default: the rule's) when reached by a compile site, else a hint."""
        sites = _sorted(sites)
        reached_severity = severity or rule.default_severity
        compiled = tuple(Related(site.span, "compiled here") for site in sites[:5])
        return Finding(
            code=rule.code,
            severity=reached_severity if sites else Severity.HINT,
            span=span,
            message=message,
            related=(*related, *compiled),
            fixes=tuple(fixes),
            data=dict(data or {}),
        )


def _sorted(sites: Iterable[CompileSite] | None) -> tuple[CompileSite, ...]:
    if not sites:
        return _NO_SITES
    return tuple(sorted(sites, key=lambda s: (s.span.path, s.span.line, s.span.column)))


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


def _is_plain_base(base: Ref | None) -> bool:
    """A base that defines no instance attributes a subclass could rely on."""
    if base is None or base.level != 0:
        return False
    dotted = base.dotted
    return dotted in TORCH_MODULE_BASES or dotted in ("object", "abc.ABC") or dotted.startswith("typing.")


def _is_external_module_base(dotted: str) -> bool:
    """A base outside the workspace that is an ``nn.Module``: ``torch.nn.Module``, ``torch.nn.Linear``,
    ``pl.LightningModule``, ``transformers.PreTrainedModel``."""
    last = dotted.rpartition(".")[2]
    if dotted.startswith("torch.nn."):
        return last[:1].isupper() and last != "Parameter"
    return last in _EXTERNAL_MODULE_BASES or (last.endswith("Module") and last != "ModuleType")
