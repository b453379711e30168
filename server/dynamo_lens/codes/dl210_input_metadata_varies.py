"""DL210 · input-metadata-varies

## What it does
Flags a call of a compiled callable, inside a loop, with an input whose metadata changes on each iteration in a way
Dynamo never makes dynamic:

* the dtype, in a loop over a literal list or tuple of dtypes (`for dtype in (torch.float32, torch.float16)`, or a
  name bound to one): a tensor cast or made in it (`x.to(dtype)`, `torch.ones(n, dtype=dtype)`, directly or through a
  local assigned in the loop), or the dtype itself;
* the shape, when the compile site says `dynamic=False` or the project sets `automatic_dynamic_shapes = False` (and
  the site does not say `dynamic=True`): a tensor made with a size that follows a loop counter (`torch.randn(n, 4)`),
  or a slice bounded by one (`x[:n]`);
* the shape of an `nn.Parameter` made with such a size (`nn.Parameter(torch.randn(n, 4))`), whatever the site says;
* the shape of each parameter, in a loop over a model's parameters (`for p in model.parameters()`,
  `for p in group["params"]` in an optimizer's `step`): the parameter itself whatever the site says, or a tensor of
  its shape (`p.grad`, `torch.zeros_like(p)`, a local or a `state["buf"]` entry assigned one) under `dynamic=False` or
  `automatic_dynamic_shapes = False`;
* the length of a list the loop grows (`history.append(x)`, then `summarize(history)`), or of a list display sized by
  a loop counter (`[x] * (step + 1)`), whatever the site says.

And a loop that calls a compiled module and changes `requires_grad` of its parameters between the calls
(`model.layers[epoch].requires_grad_(False)`, or `p.requires_grad = False` for `p` in `model.block.parameters()`).

And a compiled module whose output the loop feeds back as its next input with grad enabled (`state =
model(state)`), when the first input does not require grad.

And a compiled callable that gets, in the same place, a tensor made under `torch.inference_mode()` (an inference
tensor) at one call and a normal tensor at another.

## Why it matters
Dynamo guards the dtype of every tensor input (`TENSOR_MATCH`: "tensor 'x' dtype mismatch. expected Float, actual
Double") and a `torch.dtype` argument by value, and no setting makes a dtype dynamic. Measured on torch 2.13
(`backend="eager"`): a loop over four dtypes compiled the function four times; over ten dtypes it compiled eight
times, hit `recompile_limit` (8) and ran the remaining dtypes eagerly. Up to the limit it is a bounded cost (`info`,
one compile per dtype, each entry reused on later calls with that dtype); past it, a warning. The limit is the
project's when it sets one (`recompile_limit = 10` before the compile: the ten dtypes compile ten times, an info that
names the limit). Sizes are guarded too;
by default a second size makes them dynamic (automatic dynamic: 2 compiles, not reported), but `dynamic=False` turns
that off: twelve sizes compiled eight times and hit the limit (a warning); so does `automatic_dynamic_shapes = False`
(8 compiles and the limit; with `dynamic=True` at the site, 1 compile). Parameters are the exception:
`force_parameter_static_shapes` (on by default) keeps their shapes static, so twelve `nn.Parameter` inputs of twelve
sizes compiled 8 times and hit the limit even under `dynamic=True`; with the setting off, 2 (not reported).
A call made once per parameter of a model brings one shape per parameter: a ten-parameter model with ten distinct
shapes compiled 8 times and hit the limit, passing the parameters themselves (default `dynamic`), or their
gradients under `dynamic=False` (from a module-level loop, or from an optimizer's `step()` calling a helper it
compiled in `__init__`); under a project limit of 16, 10 compiles. How many distinct shapes a model has is not
known to the scan, and an optimizer's groups often hold a handful (nanochat's AdamW groups: 5 shapes and dtypes,
5 compiles), so these are `info`, saying what happens past the limit. Gradients under the default `dynamic`: 3
compiles, one per rank (not reported).

Parameters are guarded like inputs, `requires_grad` included ("requires_grad mismatch"). Measured over 10 epochs:
freezing one more block each epoch (progressive layer freezing) compiled 8 times and hit the limit (warning);
freezing the same block once after the first step, or toggling it every other step, compiled twice (info: one entry
per setting, reused); freezing it at the top of every iteration, before the first call too, compiled once (nothing
reported).

A list input is guarded on its length (`len(history) == 3`), which no setting makes dynamic: a list grown by one
tensor on each of twelve steps compiled 8 times and hit the limit, under `dynamic=True` too (warning); over three
steps, 3 compiles (info); a list rebuilt with two tensors on every iteration, 1.

A module's output requires grad when grad mode is on (its parameters do): fed back as the next input of an unrolled
loop whose first input does not, it fails the `requires_grad` part of the tensor guard once (measured: 2 compiles,
info); detached, or under `no_grad`, 1.

An inference tensor has no autograd dispatch key, and the tensor guard checks the dispatch key set ("tensor 'x'
dispatch key set mismatch"): a compiled model fed a reference batch made under `inference_mode` and fresh batches made
under `no_grad` compiled twice (info: one entry per kind, reused). Cloned outside inference mode, or with every
input made under it, it compiled once.

## Example
```python
@torch.compile
def scale(x):
    return x * 2

for dtype in (torch.float32, torch.float16, torch.bfloat16):
    scale(x.to(dtype))              # DL210: one compile per dtype (3 in all)
```

## Use instead
Expected when a test sweeps dtypes: each entry is compiled once and reused. To stay under the limit with many dtypes,
raise `torch._dynamo.config.recompile_limit`, or compile one function per dtype (`torch.compile(scale)` inside the
loop gives each dtype its own cache). Make tensors that also feed calls outside inference mode under
`torch.no_grad()` rather than `torch.inference_mode()`, or `.clone()` them outside it.

## Known limitations
Only loops over a literal list or tuple of `torch` dtypes (or a name bound to one in the same scope or at module level)
are followed, and only arguments whose expression (or the local it names) mentions the loop variable. A dtype that
comes from a parametrized test or a config is not seen. Sizes are followed from loop counters (`range()`, `+=`) into
`torch.randn/rand/zeros/ones/empty/full` sizes and slice bounds, under a literal `dynamic=False` or the project's
`automatic_dynamic_shapes = False` only. A loop over parameters is one over `.parameters()`,
`.named_parameters()` or a `["params"]` entry of a parameter group; an argument is followed to the parameter through
`.grad`, `.data`, shape-keeping tensor methods and arithmetic, `torch.*_like`, locals, and dict entries the
function assigns one (`state["momentum_buffer"] = torch.zeros_like(p)`), not through other functions
(`flatten(p.grad)`) or the outputs of compiled calls.
`requires_grad` changes are seen in the loop that calls the compiled module, on an expression rooted at its name;
a callback or a helper that freezes layers elsewhere is not followed. A growing list is seen when the argument names
a list bound to a list display before a loop around the call that `append`s, `extend`s or `insert`s into it
without rebinding it; how many lengths it reaches is counted only for `range(<literal>)` loops. Inference tensors
are told only from a local assigned a freshly computed tensor (a `torch` function or a tensor method that never
returns a view) in the same function or at module level; a model's output made under `inference_mode` is not
followed. An output fed back is reported for a compiled module (a function's output requires grad only when its
inputs do) called at module level, under `torch.enable_grad()`, or in a function this file calls only from module
level.

## Fix safety
No automatic fix: whether several compiled entries are wanted is the caller's choice.

## References
- PyTorch, "Dealing with recompilations": https://docs.pytorch.org/docs/stable/compile/programming_model.recompilation.html
- `torch/_dynamo/config.py`: `recompile_limit`
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING

from dynamo_lens.codes import Check, Rule
from dynamo_lens.model import Finding, Related, Severity
from dynamo_lens.static.context import FileContext, NodeAt
from dynamo_lens.static.semantic import settings
from dynamo_lens.static.semantic.contexts import GRAD, INFERENCE
from dynamo_lens.static.semantic.usage import (
    ARITHMETIC,
    HandleCall,
    Loop,
    Usage,
    UsageCandidate,
    bound_in,
    judge_usage,
    loop_scalars,
    names_in,
    position,
    root_name,
    scope_key,
    usage,
)
from dynamo_lens.static.semantic.values import (
    PARAMETER_CALLS,
    SAME_SHAPE_ATTRIBUTES,
    SAME_SHAPE_FACTORIES,
    SAME_SHAPE_METHODS,
    ValueKind,
    kind_of,
)
from dynamo_lens.static.summary import CompileSite
from dynamo_lens.torch_facts import MAY_RETURN_INPUT, RECOMPILE_LIMIT, torch_name

if TYPE_CHECKING:
    from dynamo_lens.static.semantic.index import WorkspaceIndex

RULE = Rule(
    code="DL210",
    name="input-metadata-varies",
    summary="A compiled callable is called in a loop with an input whose dtype, static shape, list length or "
    "requires_grad changes",
    default_severity=Severity.WARNING,
    source="static",
    docs_url="https://docs.pytorch.org/docs/stable/compile/programming_model.recompilation.html",
    confirmed_by=("DL501", "DL502"),
)

DTYPE_ALIASES = {
    "float": "float32", "double": "float64", "half": "float16", "int": "int32", "long": "int64", "short": "int16",
    "cfloat": "complex64", "cdouble": "complex128",
}  # fmt: skip
DTYPES = frozenset(
    {"float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64", "uint8", "bool", "complex64",
     "complex128", "float8_e4m3fn", "float8_e5m2", "uint16", "uint32", "uint64"}
)  # fmt: skip


def collect(ctx: FileContext) -> Iterator[UsageCandidate]:
    table = usage(ctx)
    yield from _inference_tensors_mixed(ctx, table)
    frozen: set[int] = set()
    for handle_call in table.calls:
        loops = table.enclosing_loops(handle_call.at)
        if not loops or not handle_call.handle.runs_compiled:
            continue
        fed_back = _output_fed_back(ctx, table, handle_call, loops[-1])
        if fed_back is not None:
            yield _fed_back_candidate(ctx, handle_call, *fed_back)
        change = _requires_grad_change(loops[-1], handle_call)
        if change is not None and id(change.node) not in frozen:
            frozen.add(id(change.node))
            yield _requires_grad_candidate(ctx, handle_call, change)
        scope, here = scope_key(handle_call.at.scope), position(handle_call.call)
        arguments = (*handle_call.call.args, *(k.value for k in handle_call.call.keywords))
        dynamic = dict(handle_call.handle.site.options).get("dynamic")
        counters = loop_scalars(loops, partial(table.value_of, scope, before=here))
        ints = {name for name, kind in counters.items() if kind == "int"}
        growing = _growing_list(table, handle_call, loops)
        if growing is not None:
            argument, grows, loop = growing
            how = f"passes a list that the loop grows (`{ctx.source(grows.func, 40)}`)"
            yield _length_candidate(
                ctx, handle_call, argument, how, Related(ctx.span(grows), "the list grows here"), loop
            )
        else:
            listed = _list_sized_by_counter(arguments, loops, ints)
            if listed is not None:
                argument, counter, loop = listed
                how = f"passes a list whose length follows `{counter}`"
                yield _length_candidate(
                    ctx, handle_call, argument, how, Related(ctx.span(loop.target), "the loop counter"), loop
                )
        sized = _sized_by_counter(ctx, table, scope, here, arguments, ints)
        if sized is not None:
            argument, counter, parameter = sized
            if parameter:
                yield _parameter_candidate(ctx, handle_call, argument, counter)
                continue
            if dynamic == "False":
                yield _shape_candidate(ctx, handle_call, argument, counter)
                continue
            if dynamic != "True":
                yield _shape_candidate(ctx, handle_call, argument, counter, by_setting=True)
        else:
            yield from _per_parameter_shape(ctx, table, handle_call, loops, arguments, dynamic)
        dtype_loops: dict[str, tuple[ast.Name, int]] = {}
        for loop in loops:
            found = _dtype_loop(ctx, loop, partial(table.value_of, scope, before=position(loop)))
            if found is not None:
                dtype_loops[found[0].id] = found
        if not dtype_loops:
            continue
        for argument in arguments:
            names = names_in(argument)
            if isinstance(argument, ast.Name) and argument.id not in dtype_loops:
                value = table.value_of(scope, argument.id, before=here)
                names |= names_in(value) if value is not None else set()
            varying = sorted(names & dtype_loops.keys())
            if varying:
                variable, count = dtype_loops[varying[0]]
                yield _candidate(ctx, handle_call, argument, variable, count)
                break  # one finding per call: every dtype-dependent argument fails the same way


def _dtype_loop(ctx: FileContext, loop: Loop, literal: Callable[[str], ast.expr | None]) -> tuple[ast.Name, int] | None:
    """The variable of ``for name in <literal dtypes>`` and how many distinct dtypes it takes (two at least)."""
    if not isinstance(loop, ast.For | ast.AsyncFor) or not isinstance(loop.target, ast.Name):
        return None
    values = loop.iter
    if isinstance(values, ast.Name):
        values = literal(values.id) or values
    if not isinstance(values, ast.Tuple | ast.List) or not values.elts:
        return None
    dtypes = set()
    for element in values.elts:
        dotted = ctx.resolve(element) or ""
        name = dotted.removeprefix("torch.")
        name = DTYPE_ALIASES.get(name, name)
        if not dotted.startswith("torch.") or name not in DTYPES:
            return None
        dtypes.add(name)
    return (loop.target, len(dtypes)) if len(dtypes) > 1 else None


def _candidate(
    ctx: FileContext, handle_call: HandleCall, argument: ast.expr, variable: ast.Name, count: int
) -> UsageCandidate:
    site = handle_call.handle.site
    text = ctx.source(argument, 40)
    message = (
        f"`{text}` changes dtype on each iteration of the loop over {count} dtypes: {torch_name()} guards each input's "
        f"dtype (and a dtype argument by value) and never makes it dynamic, so every dtype compiles once"
    )
    return UsageCandidate(
        RULE.code,
        ctx.span(argument),
        f"{message}; {settings.PAST_LIMIT}",
        RULE.default_severity,
        (site,),
        related=(Related(ctx.span(variable), "the loop over dtypes"),),
        entries=count,
        bounded_message=f"{message} ({count} compiles in all, each reused for its dtype)",
    )


def _growing_list(table: Usage, handle_call: HandleCall, loops: list[Loop]) -> tuple[ast.expr, ast.Call, Loop] | None:
    """The first argument that names a list a loop around the call grows (``history.append(x)``): bound to a list
    display before that loop and never rebound in it; with the call that grows it and the loop."""
    scope = scope_key(handle_call.at.scope)
    call = handle_call.call
    for argument in (*call.args, *(k.value for k in call.keywords)):
        name = argument.value if isinstance(argument, ast.Starred) else argument
        if not isinstance(name, ast.Name):
            continue
        for loop in reversed(loops):
            if not isinstance(table.value_of(scope, name.id, before=position(loop)), ast.List) or name.id in bound_in(
                loop
            ):
                continue
            for node in ast.walk(loop):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr in LIST_GROWERS
                    and isinstance(node.func.value, ast.Name)
                    and node.func.value.id == name.id
                ):
                    return argument, node, loop
    return None


LIST_GROWERS = frozenset({"append", "extend", "insert"})


def _list_sized_by_counter(
    arguments: Iterable[ast.expr], loops: list[Loop], ints: set[str]
) -> tuple[ast.expr, str, ast.For | ast.AsyncFor] | None:
    """The first argument that is a list display whose length follows an int loop counter (``[x] * (step + 1)``,
    ``[f(i) for i in range(step)]``), with the counter and its loop."""
    for argument in arguments:
        value = argument.value if isinstance(argument, ast.Starred) else argument
        sizes: set[str] = set()
        if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Mult):
            if isinstance(value.left, ast.List):
                sizes = names_in(value.right)
            elif isinstance(value.right, ast.List):
                sizes = names_in(value.left)
        elif isinstance(value, ast.ListComp) and len(value.generators) == 1:
            source = value.generators[0].iter
            if isinstance(source, ast.Call) and isinstance(source.func, ast.Name) and source.func.id == "range":
                sizes = {name for bound in source.args for name in names_in(bound)}
        for counter in sorted(sizes & ints):
            for loop in loops:
                if isinstance(loop, ast.For | ast.AsyncFor) and counter in names_in(loop.target):
                    return argument, counter, loop
    return None


def _length_candidate(
    ctx: FileContext, handle_call: HandleCall, argument: ast.expr, how: str, related: Related, loop: Loop
) -> UsageCandidate:
    site = handle_call.handle.site
    changes = (
        f"`{ctx.source(argument, 40)}` {how}, so its length changes on each iteration: {torch_name()} guards the "
        "length of a list input and never makes it dynamic, whatever `dynamic=` says, so each length compiles once"
    )
    count = _iterations(loop)
    return UsageCandidate(
        RULE.code,
        ctx.span(argument),
        f"{changes}; {settings.PAST_LIMIT}",
        RULE.default_severity,
        (site,),
        related=(related,),
        entries=count or 0,
        bounded_message=f"{changes} ({count} compiles in all)",
    )


def _iterations(loop: Loop) -> int | None:
    """How many times ``for _ in range(<literal>)`` runs; None for any other loop."""
    if not isinstance(loop, ast.For | ast.AsyncFor):
        return None
    found = loop.iter
    if not (isinstance(found, ast.Call) and isinstance(found.func, ast.Name) and found.func.id == "range"):
        return None
    bounds = [a.value for a in found.args if isinstance(a, ast.Constant) and type(a.value) is int]
    if len(bounds) != len(found.args) or not 1 <= len(bounds) <= 2:
        return None
    return max(bounds[-1] - (bounds[0] if len(bounds) == 2 else 0), 0)


def _inference_tensors_mixed(ctx: FileContext, table: Usage) -> Iterator[UsageCandidate]:
    """The first call of a compiled callable that passes a tensor made under ``torch.inference_mode()`` where
    another call passes a normal tensor in the same place (or the other way round): one candidate per site and
    place, at the inference tensor."""
    passed: dict[tuple[CompileSite, int | str], list[tuple[ast.expr, NodeAt]]] = {}
    for handle_call in table.calls:
        if not handle_call.handle.runs_compiled:
            continue
        call = handle_call.call
        places: list[tuple[int | str, ast.expr]] = [
            (i, a) for i, a in enumerate(call.args) if not isinstance(a, ast.Starred)
        ]
        places += [(k.arg, k.value) for k in call.keywords if k.arg is not None]
        for place, argument in places:
            made = _fresh_tensor_binding(ctx, table, handle_call, argument)
            if made is not None:
                passed.setdefault((handle_call.handle.site, place), []).append((argument, made))
    for (site, _), found in passed.items():
        inference = [(argument, made) for argument, made in found if made.grad == INFERENCE]
        normal = [made for _, made in found if made.grad != INFERENCE]
        if inference and normal:
            argument, made = inference[0]
            text = ctx.source(argument, 40)
            message = (
                f"`{text}` is an inference tensor (made under `torch.inference_mode()`) and the same compiled callable "
                f"also gets normal tensors: {torch_name()}'s tensor guard checks the dispatch key set, which has no "
                "autograd key for an inference tensor, so each kind compiles an entry of its own (2 compiles, each "
                f"reused); make it under `torch.no_grad()`, or `.clone()` it outside inference mode"
            )
            related = (
                Related(ctx.span(made.node), "made under `inference_mode` here"),
                Related(ctx.span(normal[0].node), "a normal tensor made here"),
            )
            yield UsageCandidate(RULE.code, ctx.span(argument), message, Severity.INFO, (site,), related=related)


def _fresh_tensor_binding(ctx: FileContext, table: Usage, handle_call: HandleCall, argument: ast.expr) -> NodeAt | None:
    """The assignment that made the tensor ``argument`` names, when it computes a new tensor (a ``torch`` function
    or a tensor method that never returns a view of its input, nor the input itself): whether it ran under
    ``inference_mode`` tells whether the tensor is an inference tensor. None when that cannot be told."""
    if not isinstance(argument, ast.Name):
        return None
    scope, here = scope_key(handle_call.at.scope), position(handle_call.call)
    binding = table.assignment_of(scope, argument.id, here)
    if binding is None:
        return None
    value = binding.node.value if isinstance(binding.node, ast.Assign) else None
    if not isinstance(value, ast.Call):
        return None
    func = value.func
    name = ctx.resolve(func) or ""
    if name.startswith("torch."):
        fresh = name.rpartition(".")[2] not in MAY_RETURN_INPUT and not name.startswith("torch.nn.")
    else:
        fresh = isinstance(func, ast.Attribute) and func.attr not in MAY_RETURN_INPUT and not func.attr.endswith("_")
    local = partial(_local_kind, ctx, table, scope, here)
    return binding if fresh and kind_of(value, ctx.resolve, local) == "tensor" else None


def _local_kind(ctx: FileContext, table: Usage, scope: str, here: tuple[int, int], name: str) -> ValueKind:
    value = table.value_of(scope, name, before=here)
    return kind_of(value, ctx.resolve) if value is not None else "unknown"


@dataclass(frozen=True, slots=True)
class _RequiresGradChange:
    node: ast.AST
    """The ``requires_grad_(...)`` call or ``p.requires_grad = ...`` assignment."""
    per_iteration: bool
    """Which parameters it changes follows the loop (``model.layers[epoch]``): a new set on every iteration."""
    toggles: bool
    """The value it sets follows the loop (``requires_grad_(epoch % 2 == 0)``)."""


def _output_fed_back(
    ctx: FileContext, table: Usage, handle_call: HandleCall, loop: Loop
) -> tuple[ast.Name, ast.stmt, ast.expr] | None:
    """An argument that the loop rebinds to what this compiled module returned (``x = model(x)``), with grad enabled,
    where the value before the loop is a tensor that does not require grad: the first call gets a tensor without
    ``requires_grad``, the next ones the module's output, which has it (its parameters require grad). With the
    rebinding statement and the first value."""
    if not handle_call.handle.module or not _runs_with_grad(ctx, handle_call.at):
        return None
    scope = scope_key(handle_call.at.scope)
    for argument in (*handle_call.call.args, *(k.value for k in handle_call.call.keywords)):
        if not isinstance(argument, ast.Name):
            continue
        rebinding = next(
            (
                node
                for node in ast.walk(loop)
                if isinstance(node, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == argument.id for t in node.targets)
            ),
            None,
        )
        if rebinding is None or not _keeps_grad_of(rebinding.value, handle_call.call):
            continue
        first = table.value_of(scope, argument.id, before=position(loop))
        if first is None or kind_of(first, ctx.resolve) != "tensor" or _asks_grad(first):
            continue
        return argument, rebinding, first
    return None


DROPS_GRAD = frozenset({"detach", "detach_", "data", "item", "tolist", "numpy", "requires_grad_"})


def _keeps_grad_of(value: ast.expr, call: ast.Call) -> bool:
    """``value`` is ``call``'s result, or made from it without detaching it (``model(x).relu()``)."""
    nodes = list(ast.walk(value))
    return any(node is call for node in nodes) and not any(
        isinstance(node, ast.Attribute) and node.attr in DROPS_GRAD for node in nodes
    )


