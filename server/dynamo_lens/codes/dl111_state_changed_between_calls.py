"""DL111 · state-changed-between-calls

## What it does
Flags an assignment to an attribute of a compiled module made *outside* the compiled code, between calls:
`model.scale = 0.5`, `model.k = step`, `compiled.mode = "fast"`. It reports only attributes that the module's
`forward` (or a method reachable from it) reads, and grades the finding by the kind of value assigned. A call of a
method that changes its own object's attribute counts too, when compiled code reads that attribute through the module
holding the object: `model.rope.stretch(1.5)` multiplying `self.scale`, read as `self.rope.scale` in `forward`, or
through a parameter or local holding it (`args.yarn.attn_scale`, or `yarn = args.yarn` then `yarn.attn_scale`: the
object handed to a submodule in a dataclass of arguments, guarded as `args.yarn.attn_scale`; measured under
`dynamic=False`: 3 compiles for two changes, as when it is read through the module); and so does an assignment to it
(`model.clock.ticks = step`, measured: 8 compiles and the limit). A setter that stores its argument
(`def set_window(self, w): self.window = w`) takes the kind of what the call passes: `model.set_window(step)` in the
training loop is an int that changes every step (measured: 8 compiles and the limit), `model.set_window(3)` on every
iteration never changes it (1 compile: nothing reported).

## Why it matters
On torch 2.13 Dynamo treats every `nn.Module` as unspecialized and guards each Python scalar attribute that the
compiled code reads on its value (`EQUALS_MATCH self.k == 3`). Changing the attribute from outside fails that guard
on the next call. Measured on torch 2.13 (`backend="eager"`, 12 calls, a new value before each call):

* `int`: one compile per distinct value, never made dynamic: 8 compiles, then `recompile_limit` (8) is hit and the
  module silently runs in eager mode from then on.
* `str`: the same, one compile per value (12 distinct strings → 8 compiles + limit); two alternating strings → 2.
* `float`: one recompile, after which Dynamo makes the value dynamic (2 compiles in all).
* `bool`: one compiled entry per value (one extra compile for the other value).
* An attribute the compiled code never reads is not guarded: changing it costs nothing (1 compile).

Setting the attribute through the compiled wrapper (`compiled.k = 3`) writes the original module's attribute and
behaves the same (8 compiles + limit for an int).

Older torch differs, and the message follows the torch you run (measured on 2.5.1, 2.6.0 and 2.7.1): there an int
attribute of the module a compiled frame runs on is made dynamic after one recompile (2 compiles in all) unless the
code uses it as a `range()` bound; floats are static on 2.5 whatever `dynamic=` says, and made dynamic after one
recompile whatever it says on 2.6 and 2.7; the limit is called `cache_size_limit` before 2.7.

## Example
```python
model = Model()                     # forward reads self.k
compiled = torch.compile(model)
for step in range(1000):
    model.k = step % 16             # DL111: a compile per value, eager after 8
    compiled(x)
```

## Use instead
Keep values that change at run time in a tensor buffer updated in place (`model.k_t.fill_(step % 16)`): tensors
are guarded on metadata, not on values. Or pass the value as an argument of `forward` (an int argument becomes
dynamic after one recompile), or set `torch._dynamo.config.allow_unspec_int_on_nn_module = True`.

## Settings
Measured on 2.13 (`backend="eager"`, 12 calls): with `torch._dynamo.config.allow_unspec_int_on_nn_module = True` in
force for the compile site, an int set between calls recompiles once and is then dynamic (2 compiles, `info`, the
setting shown as related information). Compiled with `dynamic=False`, a float set to a new value each call is never
made dynamic (8 compiles and the limit: warning), nor under the project's `automatic_dynamic_shapes = False` (unless
the site says `dynamic=True`) or `specialize_float = True` (whatever the site says; measured: 8 and the limit);
compiled with `dynamic=False`, a float changed only under a condition (a schedule that stretches a scale a few
times) compiles once per value it is set to (measured: 3 compiles for two changes: `info`, since how often the
condition holds is the program's business); compiled with `dynamic=True` it is symbolic from the first call (1
compile: no finding).

A `guard_filter_fn` in the site's `options=` (torch 2.8+) decides whether the guard exists at all:
`torch.compiler.skip_guard_on_all_nn_modules_unsafe` and `keep_tensor_guards_unsafe` drop the guards on module
attributes, so nothing recompiles and the compiled module keeps using the value it was compiled with (measured: 1
compile for 12 values, each later call computed with the first): a *warning* about a silent wrong result.
`skip_guard_on_inbuilt_nn_modules_unsafe` drops only the guards on torch.nn's own modules (measured: 8 compiles and
the limit, as without it); a filter of the project's own (a lambda) makes the finding a hint.

## Known limitations
The receiver is a name bound in the same file to a module instance that is compiled (`torch.compile(model)`,
`model.compile()`) or to the compiled wrapper, or any expression the workspace model resolves to one: an attribute
of an object that holds it (`self.model.split = True` in a trainer's method), a parameter its callers pass it to.
Only changes made after the compiled module already ran are reported: earlier in the same function or in a loop of
it that calls it, or, for a change made in another function, where a caller (up to two levels up) calls that
function after a compiled call or in a loop that makes one. Configuring attributes before the first call costs
nothing. One finding per attribute of what holds the compiled state (the first change after a compiled call).
Whether compiled code reads the attribute is known only for classes defined in the workspace; attributes of other
classes (`nn.Linear`) are not reported. Values are classified from the assigned expression (literals, comparisons,
arithmetic on loop counters, `int()`/`float()`/`str()`); otherwise the kind `__init__` gave the attribute is used. A
change made once (not in a loop) is reported at `info`: one recompile.

## Fix safety
No automatic fix: turning an attribute into a buffer changes its type for every other reader.

## References
- PyTorch, "Dealing with recompilations": https://docs.pytorch.org/docs/stable/compile/programming_model.recompilation.html
- `torch/_dynamo/config.py`: `allow_unspec_int_on_nn_module`, `recompile_limit`
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from operator import attrgetter

from dynamo_lens.codes import Check, Rule
from dynamo_lens.model import Finding, Related, Severity, Span
from dynamo_lens.static.context import FileContext
from dynamo_lens.static.semantic import settings
from dynamo_lens.static.semantic.evaluate import Instance, MethodValue, Value
from dynamo_lens.static.semantic.index import ClassKey, WorkspaceIndex
from dynamo_lens.static.semantic.program import callers_of, calls, compiled_callees
from dynamo_lens.static.semantic.state_flow import closure, ints_made_dynamic, written_kinds
from dynamo_lens.static.semantic.usage import (
    compiled_code_reads,
    loop_scalars,
    scope_key,
    statements_changing,
    usage,
    value_kind,
)
from dynamo_lens.static.semantic.values import SCALAR_KINDS
from dynamo_lens.static.summary import AttrWrite, CallSite, Candidate, CompileSite, MethodSummary
from dynamo_lens.torch_facts import INT_MODULE_ATTR_STATIC_SINCE, MODULE_STATE, torch_name

RULE = Rule(
    code="DL111",
    name="state-changed-between-calls",
    summary="A Python scalar attribute that compiled code reads is changed between calls",
    default_severity=Severity.WARNING,
    source="static",
    docs_url="https://docs.pytorch.org/docs/stable/compile/programming_model.recompilation.html",
    fix_title="Keep the value in a tensor buffer updated in place",
    confirmed_by=("DL501", "DL502"),
)


IGNORED = frozenset({"forward", "training"})


@dataclass(frozen=True, slots=True)
class StateChange(Candidate):
    receiver: str
    attr: str
    kind: str
    varies: bool
    site: CompileSite
    earlier: Span
    setter: str = ""
    """The method whose call makes the change (``apply`` in ``model.yarn.apply(...)``), ``""`` for an assignment."""
    read: Related | None = None
    """Where compiled code reads the attribute, when it reads it through another object (``self.yarn.attn_scale``
    in the compiled model's forward); None: a method of the attribute's own class reads it."""


def collect(ctx: FileContext) -> Iterator[StateChange]:
    table = usage(ctx)
    if not table.handles:
        return
    for at in statements_changing(ctx, {name for _, name in table.handles}, (ast.Assign, ast.AugAssign)):
        node = at.node
        assert isinstance(node, ast.Assign | ast.AugAssign)
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            if not isinstance(target, ast.Attribute) or not isinstance(target.value, ast.Name):
                continue
            if target.attr in IGNORED or target.attr.startswith("__"):
                continue
            handle = table.handle(scope_key(at.scope), target.value.id)
            if handle is None or not handle.module:
                continue
            earlier = table.ran_before({handle.site}, at)
            if earlier is None:
                continue  # configuration before the first compiled call costs nothing
            loops = table.enclosing_loops(at)
            kind, varies = value_kind(node.value, loop_scalars(loops))
            if isinstance(node, ast.AugAssign):
                varies = bool(loops)
            yield StateChange(
                RULE.code,
                ctx.span(target),
                target.value.id,
                target.attr,
                kind,
                varies and bool(loops),
                handle.site,
                ctx.span(earlier.call),
            )


def judge(candidate: StateChange, index: WorkspaceIndex) -> Iterator[Finding]:
    if candidate.read is None:
        reads = [compiled_code_reads(index, key, candidate.attr) for key in index.compiled_classes(candidate.site)]
        reads = [read for read in reads if read is not False]
        if not reads:
            return  # no class we know is compiled there reads it: not guarded, or we cannot tell (silent)
        init = next((read for read in reads if not isinstance(read, bool)), None)
    else:
        init = None
    kind = candidate.kind if candidate.kind != "unknown" else (init.kind if init is not None else "unknown")
    if kind not in SCALAR_KINDS:
        return
    setter = f", set by `{candidate.setter}()`" if candidate.setter else ""
    name = f"`{candidate.receiver}.{candidate.attr}`"
    sites = (candidate.site,)
    unspec = settings.in_force(index, "allow_unspec_int_on_nn_module", "True", sites) if kind == "int" else None
    floats = settings.float_policy(index, sites) if kind == "float" else settings.FloatPolicy()
    limit = settings.recompile_limit(index, sites)
    setting: Related | None = None
    if kind == "int" and candidate.varies and unspec is not None:
        severity = Severity.INFO
        message = (
            f"{name} (int{setter}) changes between calls of the compiled module, whose code reads it: under "
            f"`allow_unspec_int_on_nn_module = True` {torch_name()} recompiles once, then treats the int as dynamic "
            "(2 compiles in all)"
        )
        setting = settings.set_here(unspec)
    elif (
        kind == "int"
        and candidate.varies
        and ints_made_dynamic(
            # the compiled module's own attribute, or one its code reads through another object (`self.clock.ticks`)
            index,
            sites,
            index.compiled_classes(candidate.site),
            candidate.attr,
            member=candidate.read is not None,
        )
    ):
        severity = Severity.INFO
        message = (
            f"{name} (int{setter}) changes between calls of the compiled module, whose code reads it: "
            f"{torch_name()} recompiles once, then treats the int as dynamic (before torch "
            f"{INT_MODULE_ATTR_STATIC_SINCE} an int attribute of a compiled module is made dynamic automatically): 2 "
            "compiles in all"
        )
    elif kind in ("int", "str") and candidate.varies:
        severity = RULE.default_severity
        message = (
            f"{name} ({kind}{setter}) changes between calls of the compiled module, whose code reads it: "
            f"{torch_name()} guards it by value (`EQUALS_MATCH`) and never makes {kind} module attributes dynamic, so "
            f"each distinct value compiles once more; {limit.past('the module runs eagerly')}"
        )
    elif kind in ("int", "str"):
        severity = Severity.INFO
        message = (
            f"{name} ({kind}{setter}) is changed after the compiled module ran, and its code reads it: {torch_name()} "
            "guards it by value, so the next call compiles again (one recompile per distinct value)"
        )
    elif kind == "float" and floats.symbolic:
        return  # measured: under dynamic=True the float is symbolic from the first call (1 compile)
    elif kind == "float" and floats.static and candidate.varies:
        severity = RULE.default_severity
        message = (
            f"{name} (float{setter}) changes between calls of the compiled module, whose code reads it: under "
            f"{floats.static} {torch_name()} never makes the float dynamic, so each distinct value compiles once more; "
            f"{limit.past('the module runs eagerly')}"
        )
        setting = floats.related
    elif kind == "float" and floats.static:
        severity = Severity.INFO
        message = (
            f"{name} (float{setter}) is changed after the compiled module ran, and its code reads it: under "
            f"{floats.static} {torch_name()} never makes the float dynamic, so each distinct value it is set to "
            "compiles once more"
        )
        setting = floats.related
    elif kind == "float":
        severity = Severity.INFO
        message = (
            f"{name} (float{setter}) changes between calls of the compiled module, whose code reads it: {torch_name()} "
            "recompiles once, then treats the float as dynamic (2 compiles in all)"
        )
    else:
        severity = Severity.INFO
        message = (
            f"{name} (bool{setter}) changes between calls of the compiled module, whose code reads it: {torch_name()} "
            "keeps one compiled entry per value, so the other value compiles once more"
        )
    related = [Related(candidate.earlier, "the compiled module ran here before")]
    if candidate.read is not None:
        related.append(candidate.read)
    if init is not None:
        related.append(Related(init.span, f"`{candidate.attr}` set in __init__"))
    if setting is not None:
        related.append(setting)
    if severity is RULE.default_severity:
        related.extend(limit.related)
    yield index.finding(
        RULE, candidate.span, message, (candidate.site,), severity=severity, related=related, guards_on=MODULE_STATE
    )


def judge_workspace(index: WorkspaceIndex) -> Iterator[Finding]:
    """Writes through receivers one file cannot follow: ``self.model.split_embed = True`` in a trainer whose
    ``self.model`` is the compiled model, ``model.k = 3`` on a parameter that callers pass the compiled module. One
    finding per attribute of what holds the compiled state, at the first write made after compiled code ran."""
    holders = index.reach.state_holders()
    if not holders:
        return
    found: dict[tuple[tuple[CompileSite, ...], str], StateChange] = {}
    for summary in index.summaries:
        path = summary.path
        for write in summary.writes:
            if write.attr in IGNORED:
                continue
            if write.receiver_text.isidentifier() and index.compiled_binding(path, write.function, write.receiver_text):
                continue  # a name the file binds to compiled code: `collect` judges it with the file's own order
            if write.function and index.sites_for_scope(path, write.function):
                continue  # compiled code makes the write itself (DL101-DL106)
            sites = _holding_sites(index, path, write, holders)
            read, kind = None, str(write.kind) if write.kind in SCALAR_KINDS else "unknown"
            if not sites:  # not the compiled module: a submodule whose attribute compiled code reads through it
                through = _read_through(index, path, write)
                if through is None:
                    continue
                sites, read, assigned = through
                kind = kind if kind != "unknown" else assigned
            key = (sites, write.attr)
            if key in found:
                continue
            earlier = _ran_before(index, path, write.function, write.span.line, write.in_loop, set(sites), 3)
            if earlier is None:
                continue  # configuration before the first compiled call costs nothing
            span, looped = earlier
            # a change made under a condition may happen a few times or every step: only "once per value" is sure
            varies = looped and not write.guarded and (write.aug or not write.constant)
            found[key] = StateChange(
                RULE.code, write.span, write.receiver_text, write.attr, kind, varies, sites[0], span, read=read
            )
    for change in [*found.values(), *_setter_changes(index)]:
        yield from judge(change, index)


def _setter_changes(index: WorkspaceIndex) -> Iterator[StateChange]:
    """Calls of a method that changes its instance's attributes (``model.yarn.apply(...)`` multiplying
    ``self.attn_scale``, ``model.set_window(w)``), made outside compiled code on an object whose attribute compiled
    code reads, through the module holding it (``self.yarn.attn_scale`` in the compiled forward) or as its own
    (``self.window``). One finding per attribute."""
    readers = _readers(index)
    if not readers:
        return
    # only calls spelled like a method of a class compiled code reads through are evaluated (most calls are not)
    names = {
        method.name
        for cls, _ in readers
        for owner in index.mro(cls)[0]
        if (owner_summary := index.class_summary(owner)) is not None
        for method in owner_summary.methods
    }
    seen: set[tuple[ClassKey, str]] = set()
    for summary in index.summaries:
        for placed in calls(summary):
            if placed.call.name not in names:
                continue
            if placed.function and index.sites_for_scope(placed.path, placed.function):
                continue  # compiled code makes the call: the DL10x checks follow it
            for value in index.evaluator.evaluate(placed.call.func, placed.path):
                if not isinstance(value, MethodValue) or value.on_class or value.name in ("__init__", "forward"):
                    continue
                for attr in sorted(closure(index, value.cls, value.name)[1]):
                    read = readers.get((value.cls, attr))
                    stored = _stored_argument(index, value, attr, placed.call)
                    kind = stored.lstrip("=") if stored else _assigned_kind(index, value.cls, attr)
                    if read is None or kind is None or (value.cls, attr) in seen:
                        continue
                    sites, at = read
                    call = placed.call
                    if stored is not None and stored.startswith("=") and call.in_loop:
                        continue  # the same constant on every iteration: set once, then unchanged
                    earlier = _ran_before(index, placed.path, placed.function, call.span.line, call.in_loop, sites, 3)
                    if earlier is None:
                        continue
                    seen.add((value.cls, attr))
                    yield StateChange(
                        RULE.code,
                        call.span,
                        value.cls[1].rpartition(".")[2],
                        attr,
                        kind,
                        earlier[1] and not call.guarded,
                        min(sites, key=attrgetter("order")),
                        earlier[0],
                        setter=value.name,
                        read=at,
                    )


def _read_through(
    index: WorkspaceIndex, path: str, write: AttrWrite
) -> tuple[tuple[CompileSite, ...], Related, str] | None:
    """For a write to an attribute of an object compiled code reads through the module holding it
    (``model.yarn.attn_scale = s``, read as ``self.yarn.attn_scale`` in the compiled ``forward``): the compile sites of
    that code, where it reads it, and the kind the class assigns to the attribute (``unknown`` if not one)."""
    readers = _readers(index)
    for value in index.evaluator.evaluate(write.receiver, path):
        if not isinstance(value, Instance):
            continue
        found = readers.get((value.cls, write.attr))
        if found is not None:
            sites, read = found
            assigned = _assigned_kind(index, value.cls, write.attr) or "unknown"
            return tuple(sorted(sites, key=attrgetter("order"))), read, assigned
    return None


def _stored_argument(index: WorkspaceIndex, setter: MethodValue, attr: str, call: CallSite) -> str | None:
    """The kind of the argument ``call`` passes to a setter that stores it in ``self.<attr>`` (``def set_k(self, k):
    self.k = k`` called as ``model.set_k(step)``), ``=`` before it for a constant; None when the call does not
    tell."""
    found = index.find_method(setter.cls, setter.name)
    if found is None:
        return None
    method = found[1]
    for event in method.events:
        if event.kind == "write" and event.attr == attr and event.detail == "param" and event.text in method.params[1:]:
            position = method.params.index(event.text) - 1
            return (call.arg_kinds[position] or None) if position < len(call.arg_kinds) else None
    return None


Readers = dict[tuple[ClassKey, str], tuple[set[CompileSite], Related]]


def _readers(index: WorkspaceIndex) -> Readers:
    """(class, attribute) → the compile sites whose compiled code reads ``self.<a>.<attribute>`` where ``self.<a>``
    holds an instance of the class, ``<name>.<attribute>`` where a parameter or local holds one (``yarn.attn_scale``
    after ``yarn = args.yarn``, the object passed in a dataclass), or ``self.<attribute>`` in a method of the class,
    and the method that reads it (as related information)."""

    def compute() -> Readers:
        found: Readers = {}
        changed = _changed_attributes(index)  # only these are worth following through names
        through_names: dict[tuple[str, ClassKey, str], list[tuple[ClassKey, str, Related]]] = {}  # once per method
        for summary in index.summaries:
            for site in summary.compile_sites:
                for node in index.reach.reached_nodes(site):
                    if node[0] != "method":
                        continue
                    owner = index.class_summary(node[1])
                    method = owner.method(node[2]) if owner is not None else None
                    if method is None:
                        continue
                    for event in method.events:
                        if event.kind == "read" and event.attr:
                            said = f"`{node[1][1]}.{method.name}` reads `self.{event.attr}` in compiled code"
                            entry = found.setdefault((node[1], event.attr), (set(), Related(event.span, said)))
                            entry[0].add(site)
                    for holder, member in method.member_reads:
                        for value in index.evaluator.attribute(node[1], holder):
                            if isinstance(value, Instance):
                                said = f"`{node[1][1]}.{method.name}` reads `self.{holder}.{member}` in compiled code"
                                entry = found.setdefault((value.cls, member), (set(), Related(method.span, said)))
                                entry[0].add(site)
                    through = through_names.get(node)
                    if through is None:
                        through = through_names[node] = _read_through_names(index, node[1], method, changed)
                    for cls, member, related in through:
                        found.setdefault((cls, member), (set(), related))[0].add(site)
        return found

    return index.memo("DL111.readers", compute)


def _read_through_names(
    index: WorkspaceIndex, cls: ClassKey, method: MethodSummary, changed: frozenset[str]
) -> list[tuple[ClassKey, str, Related]]:
    """What ``method`` reads through names holding objects it was given (``yarn.attn_scale``): the class of each
    object and the member, for members in ``changed``, with where it reads it."""
    found: list[tuple[ClassKey, str, Related]] = []
    env = index.evaluator.self_env(cls)
    for name, member, held in method.name_member_reads:
        if member not in changed:
            continue
        for value in index.evaluator.evaluate(held, cls[0], env):
            if isinstance(value, Instance):
                said = f"`{cls[1]}.{method.name}` reads `{name}.{member}` in compiled code"
                found.append((value.cls, member, Related(method.span, said)))
    return found


def _changed_attributes(index: WorkspaceIndex) -> frozenset[str]:
    """The attributes the workspace changes after construction: assigned by a method other than ``__init__``
    (``self.x = v``, ``+=``), or from outside (``model.clock.ticks = step``)."""
    changed = {write.attr for summary in index.summaries for write in summary.writes}
    changed.update(
        event.attr
        for summary in index.summaries
        for cls in summary.classes
        for method in cls.methods
        if method.name != "__init__"
        for event in method.events
        if event.kind in ("write", "aug")
    )
    return frozenset(changed)


def _assigned_kind(index: WorkspaceIndex, cls: ClassKey, attr: str) -> str | None:
    """The one scalar kind the class's methods assign to ``self.<attr>`` (``self.attn_scale = 0.1``), else None."""
    kinds = written_kinds(index, cls, attr)
    return next(iter(kinds)) if len(kinds) == 1 and kinds <= SCALAR_KINDS else None


