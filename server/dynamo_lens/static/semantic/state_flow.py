"""The state flow shared by DL101-DL106: which ``self.<attr>`` values one compiled call carries to the next.

For every class that Dynamo may trace (each ``nn.Module`` subclass from its ``forward``, and each class whose method
or instance a compile site compiles, from that entry), the ``self.<attr>`` events of the entry method are laid out in
evaluation order, inlining ``self.m()`` calls, properties and ``super().m()`` through the class's MRO (not methods
decorated with ``torch.compiler.disable``, which Dynamo never traces). Then, per attribute:

* a *carried read* is a read (or an ``op=``, a container mutation, an in-place call: they all read the attribute)
  that no write precedes on its own path through the call (a write in an ``if`` body covers the reads after it in
  that body, not those after the ``if``). Dynamo guards what the call read, so a carried read installs a guard on
  the value the previous call left behind.
* a *change* is a write, an ``op=`` or a container mutation.

An attribute matters when it has both (DESIGN.md §3: only state carried across calls costs a recompile). Whether it
costs one extra compile or one per call depends on the kind of value; the per-code check modules decide that.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from dynamo_lens.model import Finding, Related, Severity, Span
from dynamo_lens.static.semantic import flags, settings
from dynamo_lens.static.semantic.flags import undecided_flag
from dynamo_lens.static.semantic.index import ClassKey, WorkspaceIndex
from dynamo_lens.static.semantic.loop_breaks import OpaqueCall, eager_if_breaks
from dynamo_lens.static.summary import AttrInit, AttrKind, ClassSummary, CompileSite, MethodSummary, StateEvent

_MAX_INLINE_DEPTH = 6
_Inlined = tuple[ClassKey, str, Span]
"""A call that inlined a method into the laid-out call: the class defining the calling method, its name, the call."""
READING = frozenset({"read", "aug", "mutate", "inplace", "call"})
CHANGING = frozenset({"write", "aug", "mutate"})


@dataclass(frozen=True, slots=True)
class Access:
    """One event of the laid-out call, with the method it comes from and what precedes it."""

    event: StateEvent
    owner: ClassKey
    """The class that defines the method containing the event."""
    method: str
    path: tuple[tuple[int, int], ...]
    """The branch bodies enclosing the event in the laid-out call, including those around each inlined ``self.m()``
    (pairs of inlining instance and body id)."""
    fresh: bool
    """A write of the same attribute precedes it on its own path: it reads this call's value, no guard."""
    inlined_at: tuple[_Inlined, ...] = ()
    """The calls that inlined its method, outermost first: (defining class, method, span of the call)."""

    @property
    def definite(self) -> bool:
        """The event runs on every path of the whole call."""
        return not self.path


@dataclass(slots=True)
class AttrFlow:
    """Everything one traced call does to one attribute of an instance of ``cls``."""

    cls: ClassKey
    attr: str
    accesses: list[Access] = field(default_factory=list)
    init: tuple[ClassKey, AttrInit] | None = None

    @property
    def carried_reads(self) -> list[Access]:
        return [a for a in self.accesses if a.event.kind in READING and not a.fresh]

    @property
    def changes(self) -> list[Access]:
        return [a for a in self.accesses if a.event.kind in CHANGING]

    @property
    def carried(self) -> bool:
        """The call reads a value an earlier call may have changed, and changes it."""
        return bool(self.changes) and bool(self.carried_reads)

    @property
    def init_kind(self) -> AttrKind | None:
        return self.init[1].kind if self.init is not None else None


@dataclass(slots=True)
class ClassFlow:
    """The laid-out call of one entry method of one class."""

    cls: ClassKey
    entry: str
    accesses: list[Access]
    """Events on the attributes the call changes, in evaluation order (empty when it changes none)."""
    methods: set[tuple[ClassKey, str]]
    """Every (defining class, method) the call runs."""
    attrs: dict[str, AttrFlow]
    derived: dict[str, Any] = field(default_factory=dict)
    """What checks worked out from this flow alone (and from what its class's file reaches). A flow is carried
    from one link to the next while nothing it reaches changed (:meth:`WorkspaceIndex.carried`), and so is this."""


