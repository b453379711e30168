"""DL101 · scalar-attr-mutated-in-forward

## What it does
Flags a Python `int`, `float`, `bool` or `str` attribute of an `nn.Module` that `forward` (or a method reachable from
it) reads and then writes, so that its value is carried from one call to the next: `self.steps += 1`,
`self.calls = self.calls + 1`, `self.flag = not self.flag`.

## Why it matters
On torch 2.13 Dynamo treats every `nn.Module` as unspecialized and guards each attribute it reads on its own. A
Python scalar attribute is burned into the compiled graph as a constant and protected by a guard on its value
(`EQUALS_MATCH self.steps == 3`; `TRUE_MATCH`/`FALSE_MATCH` for bools). When the next call sees a new value, the
guard fails and the frame is compiled again.

* `int`: one compile per distinct value, never made dynamic automatically
  (`torch._dynamo.config.allow_unspec_int_on_nn_module` is False by default). A counter recompiles on every call
  until `torch._dynamo.config.recompile_limit` (8) is hit; from then on the frame silently runs in eager mode.
* `float`: one recompile, after which Dynamo makes the value dynamic (`specialize_float=False`).
* `bool`: at most one compiled entry per value (two in all), so it costs one extra compile.
* `str`: one compile per distinct value, never dynamic.

The guard that fails points at the *read* of the attribute; the write is what makes the value change.

Older torch differs, and the message follows the torch you run (measured on 2.5.1, 2.6.0 and 2.7.1): an int
attribute of a module the compiled frame gets as an input (its `self`, an argument, or a module held in an attribute
of one) is made dynamic after one recompile there, 2 compiles in all, while one the frame reaches through a module
container (`for block in self.blocks`) or a module-level global stays static as on 2.13; floats are static whatever
`dynamic=` says on 2.5 (`specialize_float` was on by default) and are made dynamic after one recompile whatever it
says on 2.6 and 2.7; the limit is called `cache_size_limit` before 2.7.

Only `nn.Module` int attributes stay static: on a plain Python object whose method is compiled
(`@torch.compile def step(self, ...)`), an int attribute is made dynamic after one recompile (measured: two
compiles), so that case is reported as `info`. A helper object that is not a module but that a compiled module's
code calls (`self.counter(x)` in `forward`, a global helper) is traced too, and its int attributes stay static like
the module's (measured: 8 compiles and the limit); one that compiled functions reach in other ways is not reported
(a global one stays static, one reached through a compiled plain object's `self` is made dynamic).

## Example
```python
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.steps = 0

    def forward(self, x):
        self.steps += 1            # DL101: recompiles on every call, eager after 8
        return self.lin(x) * self.steps
```

## Use instead
Keep the counter in a tensor buffer and update it in place; Dynamo guards tensors on metadata, not values:
```python
        self.register_buffer("steps", torch.zeros((), dtype=torch.long))
    ...
        self.steps.add_(1)
```
Or let Dynamo treat integer module attributes as dynamic (one extra compile, then a symbolic int):
`torch._dynamo.config.allow_unspec_int_on_nn_module = True`. Or move the bookkeeping out of `forward`.

## Settings
The cost depends on the project's settings, which the scan reads (measured on 2.13, `backend="eager"`):

* with `torch._dynamo.config.allow_unspec_int_on_nn_module = True` in force for every compile site that runs the
  module (set at module level of the site's file or of a file it imports, or above the site in its function), an
  int counter recompiles once and then is dynamic: 2 compiles, reported at `info` with the setting as related
  information;
* compiled with `dynamic=False`, a float that keeps changing is never made dynamic: a compile per value, 8 compiles
  and the limit (warning); compiled with `dynamic=True` the float is symbolic from the first call (1 compile): no
  finding. The project's `torch._dynamo.config.automatic_dynamic_shapes = False` keeps it static too (8 + limit,
  unless the site says `dynamic=True`), and `specialize_float = True` keeps it static whatever the site says;
* the limit is the project's: `torch.compile(..., recompile_limit=N)` at every site, else
  `torch._dynamo.config.recompile_limit` (or `cache_size_limit`) set before them, is the number the message states
  (measured: 4 and 12 compiles, then the limit); under `fullgraph=True` or `fail_on_recompile_limit_hit = True` the
  compile past the limit raises `FailOnRecompileLimitHit` instead of running the frame eagerly (measured: the ninth
  call raises). The other codes whose cost is the limit state it the same way;
* `torch.compiler.set_stance("fail_on_recompile")` or `"eager_on_recompile"`, called unconditionally at module level
  or in the site's function (typically after a warm-up call), replaces the recompiles: measured after one warm-up
  call, the first recompile raises `RuntimeError`, or every later call runs eagerly (1 compile). The message says
  which, and where the stance is set;
* `torch.compiler.set_stance("force_eager")`, found the same way, runs every call eagerly (measured: 0 compiles). The
  finding, like any finding of every code on code compiled only under that stance, is then a hint that names it;
* a `guard_filter_fn` in the site's `options=` (torch 2.8+) decides whether the guard exists at all:
  `torch.compiler.skip_guard_on_all_nn_modules_unsafe` and `keep_tensor_guards_unsafe` drop the guards on module
  attributes, so nothing recompiles and the compiled code keeps using the value it was compiled with (measured: 1
  compile, results computed with the first value): the finding is then a *warning* about a silent wrong result, and a
  fix that raises the limit is not offered; `skip_guard_on_inbuilt_nn_modules_unsafe` drops only the guards on
  torch.nn's own modules and changes nothing here; a plain object's int (not a module's) is dropped only by
  `keep_tensor_guards_unsafe` (measured: 1 compile, stale results); a filter of the project's own (a lambda), or one
  site that compiles without the filter, leaves the finding as it was (with a lambda, a hint).

## Known limitations
The analysis follows `self.<name>` reads and writes in evaluation order through methods called as `self.method()`,
`super().method()` and properties, through the class's bases in the workspace; it does not follow aliases
(`s = self; s.steps += 1`) or writes through other objects. A write counts as happening on every call only when it
is not under `if`/loops/`try`; a helper's unconditional writes are assumed to have run even when the helper can
return early (Dynamo traces one path at a time). Writes of a constant (`self.mode = 2`), bools and floats cost a
bounded number of compiles and are reported as `info`; an attribute first created in `forward` is DL103.

A graph break inside a loop makes Dynamo give up on the whole function, which then guards nothing. When every read
of the attribute sits where that happens if a call on an object from outside torch and the workspace breaks
(`self.scene.step()` in a simulator wrapper's frame-skip loop, or a helper called after that loop), the scan cannot
tell whether the counter is guarded and reports a hint that names the call (measured on 2.13 with a stdlib queue's
`qsize` in the loop: no recompile; the same call outside any loop, after the read: 8 compiles and the limit).

## Fix safety
Converting the counter to a buffer (offered when `__init__` sets an int literal and every change is `+=`/`-=`) is
unsafe: code that uses the attribute as a Python `int` (indexing, `range`, string formatting, comparisons feeding
Python control flow) now sees a tensor. Setting `allow_unspec_int_on_nn_module` (measured on 2.13: two compiles
instead of eight plus the limit) keeps results but changes what Dynamo specialises for every module, so it is not
applied in bulk either; it is offered for torch ≥ 2.7, which has the setting (measured: 2.6.0 raises
`AttributeError` on it). The buffer compiled once on 2.4.1, 2.5.1 and 2.13; `self.torchdynamo_force_dynamic = True`,
the pre-2.5 way to unspecialise a module, changed nothing for a counter on 2.4.1 (4 compiles either way), so it is not
offered.

## References
- PyTorch, "Dealing with recompilations": https://docs.pytorch.org/docs/stable/compile/programming_model.recompilation.html
- `torch/_dynamo/config.py`: `recompile_limit`, `allow_unspec_int_on_nn_module`
"""