def _asks_grad(value: ast.expr) -> bool:
    return any(isinstance(node, ast.keyword) and node.arg == "requires_grad" for node in ast.walk(value)) or any(
        isinstance(node, ast.Attribute) and node.attr == "requires_grad_" for node in ast.walk(value)
    )


def _runs_with_grad(ctx: FileContext, at: NodeAt) -> bool:
    """Grad mode is on where ``at`` runs: its function turns it on, or sets nothing and is module-level code or a
    function this file calls only from module-level code that sets nothing."""
    if at.grad:
        return at.grad == GRAD
    function = at.scope.function
    if function is None:
        return True
    name = getattr(function.node, "name", "")
    callers = [
        call
        for call in ctx.nodes(ast.Call)
        if isinstance(call.node, ast.Call) and isinstance(func := call.node.func, ast.Name) and func.id == name
    ]
    return bool(callers) and all(c.grad in ("", GRAD) and c.scope.function is None for c in callers)


def _fed_back_candidate(
    ctx: FileContext, handle_call: HandleCall, argument: ast.Name, rebinding: ast.stmt, first: ast.expr
) -> UsageCandidate:
    name = handle_call.handle.name
    message = (
        f"`{argument.id}` is fed back from what compiled `{name}` returned on the previous iteration, a tensor that "
        f"requires grad (grad mode is on and the module's parameters require grad), while the first call gets one "
        f"that does not: {torch_name()} guards `requires_grad` of every tensor input, so the second call compiles a "
        "second entry (2 compiles, each reused); run the loop under `torch.no_grad()` or feed back a `.detach()`ed "
        "tensor"
    )
    related = (
        Related(ctx.span(first), "the first input, without `requires_grad`"),
        Related(ctx.span(rebinding), "the output fed back here"),
    )
    return UsageCandidate(
        RULE.code, ctx.span(argument), message, Severity.INFO, (handle_call.handle.site,), related=related
    )