def class_flows(index: WorkspaceIndex) -> list[ClassFlow]:
    """The flows of every traced class entry in the workspace (computed once per link)."""
    return index.memo("state_flow.class_flows", lambda: _compute(index))


def stateful_flows(index: WorkspaceIndex) -> list[ClassFlow]:
    """The flows that change some attribute (most traced calls change none: they have nothing to report)."""
    return index.memo("state_flow.stateful_flows", lambda: [flow for flow in class_flows(index) if flow.accesses])


def _compute(index: WorkspaceIndex) -> list[ClassFlow]:
    """Entries in a fixed order: every module class's ``forward`` (file by file, with the other methods compile
    sites compile on it), then the classes only compile sites name. A file's forward flows are carried from one
    link to the next while nothing they can reach has changed."""
    compiled: dict[ClassKey, set[str]] = {}
    for summary in index.summaries:
        for site in summary.compile_sites:
            for entry in index.compiled_entries(site):
                if entry[0] == "method":
                    compiled.setdefault(entry[1], set()).add(entry[2])
    for key, names in _helper_entries(index).items():
        compiled.setdefault(key, set()).update(names)
    flows: list[ClassFlow] = []
    for path in index.paths:
        for key, forward in index.carried(("state_flow.forwards", path), path, partial(_forward_flows, index, path)):
            if key not in compiled:
                if forward is not None:
                    flows.append(forward)
                continue
            for name in sorted({"forward", *compiled.pop(key)}):
                flow = forward if name == "forward" else _lay_out(index, key, name)
                if flow is not None:
                    flows.append(flow)
    for key, names in compiled.items():
        for name in sorted(names):
            flow = _lay_out(index, key, name)
            if flow is not None:
                flows.append(flow)
    return flows


def _helper_entries(index: WorkspaceIndex) -> dict[ClassKey, set[str]]:
    """The methods of classes that are not modules which compiled code calls from outside them (a rotary-table
    helper object's ``__call__`` called from a compiled ``forward``): Dynamo traces them and guards what they read of
    their instance like a module's attributes. Methods they only reach through ``self.m()`` are laid out inside."""
    reached: dict[ClassKey, set[str]] = {}
    for summary in index.summaries:
        for site in summary.compile_sites:
            for node in index.reach.reached_nodes(site):
                if node[0] == "method" and not index.is_module_class(node[1]):
                    reached.setdefault(node[1], set()).add(node[2])
    entries: dict[ClassKey, set[str]] = {}
    for key, names in reached.items():
        inner = {m for name in names for (_, m) in closure(index, key, name)[0] if m != name}
        entries[key] = names - inner
    return entries


def _forward_flows(index: WorkspaceIndex, path: str) -> list[tuple[ClassKey, ClassFlow | None]]:
    """The ``forward`` flow of each ``nn.Module`` class of ``path`` that has one, in the file's order."""
    return [
        (key, _lay_out(index, key, "forward"))
        for key, _ in index.classes_of(path)
        if index.is_module_class(key) and index.find_method(key, "forward") is not None
    ]


@dataclass(frozen=True, slots=True)
class _MethodFacts:
    """What one method body does, summarised once per link (a method is shared by every subclass's flow)."""

    calls: tuple[tuple[str, bool], ...]
    """``self.m()`` calls: (name, through ``super()``)."""
    reads: frozenset[str]
    changed: frozenset[str]
    """Attributes the method writes, augments or mutates (``""`` for a ``setattr`` with a computed name)."""


def _facts(index: WorkspaceIndex, method: MethodSummary) -> _MethodFacts:
    def compute() -> _MethodFacts:
        events = method.events
        return _MethodFacts(
            calls=tuple((e.attr, e.detail == "super") for e in events if e.kind == "call"),
            reads=frozenset(e.attr for e in events if e.kind == "read"),
            changed=frozenset(e.attr for e in events if e.kind in CHANGING or e.kind == "setattr"),
        )

    return index.memo(("state_flow.facts", id(method)), compute)