from __future__ import annotations

from collections.abc import Iterator

from dynamo_lens.codes import Check, Rule
from dynamo_lens.model import Edit, Finding, Fix, Related, Severity
from dynamo_lens.static.semantic import settings
from dynamo_lens.static.semantic.index import WorkspaceIndex
from dynamo_lens.static.semantic.state_flow import (
    Access,
    AttrFlow,
    ClassFlow,
    init_related,
    ints_made_dynamic,
    judge_attrs,
    read_related,
    sites_of,
    written_kinds,
)
from dynamo_lens.static.semantic.values import SCALAR_KINDS
from dynamo_lens.static.summary import AttrKind, CompileSite
from dynamo_lens.torch_facts import (
    INT_MODULE_ATTR_STATIC_SINCE,
    MODULE_STATE,
    OBJECT_STATE,
    UNSPEC_INT_FLAG_SINCE,
    torch_name,
)

RULE = Rule(
    code="DL101",
    name="scalar-attr-mutated-in-forward",
    summary="A Python scalar module attribute is read and then changed inside the compiled forward",
    default_severity=Severity.WARNING,
    source="static",
    docs_url="https://docs.pytorch.org/docs/stable/compile/programming_model.recompilation.html",
    fix_title="Keep the counter in a tensor buffer",
    confirmed_by=("DL501", "DL502"),
)


AUG_OPERATORS = {
    "Add": "+=", "Sub": "-=", "Mult": "*=", "Div": "/=", "FloorDiv": "//=", "Mod": "%=", "Pow": "**=",
    "BitOr": "|=", "BitAnd": "&=", "BitXor": "^=", "LShift": "<<=", "RShift": ">>=",
}  # fmt: skip
_IN_PLACE = {"Add": "add_", "Sub": "sub_"}