def _holding_sites(
    index: WorkspaceIndex, path: str, write: AttrWrite, holders: dict[Value, list[CompileSite]]
) -> tuple[CompileSite, ...]:
    """The compile sites whose compiled state the write's receiver can hold, in programs the write's file is in."""
    sites = {
        site
        for value in index.evaluator.evaluate(write.receiver, path)
        for site in holders.get(value, ())
        if index.files.together(path, site.span.path)
    }
    return tuple(sorted(sites, key=attrgetter("order")))


def _ran_before(
    index: WorkspaceIndex, path: str, function: str, line: int, in_loop: bool, sites: set[CompileSite], depth: int
) -> tuple[Span, bool] | None:
    """A call of the sites' compiled code that has run when line ``line`` of ``function`` executes (earlier in the
    function, or in a loop of it that also encloses the line), else one that has run when a caller of ``function``
    calls it (``depth`` levels up); with whether a loop repeats the line after it."""
    summary = index.summary(path)
    for placed in calls(summary) if summary is not None else ():
        if placed.function != function:
            continue
        looped = in_loop and placed.call.in_loop
        if (placed.call.span.line < line or looped) and set(compiled_callees(index, placed)) & sites:
            return placed.call.span, in_loop
    if depth > 1 and function:
        for caller in callers_of(index, path, function):
            call = caller.call
            found = _ran_before(index, caller.path, caller.function, call.span.line, call.in_loop, sites, depth - 1)
            if found is not None:
                return found[0], found[1] or in_loop
    return None


CHECK = Check(RULE.code, collect=collect, judge=judge, judge_workspace=judge_workspace)