def closure(index: WorkspaceIndex, cls: ClassKey, entry: str) -> tuple[set[tuple[ClassKey, str]], set[str]]:
    """The methods a call of ``entry`` on an instance of ``cls`` runs (through ``self.m()``, ``super().m()`` and
    properties, not ``torch.compiler.disable``d ones), and the attributes they change."""
    methods: set[tuple[ClassKey, str]] = set()
    changed: set[str] = set()
    pending: list[tuple[str, ClassKey | None]] = [(entry, None)]
    while pending:
        name, after = pending.pop()
        found = index.find_method(cls, name, after)
        if found is None or found[1].disabled or (found[0], name) in methods:
            continue
        owner, method = found
        methods.add((owner, name))
        facts = _facts(index, method)
        changed |= facts.changed
        pending.extend((callee, owner if through_super else None) for callee, through_super in facts.calls)
        for attr in facts.reads:
            target = index.find_method(cls, attr)
            if target is not None and target[1].kind == "property":
                pending.append((attr, None))
    return methods, changed


def _lay_out(index: WorkspaceIndex, cls: ClassKey, entry: str) -> ClassFlow | None:
    methods, changed = closure(index, cls, entry)
    if not methods:
        return None
    if not changed:  # nothing carried from one call to the next: no event needs laying out
        return ClassFlow(cls, entry, [], methods, {})
    raw: list[tuple[StateEvent, ClassKey, str, tuple[tuple[int, int], ...], tuple[_Inlined, ...]]] = []
    instances = itertools.count()

    def inline(
        name: str,
        prefix: tuple[tuple[int, int], ...],
        chain: tuple[_Inlined, ...],
        after: ClassKey | None = None,
    ) -> None:
        found = index.find_method(cls, name, after)
        if found is None:
            return
        owner, method = found
        if method.disabled or len(chain) > _MAX_INLINE_DEPTH or (owner, name) in stack:
            return
        stack.append((owner, name))
        instance = next(instances)
        for event in method.events:
            # Paths make a helper's early return harmless: on the path where the caller goes on, the callee's
            # unconditional writes ran (Dynamo traces one path at a time).
            path = prefix + tuple((instance, body) for body in event.branch)
            if event.kind == "call" and event.detail == "super":
                inline(event.attr, path, (*chain, (owner, name, event.span)), after=owner)
                continue
            if event.kind in ("call", "read"):
                target = index.find_method(cls, event.attr)
                if target is not None and (event.kind == "call" or target[1].kind == "property"):
                    inline(event.attr, path, (*chain, (owner, name, event.span)))
                    continue
            if event.attr in changed:
                raw.append((event, owner, name, path, chain))
        stack.pop()

    stack: list[tuple[ClassKey, str]] = []
    inline(entry, (), ())
    accesses: list[Access] = []
    writes: dict[str, list[tuple[tuple[int, int], ...]]] = {}
    attrs: dict[str, AttrFlow] = {}
    for event, owner, method, path, chain in raw:
        earlier = writes.get(event.attr, ())
        fresh = any(path[: len(w)] == w for w in earlier)
        access = Access(event, owner, method, path, fresh, chain)
        accesses.append(access)
        if not event.attr:
            continue
        if event.kind in ("write", "aug") and event.detail != "del":
            writes.setdefault(event.attr, []).append(path)
        flow = attrs.get(event.attr)
        if flow is None:
            flow = attrs[event.attr] = AttrFlow(cls, event.attr, init=index.init_attr(cls, event.attr))
        flow.accesses.append(access)
    return ClassFlow(cls, entry, accesses, methods, attrs)


# -- helpers the DL10x checks share ---------------------------------------------------------------------------


def written_kinds(
    index: WorkspaceIndex, cls: ClassKey, attr: str, skip: Callable[[ClassKey, str], bool] | None = None
) -> set[AttrKind]:
    """The kinds of value the methods along ``cls``'s MRO assign to ``self.<attr>`` (``del`` aside), leaving out
    the methods ``skip(owner, name)`` names."""
    return {
        event.value_kind
        for owner in index.mro(cls)[0]
        if (summary := index.class_summary(owner)) is not None
        for method in summary.methods
        if skip is None or not skip(owner, method.name)
        for event in method.events
        if event.attr == attr and event.kind == "write" and event.detail != "del"
    }