def _requires_grad_change(loop: Loop, handle_call: HandleCall) -> _RequiresGradChange | None:
    """A change, in ``loop``, of ``requires_grad`` on parameters of the module the loop calls compiled: through
    ``<module...>.requires_grad_(v)``, or on ``p`` of ``for p in <module...>.parameters()`` (``named_parameters``).
    A constant made before the call in the loop body is set once, before the first call: no change."""
    roots = {handle_call.handle.name, *handle_call.handle.site.names}
    bound = bound_in(loop)
    holders: dict[str, ast.expr] = {}
    for node in ast.walk(loop):
        if isinstance(node, ast.For) and isinstance(node.iter, ast.Call) and isinstance(node.iter.func, ast.Attribute):
            target = node.target.elts[-1] if isinstance(node.target, ast.Tuple) else node.target
            module = node.iter.func.value
            over_parameters = node.iter.func.attr in PARAMETER_ITERATORS and root_name(module)[0] in roots
            if over_parameters and isinstance(target, ast.Name):
                holders[target.id] = module
    for node in ast.walk(loop):
        which: ast.expr | None = None
        value: ast.expr | None = None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "requires_grad_":
            receiver = node.func.value
            which = receiver if root_name(receiver)[0] in roots else _held(receiver, holders)
            value = node.args[0] if node.args else None
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Attribute) and target.attr == "requires_grad":
                    which, value = _held(target.value, holders), node.value
        if which is None:
            continue
        per_iteration = bool(names_in(which) & bound)
        toggles = value is not None and bool(names_in(value) & bound)
        if per_iteration or toggles or position(node) > position(handle_call.call):
            return _RequiresGradChange(node, per_iteration, toggles)
    return None