def scalar_kind(flow: AttrFlow) -> AttrKind | None:
    """The Python scalar kind of the attribute, from ``__init__`` or else from what the call writes."""
    init = flow.init_kind
    if init in SCALAR_KINDS:
        return init
    if init not in (None, "none", "unknown"):
        return None  # a tensor, a container, a module: not a scalar
    written = {a.event.value_kind for a in flow.changes if a.event.kind in ("write", "aug")} - {"unknown"}
    if len(written) == 1 and (kind := next(iter(written))) in SCALAR_KINDS:
        return kind
    return None


def _set_elsewhere_to_other(index: WorkspaceIndex, flow: ClassFlow, attr: str) -> bool:
    """A method of the class that the compiled call does not run assigns the attribute a value not known to be a
    Python scalar (``self.pos = lengths.clone()`` in a setup method): ``self.pos += 1`` alone does not make it an
    int."""
    outside = written_kinds(
        index, flow.cls, attr, lambda owner, name: name == "__init__" or (owner, name) in flow.methods
    )
    return not outside <= {*SCALAR_KINDS, "none"}


def judge_workspace(index: WorkspaceIndex) -> list[Finding]:
    return judge_attrs(index, _judge)


def _judge(index: WorkspaceIndex, flow: ClassFlow, attr: AttrFlow) -> Iterator[Finding]:
    if not attr.carried or attr.init is None:
        return  # not carried across calls, or created outside __init__ (DL103)
    kind = scalar_kind(attr)
    if kind is None or (attr.init_kind in ("none", "unknown") and _set_elsewhere_to_other(index, flow, attr.attr)):
        return
    changes = [a for a in attr.changes if a.event.kind in ("write", "aug")]
    growing = any(_grows(a) for a in changes)
    for change in changes:
        if growing and change.event.detail == "const":
            continue  # `self.steps = 0` on reset: the `+= 1` that keeps changing it is the finding
        finding = _finding(index, flow, attr, kind, change, changes)
        if finding is not None:
            yield finding


def _grows(change: Access) -> bool:
    """A change that makes a new value from the old one (``+= 1``, ``self.s = self.s + "x"``)."""
    return change.event.kind == "aug" or change.event.detail in ("concat", "self")


def _finding(
    index: WorkspaceIndex, flow: ClassFlow, attr: AttrFlow, kind: AttrKind, change: Access, changes: list[Access]
) -> Finding | None:
    name = f"self.{attr.attr}"
    event = change.event
    operator = AUG_OPERATORS.get(event.detail, "=") if event.kind == "aug" else "="
    what = f"`{name} {operator} {event.text or '…'}`"
    place = f"`{change.method}`" + (f" (called from `{flow.entry}`)" if change.method != flow.entry else "")
    unbounded = any(_grows(a) for a in changes)
    sites = sites_of(index, [change, *attr.carried_reads])
    severity: Severity | None = None
    module = index.is_module_class(flow.cls)
    static = _static_ints(index, flow, sites)
    if kind == "int" and unbounded and static is None:
        return None  # a helper object that compiled functions reach: static or not depends on how they hold it
    unspec = settings.in_force(index, "allow_unspec_int_on_nn_module", "True", sites) if static else None
    floats = settings.float_policy(index, sites) if kind == "float" else settings.FloatPolicy()
    setting: Related | None = None
    limit = settings.recompile_limit(index, sites)
    as_input = ints_made_dynamic(index, sites, [flow.cls], attr.attr, flow.entry)
    if kind == "int" and unbounded and static and unspec is None and as_input:
        severity = Severity.INFO
        cost = (
            f"Dynamo ({torch_name()}) guards `{name} == <value>` (EQUALS_MATCH), recompiles once and then treats the "
            f"int as dynamic (before torch {INT_MODULE_ATTR_STATIC_SINCE} an int attribute of a module the compiled "
            "frame gets as an input, or holds in an attribute of one, is made dynamic automatically): one extra "
            "compile, and one per outcome of a branch that tests it"
        )
    elif kind == "int" and unbounded and (not static or unspec is not None):
        severity = Severity.INFO
        why = (
            "under `allow_unspec_int_on_nn_module = True`"
            if unspec is not None
            else "automatic dynamic; only nn.Module int attributes stay static"
        )
        cost = (
            f"Dynamo ({torch_name()}) guards `{name} == <value>` (EQUALS_MATCH), recompiles once and then treats the "
            f"int as dynamic ({why}): one extra compile"
        )
        if unspec is not None:
            setting = settings.set_here(unspec)
    elif kind in ("int", "str") and unbounded:
        dynamic_text = (
            "strings are never made dynamic"
            if kind == "str"
            else "int module attributes are never made dynamic"
            if module
            else "ints of an object a compiled module calls are never made dynamic"
        )
        cost = (
            f"Dynamo ({torch_name()}) guards `{name} == <value>` (EQUALS_MATCH) at the read, so each new value "
            f"recompiles ({dynamic_text}); {limit.past()}"
        )
    elif kind in ("int", "str") and all(a.event.detail == "const" for a in changes):
        severity = Severity.INFO
        cost = f"Dynamo guards `{name} == <value>` (EQUALS_MATCH); the value changes once: one extra compile"
    elif kind in ("int", "str"):
        severity = Severity.INFO
        cost = (
            f"Dynamo guards `{name} == <value>` (EQUALS_MATCH), so each distinct value it takes compiles once more "
            "(one extra compile while the value it is set to stays the same)"
        )
    elif kind == "float" and floats.static and unbounded:
        cost = (
            f"Dynamo ({torch_name()}) guards `{name} == <value>` (EQUALS_MATCH) and, under {floats.static}, never "
            f"makes the float dynamic: each new value recompiles; {limit.past()}"
        )
        setting = floats.related
    elif kind == "float" and floats.symbolic:
        return None  # measured: compiled with dynamic=True the float is symbolic from the first call (1 compile)
    elif kind == "float":
        severity = Severity.INFO
        cost = (
            f"Dynamo guards `{name} == <value>` (EQUALS_MATCH), recompiles once and then treats the float as dynamic "
            "(specialize_float=False): one extra compile"
        )
    else:
        severity = Severity.INFO
        cost = (
            f"Dynamo guards the bool (TRUE_MATCH/FALSE_MATCH `{name}`): one compiled entry per value, one extra compile"
        )
    message = f"{what} in {place} changes the {kind} attribute `{name}` that the next call reads: {cost}"
    related = (*init_related(attr), *read_related(attr, event.span), *([setting] if setting else []))
    if severity is None:  # the cost is the limit's: where the project sets it
        related += limit.related
    fixes = _fixes(index, attr, kind, changes) if kind == "int" and unbounded and module and not unspec else ()
    return index.finding(
        RULE,
        event.span,
        message,
        sites,
        severity=severity,
        related=related,
        fixes=fixes,
        data={"attribute": attr.attr, "kind": kind, "class": flow.cls[1], "unbounded": unbounded},
        guards_on=MODULE_STATE if module else OBJECT_STATE,
    )