def set_at_construction(index: WorkspaceIndex, cls: ClassKey, attr: str) -> bool:
    """Building an instance of ``cls`` may leave ``self.<attr>`` holding something other than ``None``: the
    ``__init__`` that runs, the ones its ``super().__init__()`` calls reach, or a method they call on ``self``
    (``self.reset_parameters()``) assigns it a value that is not ``None``."""
    pending: list[tuple[str, ClassKey | None]] = [("__init__", None)]
    seen: set[tuple[ClassKey, str]] = set()
    while pending:
        name, after = pending.pop()
        found = index.find_method(cls, name, after)
        if found is None or (found[0], name) in seen:
            continue
        seen.add((found[0], name))
        for event in found[1].events:
            if event.attr == attr and event.kind == "write" and event.detail != "del" and event.value_kind != "none":
                return True
            if event.kind == "call":
                pending.append((event.attr, found[0] if event.detail == "super" else None))
    return False


def sites_of(index: WorkspaceIndex, accesses: Iterable[Access]) -> set[CompileSite]:
    """Compile sites that reach the methods containing ``accesses`` and can run their compiled code again on the
    same object: what one call leaves in ``self`` matters only to a later call. Not a site that calls it once on an
    object its function builds (``module = Net()``; ``torch.compile(module)(x)``: :attr:`CompileSite.called_once`)."""
    sites: set[CompileSite] = set()
    for access in accesses:
        found = index.sites_for_method(access.owner, access.method)
        sites.update(site for site in found if not _runs_once(index, site))
    return sites


def _runs_once(index: WorkspaceIndex, site: CompileSite) -> bool:
    return site.called_once and flags.built_here(index, site.target, site.span.path)


def where(access: Access) -> str:
    """``forward`` or ``_bump`` (called from ``forward``), for messages."""
    return f"`{access.method}`"


def init_related(flow: AttrFlow) -> tuple[Related, ...]:
    if flow.init is None:
        return ()
    init = flow.init[1]
    return (Related(init.span, f"`self.{flow.attr}` starts as `{init.value_text or init.kind}` in `__init__`"),)


def read_related(flow: AttrFlow, at: Span) -> tuple[Related, ...]:
    """The first carried read, unless it is the finding's own span: the guard is installed there."""
    for access in flow.carried_reads:
        if access.event.span != at:
            return (Related(access.event.span, f"`self.{flow.attr}` is read here: Dynamo guards its value"),)
        return ()
    return ()


def judge_attrs(
    index: WorkspaceIndex, judge: Callable[[WorkspaceIndex, ClassFlow, AttrFlow], Iterable[Finding]]
) -> list[Finding]:
    """What ``judge`` finds on each attribute of each class flow, one finding per place (see ``keep_loudest``). A
    finding at a statement that runs only under a configuration flag no known instance sets (``if
    self.cache_labels:``) is a hint that says so."""
    return keep_loudest(
        _in_eager_frames(index, flow, attr, _under_flags(index, flow, attr, f))
        for flow in stateful_flows(index)
        for attr in flow.attrs.values()
        for f in judge(index, flow, attr)
    )


def _under_flags(index: WorkspaceIndex, flow: ClassFlow, attr: AttrFlow, finding: Finding) -> Finding:
    if finding.severity is Severity.HINT:
        return finding
    for access in attr.accesses:
        if access.event.span == finding.span and access.event.requires:
            undecided = undecided_flag(index, flow.cls, access.event.requires)
            if undecided is not None:
                return replace(finding, severity=Severity.HINT, message=finding.message + undecided)
    return finding


