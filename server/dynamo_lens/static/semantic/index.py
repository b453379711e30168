"""The semantic model of a workspace at link time: the one object every check asks.

It is made of four parts, each in its own module, built from the files' summaries only (no AST):

* :class:`~dynamo_lens.static.semantic.workspace.Files`: the files, names across imports, what an edit can affect;
* :class:`~dynamo_lens.static.semantic.classes.Hierarchy`: ``nn.Module`` subclasses, MROs, methods, attributes;
* :class:`~dynamo_lens.static.semantic.evaluate.Evaluator`: what a lowered expression can be;
* :class:`~dynamo_lens.static.semantic.reach.Reach`: what each compile site compiles, what that code runs, and the
  call path to each reached function.

:class:`WorkspaceIndex` exposes their queries under one name and builds findings: a finding about code that a
compile site reaches gets the check's severity and, as related information, each site with the call path to the
flagged code; unreached code gets a hint.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from operator import attrgetter
from typing import Any, TypeVar

from dynamo_lens.codes import Rule
from dynamo_lens.model import Finding, Fix, Related, Severity, Span, gist
from dynamo_lens.static.semantic import settings
from dynamo_lens.static.semantic.classes import Hierarchy
from dynamo_lens.static.semantic.contexts import FORCE_EAGER, SET_STANCE
from dynamo_lens.static.semantic.evaluate import Evaluator, Values
from dynamo_lens.static.semantic.reach import Node, Reach
from dynamo_lens.static.semantic.workspace import ClassKey, Files, FunctionKey, Symbol
from dynamo_lens.static.summary import (
    AttrInit,
    ClassSummary,
    CompileSite,
    DynamoSetting,
    FileSummary,
    MethodSummary,
    Ref,
)
from dynamo_lens.torch_facts import torch_name

__all__ = ["ClassKey", "FunctionKey", "Node", "Symbol", "WorkspaceIndex"]

_T = TypeVar("_T")
MAX_SITES_SHOWN = 5


class WorkspaceIndex:
    def __init__(self, summaries: Sequence[FileSummary], previous: WorkspaceIndex | None = None) -> None:
        """``previous``: the index of an earlier version of the same workspace (the editor links one after each
        edit); see :class:`~dynamo_lens.static.semantic.workspace.Files`. It must not be used again afterwards."""
        self.files: Files = Files(summaries, previous.files if previous is not None else None)
        self.classes = Hierarchy(self.files)
        self.evaluator = Evaluator(self.files, self.classes)
        self.reach = Reach(self.files, self.classes, self.evaluator)
        self._memo: dict[Any, Any] = {}
        self._snapshot = self.reach.snapshot()
        self.sites_version = 0
        """Changes whenever a compile site, or what one reaches, does (between the links of one editor session)."""
        if previous is not None and self.files.same_files:
            same = previous._snapshot == self._snapshot
            self.sites_version = previous.sites_version + (0 if same else 1)

    def memo(self, key: Any, compute: Callable[[], _T]) -> _T:
        """Compute a workspace-wide analysis once per link (shared by checks, e.g. the state flow of DL101-DL106)."""
        if key not in self._memo:
            self._memo[key] = compute()
        result: _T = self._memo[key]
        return result

    # -- files and names -----------------------------------------------------------------------------------------
    @property
    def summaries(self) -> Iterable[FileSummary]:
        return self.files.summaries

    @property
    def paths(self) -> tuple[str, ...]:
        return self.files.paths

    @property
    def affected(self) -> frozenset[str] | None:
        return self.files.affected

    def summary(self, path: str) -> FileSummary | None:
        return self.files.summary(path)

    def compile_sites(self) -> list[CompileSite]:
        return self.files.compile_sites()

    def settings(self, name: str) -> tuple[DynamoSetting, ...]:
        """Every place the workspace sets the Dynamo setting ``name`` (``static/semantic/settings.py``)."""
        table = self.memo("settings", self._settings_by_name)
        return table.get(name, ())

    def _settings_by_name(self) -> dict[str, tuple[DynamoSetting, ...]]:
        table: dict[str, list[DynamoSetting]] = {}
        for summary in self.summaries:
            for setting in summary.settings:
                table.setdefault(setting.name, []).append(setting)
        return {name: tuple(found) for name, found in table.items()}

    def classes_of(self, path: str) -> Iterable[tuple[ClassKey, ClassSummary]]:
        return self.files.classes_of(path)

    def class_summary(self, key: ClassKey) -> ClassSummary | None:
        return self.files.class_summary(key)

    def carried(self, key: Any, path: str, compute: Callable[[], _T]) -> _T:
        return self.files.carried(key, path, compute)

    def track_changes(self) -> None:
        self.files.track_changes()

    def resolve(self, path: str, ref: Ref) -> Symbol | None:
        return self.files.resolve(path, ref)

    def resolve_class(self, path: str, ref: Ref | None) -> ClassKey | None:
        return self.files.resolve_class(path, ref)

    # -- classes -------------------------------------------------------------------------------------------------
    def is_module_class(self, key: ClassKey) -> bool:
        return self.classes.is_module_class(key)

    def mro(self, key: ClassKey) -> tuple[tuple[ClassKey, ...], bool]:
        return self.classes.mro(key)

    def find_method(
        self, key: ClassKey, name: str, after: ClassKey | None = None
    ) -> tuple[ClassKey, MethodSummary] | None:
        return self.classes.find_method(key, name, after)

    def init_attr(self, key: ClassKey, name: str) -> tuple[ClassKey, AttrInit] | None:
        return self.classes.init_attr(key, name)

    def attribute(self, key: ClassKey, name: str) -> Values:
        """What ``self.<name>`` can hold on an instance of ``key``."""
        return self.evaluator.attribute(key, name)

    # -- compile sites and reach ---------------------------------------------------------------------------------
    def compiled_entries(self, site: CompileSite) -> list[Node]:
        return self.reach.compiled_entries(site)

    def compiled_classes(self, site: CompileSite) -> list[ClassKey]:
        """The workspace classes whose instances (or methods) the site compiles; empty when unknown."""
        return self.reach.entry_classes(site)

    def sites_for_method(self, key: ClassKey, name: str) -> tuple[CompileSite, ...]:
        return self.reach.sites_for_method(key, name)

    def sites_for_class(self, key: ClassKey) -> tuple[CompileSite, ...]:
        return self.reach.sites_for_class(key)

    def sites_for_function(self, key: FunctionKey) -> tuple[CompileSite, ...]:
        return self.reach.sites_for_function(key)

    def sites_for_scope(self, path: str, qualname: str) -> tuple[CompileSite, ...]:
        return self.reach.sites_for_scope(path, qualname)

    def compiled_binding(self, path: str, scope: str, name: str) -> CompileSite | None:
        return self.reach.compiled_binding(path, scope, name)

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
        where: Node | None = None,
        guards_on: str = "",
    ) -> Finding:
        """A finding of ``rule``: ``severity`` (default: the rule's) when reached by a compile site, else a hint.
        ``where``: the function or method the flagged code is in (by default the one around ``span``, for the call
        path from each site). ``guards_on``: the family of the guard the cost rests on (``torch_facts.MODULE_STATE``,
        ``GLOBALS``), which a ``guard_filter_fn`` at the sites may drop: then nothing recompiles and the compiled code
        keeps the value it compiled with (a warning), or, for a filter the scan cannot read, the cost is a hint."""
        shown = sorted(set(sites), key=attrgetter("order"))
        if where is None and shown:
            where = self._node_at(span)
        compiled = tuple(Related(site.span, self._compiled_here(site, where)) for site in shown[:MAX_SITES_SHOWN])
        forced = settings.forced_eager(self, shown) if shown and self.settings(settings.STANCE) else None
        if forced is not None:
            # the compiled code runs eagerly: nothing it does is guarded or traced
            severity = Severity.HINT
            stance = f'`{SET_STANCE}("{FORCE_EAGER}")`'
            message += f" (a hint: {stance} runs this compiled code eagerly)"
            related = (*related, Related(forced.span, f"{stance} is called here"))
        elif guards_on and shown:
            found = settings.guard_filter(shown, guards_on)
            message, severity, related = _filtered(found, message, severity, related)
            if found is not None and found.drops:  # nothing recompiles: a higher limit changes nothing
                fixes = [f for f in fixes if not any("recompile_limit" in e.new_text for e in f.edits)]
        return Finding(
            code=rule.code,
            severity=(severity or rule.default_severity) if shown else Severity.HINT,
            span=span,
            message=message,
            related=(*related, *compiled),
            fixes=tuple(fixes),
            data=dict(data or {}),
        )

    def _compiled_here(self, site: CompileSite, where: Node | None) -> str:
        hops = self.reach.path(site, where) if where is not None else []
        if not hops:
            return "compiled here"
        return "compiled here → " + " → ".join(f"`{hop}`" if hop != "…" else hop for hop in hops)

    def _node_at(self, span: Span) -> Node | None:
        """The innermost function or method of the workspace around ``span``."""
        summary = self.files.summary(span.path)
        if summary is None:
            return None
        best: tuple[int, Node] | None = None
        for function in summary.functions:
            if function.span.line <= span.line and (best is None or function.span.line > best[0]):
                best = (function.span.line, ("function", (span.path, function.qualname)))
        for cls in summary.classes:
            for method in cls.methods:
                if method.span.line <= span.line and (best is None or method.span.line > best[0]):
                    best = (method.span.line, ("method", (span.path, cls.qualname), method.name))
        return best[1] if best is not None else None


def _filtered(
    found: settings.GuardFilter | None, message: str, severity: Severity | None, related: Iterable[Related]
) -> tuple[str, Severity | None, tuple[Related, ...]]:
    """A finding's message, severity and related locations under the ``guard_filter_fn`` ``found`` (None: none)."""
    if found is None:
        return message, severity, tuple(related)
    related = (*related, found.related)
    if not found.drops:
        return f"{message} (a hint: `guard_filter_fn={found.name}` may drop this guard)", Severity.HINT, related
    rewritten = (
        f"{gist(message)}: `guard_filter_fn={found.name.rpartition('.')[2]}` drops that guard ({torch_name()}), so "
        "nothing recompiles and the compiled code keeps using the value it was compiled with: a silent wrong result"
    )
    if severity is Severity.HINT:  # a hint for its own reason, which it keeps
        reason = message.rfind(" (a hint:")
        return rewritten + (message[reason:] if reason >= 0 else ""), severity, related
    return rewritten, Severity.WARNING, related