def _static_ints(index: WorkspaceIndex, flow: ClassFlow, sites: set[CompileSite]) -> bool | None:
    """Whether Dynamo keeps the class's int attributes static, as it does a module's (None: cannot tell). Measured
    on 2.13: a module's, and a helper object's that a compiled module's code calls (held in a module attribute or a
    global), stay static; a plain object's whose method is compiled is made dynamic after one recompile. A helper
    that compiled functions or plain objects reach can be either (a global helper stays static, one reached through
    a compiled plain object's `self` does not)."""
    if index.is_module_class(flow.cls):
        return True
    compiled = [index.compiled_classes(site) for site in sites]
    if any(flow.cls in classes for classes in compiled):
        return False
    if compiled and all(classes and all(index.is_module_class(c) for c in classes) for classes in compiled):
        return True
    return None


def _fixes(index: WorkspaceIndex, attr: AttrFlow, kind: AttrKind, changes: list[Access]) -> tuple[Fix, ...]:
    if attr.init is None:
        return ()
    owner, init = attr.init
    insert = settings.config_edit(index, owner[0], "allow_unspec_int_on_nn_module", "True")
    torch_name = settings.torch_name(index, owner[0])
    if insert is None or torch_name is None:
        return ()
    fixes: list[Fix] = []
    if init.kind == "int" and all(a.event.kind == "aug" and a.event.detail in _IN_PLACE for a in changes):
        value = init.value_text
        tensor = (
            f"{torch_name}.zeros((), dtype={torch_name}.long)"
            if value == "0"
            else f"{torch_name}.tensor({value}, dtype={torch_name}.long)"
        )
        edits = [Edit(init.statement, f'self.register_buffer("{attr.attr}", {tensor})')]
        for access in changes:
            statement = access.event.statement
            if statement is not None:
                method = _IN_PLACE[access.event.detail]
                edits.append(Edit(statement, f"self.{attr.attr}.{method}({access.event.text})"))
        fixes.append(Fix(RULE.fix_title or "Keep the counter in a tensor buffer", tuple(edits), safe=False))
    fixes.append(
        Fix(
            "Let Dynamo treat int module attributes as dynamic",
            (insert,),
            safe=False,
            min_torch=str(UNSPEC_INT_FLAG_SINCE),  # older torch raises on the unknown setting
        )
    )
    return tuple(fixes)


CHECK = Check(RULE.code, judge_workspace=judge_workspace)