def _in_eager_frames(index: WorkspaceIndex, flow: ClassFlow, attr: AttrFlow, finding: Finding) -> Finding:
    """A finding whose every carried read sits where Dynamo gives up on the method if an opaque call in a loop
    breaks the graph (``loop_breaks``), or in a method called from there (which then runs as a frame of its own,
    guarded only if it compiles anything), is a hint that names that call."""
    if finding.severity is Severity.HINT or not attr.carried_reads:
        return finding
    first: tuple[str, OpaqueCall] | None = None
    for read in attr.carried_reads:
        found = _eager_if_breaks(index, flow.cls, read)
        if found is None:
            return finding
        first = first or found
    assert first is not None
    method, call = first
    note = (
        f" (a hint: `{method}` calls `{call.text}` in a loop at line {call.call.span.line}, which the scan cannot see "
        f"into; if it breaks the graph, Dynamo gives up on `{method}`, which runs eagerly, and whether compiled code "
        f"still reads `self.{attr.attr}` cannot be told)"
    )
    return replace(finding, severity=Severity.HINT, message=finding.message + note)


def _eager_if_breaks(index: WorkspaceIndex, cls: ClassKey, read: Access) -> tuple[str, OpaqueCall] | None:
    """The method and opaque call that make ``read`` run outside Dynamo's trace if the call breaks: in the read's
    own method, or in a method that inlined it, at the call that did."""
    for owner, name, at in ((read.owner, read.method, read.event.span), *reversed(read.inlined_at)):
        method = method_summary(index, owner, name)
        found = eager_if_breaks(index, cls, method, at) if method is not None else None
        if found is not None:
            return name, found
    return None


def keep_loudest(findings: Iterable[Finding]) -> list[Finding]:
    """One finding per (code, span): a hazard in a base class seen from several subclasses, or from a compiled
    subclass and from the uncompiled base, is reported once, at its loudest."""
    best: dict[tuple[str, Span], Finding] = {}
    for finding in findings:
        key = (finding.code, finding.span)
        current = best.get(key)
        if current is None or finding.severity.rank < current.severity.rank:
            best[key] = finding
    return list(best.values())


def method_summary(index: WorkspaceIndex, owner: ClassKey, name: str) -> MethodSummary | None:
    summary = index.class_summary(owner)
    return summary.method(name) if summary is not None else None


def bounds_a_loop(index: WorkspaceIndex, cls: ClassKey, attr: str, member: bool = False) -> bool:
    """A method of ``cls`` (along its MRO) reads ``self.<attr>`` (``member``: ``self.<any>.<attr>``) in the
    arguments of ``range()``: Dynamo keeps such an int specialised even where it makes other ints dynamic (measured
    on 2.6.0 and 2.7.1: a module counter used as a loop bound compiled 8 times with the limit, used in arithmetic
    twice)."""
    return any(
        bound.endswith(f".{attr}") if member else bound == attr
        for owner in index.mro(cls)[0]
        if (summary := index.class_summary(owner)) is not None
        for method in summary.methods
        for bound in method.range_bounds
    )


def ints_made_dynamic(
    index: WorkspaceIndex,
    sites: Collection[CompileSite],
    classes: Sequence[ClassKey],
    attr: str,
    entry: str = "",
    member: bool = False,
) -> bool:
    """Whether the torch described makes the int ``self.<attr>`` of instances of ``classes`` dynamic after one
    recompile in the sites' frames (``settings.made_dynamic_as_input``; ``entry``: the method of ``classes[0]`` where
    it is read, else the sites' own modules). Not when their code uses it as a ``range()`` bound (``member``: read as
    ``self.<any>.<attr>``), nor under a ``set_stance`` that acts at the first recompile instead."""
    if settings.recompile_limit(index, sites).stance or any(bounds_a_loop(index, c, attr, member) for c in classes):
        return False
    if not entry:
        return settings.made_dynamic_as_input(index, sites)
    found = index.find_method(classes[0], entry)
    return found is not None and settings.made_dynamic_as_input(index, sites, ("method", found[0], entry))


def unseen_summaries(
    index: WorkspaceIndex, key: ClassKey, seen: set[ClassKey]
) -> Iterator[tuple[ClassKey, ClassSummary]]:
    """The workspace classes along ``key``'s MRO with their summaries; nothing when ``key`` is already in ``seen``
    (which it joins), so that a walk from a class into the classes of its submodules ends on cycles."""
    if key in seen:
        return
    seen.add(key)
    for owner in index.mro(key)[0]:
        summary = index.class_summary(owner)
        if summary is not None:
            yield owner, summary