PARAMETER_ITERATORS = frozenset({"parameters", "named_parameters"})


def _held(expr: ast.expr, holders: dict[str, ast.expr]) -> ast.expr | None:
    """The module whose parameters the loop variable ``expr`` runs over."""
    return holders.get(expr.id) if isinstance(expr, ast.Name) else None


def _requires_grad_candidate(ctx: FileContext, handle_call: HandleCall, change: _RequiresGradChange) -> UsageCandidate:
    text = ctx.source(change.node, 50)
    subject = f"`{text}` changes `requires_grad` of parameters of the compiled module between its calls"
    guard = f"{torch_name()} guards each parameter's `requires_grad` (`TENSOR_MATCH`)"
    related = (Related(ctx.span(handle_call.call), "the compiled module is called here, in the same loop"),)
    site = handle_call.handle.site
    if change.per_iteration:
        message = (
            f"{subject}, a different set on each iteration: {guard}, so every new set of trainable parameters "
            f"recompiles; {settings.PAST_LIMIT}"
        )
        return UsageCandidate(
            RULE.code, ctx.span(change.node), message, RULE.default_severity, (site,), related=related
        )
    cost = "one entry for each setting, reused afterwards" if change.toggles else "one extra compile"
    message = f"{subject}: {guard}, so the module compiles again for the new setting ({cost})"
    return UsageCandidate(RULE.code, ctx.span(change.node), message, Severity.INFO, (site,), related=related)


SIZED_FACTORIES = frozenset(
    {"torch.randn", "torch.rand", "torch.zeros", "torch.ones", "torch.empty", "torch.full", "torch.arange"}
)


def _sized_by_counter(
    ctx: FileContext, table: Usage, scope: str, here: tuple[int, int], arguments: Iterable[ast.expr], ints: set[str]
) -> tuple[ast.expr, str, bool] | None:
    """The first argument whose shape follows an int loop counter (``torch.randn(n, 4)``, ``x[:n]``, or a local
    assigned one), with the counter and whether it is an ``nn.Parameter`` of such a tensor."""
    for argument in arguments:
        value = argument
        if isinstance(argument, ast.Name):
            value = table.value_of(scope, argument.id, before=here) or argument
        parameter = isinstance(value, ast.Call) and ctx.resolve(value.func) in PARAMETER_CALLS and bool(value.args)
        if parameter:
            assert isinstance(value, ast.Call)
            value = value.args[0]
            if isinstance(value, ast.Name):
                value = table.value_of(scope, value.id, before=here) or value
        sizes: set[str] = set()
        if isinstance(value, ast.Call) and ctx.resolve(value.func) in SIZED_FACTORIES:
            shape = value.args[:1] if ctx.resolve(value.func) == "torch.full" else value.args
            shape = [*shape, *(k.value for k in value.keywords if k.arg == "size")]
            sizes = {name for size in shape for name in names_in(size)}
        elif isinstance(value, ast.Subscript) and any(isinstance(n, ast.Slice) for n in ast.walk(value.slice)):
            sizes = names_in(value.slice)
        counter = sorted(sizes & ints)
        if counter:
            return argument, counter[0], parameter
    return None


def _parameter_candidate(ctx: FileContext, handle_call: HandleCall, argument: ast.expr, counter: str) -> UsageCandidate:
    changes = (
        f"`{ctx.source(argument, 40)}` passes an `nn.Parameter` of a new shape on each iteration (its size follows "
        f"`{counter}`)"
    )
    message = (
        f"{changes}: {torch_name()} keeps the shapes of parameters static (`force_parameter_static_shapes`), whatever "
        f"`dynamic=` says, so each shape compiles once; {settings.PAST_LIMIT}"
    )
    return ParameterShape(RULE.code, ctx.span(argument), message, RULE.default_severity, (handle_call.handle.site,))


def _shape_candidate(
    ctx: FileContext, handle_call: HandleCall, argument: ast.expr, counter: str, by_setting: bool = False
) -> UsageCandidate:
    site = handle_call.handle.site
    changes = (
        f"`{ctx.source(argument, 40)}` gives the input a new shape on each iteration (its size follows `{counter}`)"
    )
    if by_setting:
        return ShapeUnderSettings(RULE.code, ctx.span(argument), changes, RULE.default_severity, (site,))
    message = (
        f"{changes}, and the compile site says `dynamic=False`: {torch_name()} guards every input's sizes and then "
        f"never makes them dynamic, so each shape compiles once; {settings.PAST_LIMIT}"
    )
    return UsageCandidate(
        RULE.code,
        ctx.span(argument),
        message,
        RULE.default_severity,
        (site,),
        related=(settings.compiled_with(("False", site), "dynamic"),),
    )


def _parameter_loop(loops: list[Loop]) -> tuple[ast.For | ast.AsyncFor, str] | None:
    """The innermost loop over a model's parameters (``for p in model.parameters()``, ``for p in group["params"]``,
    ``for name, p in model.named_parameters()``) and its parameter variable."""
    for loop in reversed(loops):
        if not isinstance(loop, ast.For | ast.AsyncFor):
            continue
        values, target = loop.iter, loop.target
        method = values.func.attr if isinstance(values, ast.Call) and isinstance(values.func, ast.Attribute) else ""
        if method == "named_parameters" and isinstance(target, ast.Tuple) and len(target.elts) == 2:
            target = target.elts[1]
        elif method != "parameters" and not (
            isinstance(values, ast.Subscript)
            and isinstance(values.slice, ast.Constant)
            and values.slice.value == "params"
        ):
            continue
        if isinstance(target, ast.Name):
            return loop, target.id
    return None


TORCH_SAME_SHAPE_FACTORIES = frozenset(f"torch.{name}" for name in SAME_SHAPE_FACTORIES)


def _shaped_like(ctx: FileContext, table: Usage, at: NodeAt, expr: ast.expr, parameter: str, depth: int = 12) -> str:
    """``"parameter"`` when ``expr`` (at the call ``at``) is the loop's parameter itself, ``"shaped"`` when it is a
    tensor of the parameter's shape made from it (``p.grad``, ``torch.zeros_like(p)``, ``p.grad.float() * 0.9``, a
    local assigned one on a path that reaches the call, or an entry the function assigns one:
    ``state["momentum_buffer"]``), else ``""``."""
    if depth == 0:
        return ""
    if isinstance(expr, ast.Name):
        if expr.id == parameter:
            return "parameter"
        values = table.values_reaching(expr.id, at)
        return "shaped" if any(_shaped_like(ctx, table, at, v, parameter, depth - 1) for v in values) else ""
    inner: list[ast.expr] = []
    if (
        isinstance(expr, ast.Subscript)
        and isinstance(expr.value, ast.Name)
        and isinstance(expr.slice, ast.Constant)
        and isinstance(expr.slice.value, str)
    ):
        inner = table.entries_assigned(expr.value.id, expr.slice.value, at)
    elif isinstance(expr, ast.Attribute) and expr.attr in SAME_SHAPE_ATTRIBUTES:
        inner = [expr.value]
    elif isinstance(expr, ast.Call) and ctx.resolve(expr.func) in TORCH_SAME_SHAPE_FACTORIES:
        inner = expr.args[:1]
    elif isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute):
        inner = [expr.func.value] if expr.func.attr in SAME_SHAPE_METHODS else []
    elif isinstance(expr, ast.BinOp) and isinstance(expr.op, ARITHMETIC):
        inner = [expr.left, expr.right]
    elif isinstance(expr, ast.IfExp):
        inner = [expr.body, expr.orelse]
    found = any(_shaped_like(ctx, table, at, part, parameter, depth - 1) for part in inner)
    return "shaped" if found else ""


def _per_parameter_shape(
    ctx: FileContext,
    table: Usage,
    handle_call: HandleCall,
    loops: list[Loop],
    arguments: Iterable[ast.expr],
    dynamic: str | None,
) -> Iterator[UsageCandidate]:
    """A call in a loop over a model's parameters that passes the parameter, or a tensor of its shape: each
    parameter brings its own shape."""
    looped = _parameter_loop(loops)
    if looped is None:
        return
    loop, parameter = looped
    for argument in arguments:
        shaped = _shaped_like(ctx, table, handle_call.at, argument, parameter)
        if not shaped or (shaped == "shaped" and dynamic == "True"):
            continue
        each = f"once per parameter of `{ctx.source(loop.iter, 40)}`"
        if shaped == "parameter":
            message = f"the parameter `{parameter}` itself is passed {each}"
        else:
            message = f"`{ctx.source(argument, 40)}`, shaped like the parameter `{parameter}`, is passed {each}"
        yield PerParameterShape(
            RULE.code,
            ctx.span(argument),
            message,
            Severity.INFO,  # how many distinct shapes a model has is not known here: often a handful
            (handle_call.handle.site,),
            related=(Related(ctx.span(loop.target), "the loop over parameters"),),
            parameter=shaped == "parameter",
            static_site=dynamic == "False",
        )
        return


@dataclass(frozen=True, slots=True)
class PerParameterShape(UsageCandidate):
    """A call made once per parameter of a model with the parameter (``parameter``), or a tensor of its shape: a
    parameter's shape stays static under torch's default ``force_parameter_static_shapes``, and any input's under
    ``dynamic=False`` (``static_site``) or ``automatic_dynamic_shapes = False``, so each distinct parameter shape
    compiles an entry (measured: ten shapes, 8 compiles and the limit; by default a gradient's shapes turn dynamic,
    3 compiles, not reported). How many distinct shapes the model has is not known here."""

    parameter: bool = False
    static_site: bool = False


@dataclass(frozen=True, slots=True)
class ShapeUnderSettings(UsageCandidate):
    """A shape that follows a loop counter at a site that leaves ``dynamic`` to torch: automatic dynamic makes it
    symbolic after one recompile (2 compiles, not reported) unless the project sets ``automatic_dynamic_shapes =
    False`` (measured: 8 compiles and the limit), which the link decides. ``message`` says what changes."""


@dataclass(frozen=True, slots=True)
class ParameterShape(UsageCandidate):
    """An ``nn.Parameter`` input whose shape follows a loop counter: static under torch's default
    ``force_parameter_static_shapes = True`` (measured: 8 compiles and the limit, with or without ``dynamic=True``),
    dynamic after one recompile where the project sets it to ``False`` (2 compiles, not reported)."""


def judge(candidate: UsageCandidate, index: WorkspaceIndex) -> Iterator[Finding]:
    if isinstance(candidate, PerParameterShape):
        yield from _judge_per_parameter(candidate, index)
        return
    if isinstance(candidate, ParameterShape):
        if settings.in_force(index, "force_parameter_static_shapes", "False", candidate.sites) is not None:
            return
    elif isinstance(candidate, ShapeUnderSettings):
        static = settings.in_force(index, "automatic_dynamic_shapes", "False", candidate.sites)
        if static is None:
            return
        message = (
            f"{candidate.message}, and `automatic_dynamic_shapes = False` keeps every size static: {torch_name()} "
            f"guards the input's sizes, so each shape compiles once; {settings.PAST_LIMIT}"
        )
        candidate = replace(candidate, message=message, related=(*candidate.related, settings.set_here(static)))
    yield from judge_usage(candidate, index)


def _judge_per_parameter(candidate: PerParameterShape, index: WorkspaceIndex) -> Iterator[Finding]:
    related = candidate.related
    if candidate.parameter and not candidate.static_site:
        if settings.in_force(index, "force_parameter_static_shapes", "False", candidate.sites) is not None:
            return
        why = f"{torch_name()} keeps parameter shapes static (`force_parameter_static_shapes`) whatever `dynamic=` says"
    elif candidate.static_site:
        why = f"the compile site says `dynamic=False` and {torch_name()} never makes its sizes dynamic"
        related = (*related, settings.compiled_with(("False", candidate.sites[0]), "dynamic"))
    else:
        static = settings.in_force(index, "automatic_dynamic_shapes", "False", candidate.sites)
        if static is None:
            return
        why = "`automatic_dynamic_shapes = False` keeps every size static"
        related = (*related, settings.set_here(static))
    each = f"{candidate.message}; {why}, so each distinct parameter shape compiles once"
    limit = settings.recompile_limit(index, candidate.sites)
    if limit.value is None or limit.value > RECOMPILE_LIMIT:
        message = f"{each} (one entry per distinct shape, within the project's {limit.named_recompile_limit}"
        message += f"; {limit.past()})" if limit.capped else ")"
        related = (*related, *limit.related)
    else:
        message = f"{each}; past {limit.value} distinct shapes, {settings.PAST_LIMIT}"
    yield from judge_usage(replace(candidate, message=message, related=related), index)


CHECK = Check(RULE.code, collect=collect, judge=judge)
