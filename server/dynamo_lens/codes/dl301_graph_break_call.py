"""DL301 · graph-break-call

## What it does
Flags a call inside compiled code (a compiled function, a compiled module's `forward`, or a method or function
reached from them) that Dynamo cannot put in a graph, and names the graph-break type torch reports for it (measured on
2.13):

| call | graph-break type |
|---|---|
| `print(...)` | "Failed to trace builtin operator" |
| `t.item()`; `int(t)`, `float(t)`, `bool(t)` on a tensor | "Unsupported Tensor.item() call ..." |
| `t.tolist()` of an integer tensor (both rows if the dtype is unknown) | "Data dependent operator" |
| `t.tolist()` of a floating tensor | "Tensor.tolist() with non-integer tensor" |
| `logger.info(...)` and the other `logging.Logger` methods | "logging.Logger method not supported ..." |
| `logging.info(...)` and the other module-level `logging` functions | "Unsupported python_type() call" |
| `warnings.warn`, `time.time`, `time.perf_counter`, `time.monotonic` | "Attempted to call function marked as skipped" |
| `copy.deepcopy(t)` | "Attempted to copy.deepcopy a tensor" |
| `torch.nonzero(t)`, `t.nonzero(as_tuple=True)`, one-argument `torch.where(mask)` | "Dynamic shape operator" |
| `torch.equal(a, b)`, `torch.allclose(a, b)` | "Data dependent operator" |
| `repr(t)` | "repr() on tensor" |
| `range(n)` with a tensor `n` | "Failed to trace builtin operator" |
| `loss.backward()` | "Unsupported Tensor.backward() call" |
| `torch.autograd.grad(...)` | "using `torch.autograd.grad` with ..." (unless `trace_autograd_ops = True`) |
| `t.is_inference()`, `torch.is_inference(t)` | "Encountered tensor.is_inference() during tracing" |
| a `torch.distributed` collective with `async_op=True` | "async_op=True for distributed collectives" |
| `torch.distributed.P2POp(...)` | "P2P compilation disabled for P2POp construction" |
| `with torch.device(...):` | "Unsupported context manager" (and the rest of the function runs eagerly) |
| `with LOCK:` on a module-level `threading` lock | "Unsupported context manager" (the function runs eagerly) |
| `LOCK.acquire()`, `LOCK.release()` on a module-level `threading` lock | "Unsupported method call" |
| `HANDLE = t.register_hook(fn)` into a `global` | "Storing Tensor hook handle in globals" (runs eagerly) |
| `self.rnn(x)` on an `nn.LSTM`, `nn.GRU`, `nn.RNN` (or one a variable chose) | "Attempted to wrap RNN, GRU, or LSTM" |
| `t[mask]` read through a boolean tensor (`logits[labels != -100]`) | "Dynamic shape operator" |
| `torch.unique(t)`, `masked_select`, `repeat_interleave` by a tensor, no `output_size=` | "Dynamic shape operator" |
| `torch._dynamo.graph_break()` | "Call to `torch._dynamo.graph_break()`" (a break on purpose) |
| `f(...)` of a `@torch.compiler.disable`d function | "Skip calling `torch.compiler.disable()`d ..." |
| `self.m(...)` of a `@torch.compiler.disable`d method | "Skip inlining `torch.compiler.disable()`d ..." |
| `copy.copy(t)` | "torch.* op returned non-Tensor" |
| `t.requires_grad = ...` | "setattr() on Tensor.requires_grad" |

A break the code asks for (`graph_break()`, a disabled callee) is an info: a cost to know about, not a mistake, except
in a loop. A message quotes the type with the id that the registry of the torch it describes
(`torch/_dynamo/graph_break_registry.json`, read from the user's torch) gives it: torch renumbers the ids between
releases (on 2.14 they are no longer sequential). Where that registry cannot be read, it quotes the type alone and
says so.

## Why it matters
At a graph break Dynamo ends the graph, runs the call in Python and resumes in a new frame
(`torch_dynamo_resume_in_<fn>_at_<line>`), which has its own guards and its own recompiles. Each break costs a round
trip through Python (and, for `.item()` on an accelerator, a device synchronisation), and prevents fusion across
it. A break inside a loop makes Dynamo give up on the whole frame.

When every compile that reaches the call passes `fullgraph=True`, the finding says what torch does there: the first
call that reaches it raises `torch._dynamo.exc.Unsupported` (a warning, even in a branch only the first call takes).
`fullgraph=True` also implies `capture_scalar_outputs` and `capture_dynamic_output_shape_ops` on 2.13, so `.item()`,
`nonzero()` and boolean-mask indexing are traced there: no finding (measured by two oracle fixtures).

## Example
```python
@torch.compile
def step(x):
    y = torch.relu(x)
    print("step", y.shape)         # DL301: GB0059
    scale = y.sum().item()         # DL301: GB0124
    return y / scale
```

## Use instead
Keep values as tensors (`y / y.sum()`); log outside the compiled region, or register the function in
`torch._dynamo.config.reorderable_logging_functions`; for `.item()`, set
`torch._dynamo.config.capture_scalar_outputs = True` (the scalar becomes a symbolic value in the graph); for
`nonzero`, `torch._dynamo.config.capture_dynamic_output_shape_ops = True`, or three-argument `torch.where` (a fixed
shape).

## Settings
Measured on 2.13: under `capture_scalar_outputs = True` Dynamo traces `.item()`, `int(t)`, `float(t)` and `tolist()`
of integer tensors (a `bool(t)` that steers a branch still breaks, GB0170); under
`capture_dynamic_output_shape_ops = True` it traces `nonzero` and one-argument `torch.where`. The scan reads
`torch._dynamo.config.<flag> = True` and `torch._dynamo.config.patch(<flag>=True)` in the workspace, and
`os.environ["TORCHDYNAMO_CAPTURE_SCALAR_OUTPUTS"] = "1"` (or `..._CAPTURE_DYNAMIC_OUTPUT_SHAPE_OPS`) at module level
above any compile of its file: Dynamo reads those variables once, when the first compile imports it. Where every
program that runs the compile site sets the flag first (at module level of the site's file or of a file it imports,
above the site in its own function, or as a `patch` decorator around it) the call is not reported; where only some
program sets it (a training recipe that calls a shared compile helper), the finding is a hint that points at the
setting. `tolist()` stays a hint even then where the code does not show the tensor's dtype (`torch.arange` of ints,
`.long()`, `.float()`, `dtype=...`); of a floating tensor it is still a warning (GB0109, measured).

## Known limitations
Whether a value is a tensor is inferred from how it was made (a `torch.*` call, a tensor method, an argument
annotated `torch.Tensor`, or one every call of the compiled function or module in its file passes a tensor):
`int(n)` on a plain Python number is not reported. `t.numpy()` is not reported: with
NumPy installed and `trace_numpy` on (the default) Dynamo traces it. f-strings, `id()`, `len()` and `isinstance()`
on tensors do not break and are not reported. A logger is recognised when its name is bound to
`logging.getLogger(...)` or to a library's `get_logger(...)` helper, and the module never binds it to anything else
(a no-op object that stands in for the logger unless an environment variable asks for logging traces without a
break). Calls are followed into functions of the same workspace that the compiled code calls directly; functions
decorated with `torch.compiler.disable` are not traced; a call of one is reported in the file as written
(`f(...)`, `self.m(...)`) and, across files, wherever the workspace model resolves the callee to a disabled function
or method of another file (measured: GB0098 at the call of an imported disabled helper; across files, a call made
or reached only under a condition is not reported). A call that runs only under a condition (its own `if`, or a
call made conditionally on the way from the compile site, or a parameter the compiled call passes as
`n if self.rope_type == "mrope" else None` when the statement needs it not to be `None`) is a hint: whether the
program takes that branch is decided by its configuration and inputs, which a scan cannot see. The exception is a
branch only the first call takes: its test is on an attribute the instance leaves `__init__` passing by a literal
(`if self.first_batch:` with `self.first_batch = True`, `if self.table is None:` with `self.table = None`) and the
branch itself changes it. That breaks the graph once, on the first call (measured on 2.13; the next call recompiles
without the branch), so it is an info. A recurrent module built from a class held in a variable
(`self.net = network_klass(dim, hidden)`, with `partial(nn.GRU if use_gru else nn.LSTM, ...)` as the default) is
reported only when every class the workspace can put there is `nn.RNN`, `nn.GRU` or `nn.LSTM`; where it may also be
another layer, or something the scan cannot follow, the call is left alone.

## Fix safety
No automatic fix: moving a call out of the compiled region changes when it runs, and `capture_scalar_outputs`
changes how every `.item()` in the program is compiled.

## References
- Graph-break registry: https://meta-pytorch.github.io/compile-graph-break-site/
- `torch/_dynamo/graph_break_registry.json` in the installed torch; `torch/_dynamo/config.py`: `capture_scalar_outputs`
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from dataclasses import replace
from functools import partial

from dynamo_lens.codes import Check, Rule
from dynamo_lens.model import Finding, Related, Severity, Span
from dynamo_lens.static import exprs
from dynamo_lens.static.context import FileContext, NodeAt
from dynamo_lens.static.semantic.bodies import (
    FunctionBody,
    InsideCompiledCandidate,
    function_bodies,
    judge,
)
from dynamo_lens.static.semantic.evaluate import NO_ENV, Env, External, FunctionValue, MethodValue, Slot
from dynamo_lens.static.semantic.index import WorkspaceIndex
from dynamo_lens.static.semantic.values import TensorInference
from dynamo_lens.static.summary import CallSite, CompileSite, FunctionSummary, MethodSummary
from dynamo_lens.torch_facts import (
    ASYNC_COLLECTIVE,
    AUTOGRAD_GRAD,
    BACKWARD,
    DATA_DEPENDENT,
    DATA_SIZED,
    DEEPCOPY,
    DEVICE_CONTEXT,
    DISABLED_CALL,
    DISABLED_METHOD,
    HOOK_HANDLE_GLOBAL,
    IS_INFERENCE,
    ITEM,
    LOCK_CONTEXT,
    LOCK_METHOD,
    LOGGER,
    LOGGING,
    MASK_INDEX,
    NONZERO,
    P2P,
    PRINT,
    RANGE_OF_TENSOR,
    RANGE_OF_TENSOR_ITEM,
    RANGE_OF_TENSOR_ITEM_SINCE,
    REPEATS_BY_TENSOR,
    REPR,
    REQUIRES_GRAD_SET,
    RNN,
    SHALLOW_COPY,
    SKIPPED,
    TOLIST,
    TOLIST_FLOAT,
    TOLIST_INTEGER,
    USER_GRAPH_BREAK,
    GraphBreak,
    break_in_loop,
    describes_since,
    raised_under_fullgraph,
    torch_name,
)

RULE = Rule(
    code="DL301",
    name="graph-break-call",
    summary="A call inside compiled code that Dynamo cannot trace: the graph breaks here",
    default_severity=Severity.WARNING,
    source="static",
    docs_url="https://meta-pytorch.github.io/compile-graph-break-site/",
    confirmed_by=("DL503",),
)


COMPILER_DISABLE = frozenset({"torch.compiler.disable", "torch._dynamo.disable"})
LOGGER_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical", "log"})
LOGGING_FUNCTIONS = frozenset(f"logging.{name}" for name in LOGGER_METHODS)
GET_LOGGER = "logging.getLogger"
LOGGER_FACTORIES = frozenset({"getLogger", "get_logger"})
"""Last names of calls that return a ``logging.Logger``: the stdlib's, and the ``get_logger`` helpers libraries wrap
around it (``transformers.utils.logging.get_logger``)."""
SKIPPED_FUNCTIONS = frozenset({"warnings.warn", "time.time", "time.perf_counter", "time.monotonic"})
DATA_DEPENDENT_FUNCTIONS = frozenset({"torch.equal", "torch.allclose"})
COLLECTIVES = frozenset(
    {"all_reduce", "all_gather", "all_gather_into_tensor", "reduce_scatter", "reduce_scatter_tensor", "all_to_all",
     "all_to_all_single", "broadcast", "reduce", "gather", "scatter", "barrier", "send", "recv", "isend", "irecv"}
)  # fmt: skip
"""``torch.distributed`` functions that take ``async_op``."""
DATA_SIZED_FUNCTIONS = frozenset({"torch.unique", "torch.masked_select"})
DATA_SIZED_METHODS = frozenset({"unique", "masked_select", "repeat_interleave"})
IMPORTABLE = frozenset(
    {"deepcopy", "copy", "nonzero", "equal", "allclose", "where", "grad", "is_inference", "graph_break"}
    | DATA_SIZED_METHODS
    | {f.rpartition(".")[2] for f in SKIPPED_FUNCTIONS}
)
RECURRENT_MODULES = frozenset({"torch.nn.LSTM", "torch.nn.GRU", "torch.nn.RNN"})
CHOSEN_MODULE = "module_attribute"
"""Data key of a candidate call of ``self.<attr>`` whose module class a variable chose: the attribute."""
BUILTINS = frozenset({"print", "int", "float", "bool", "str", "repr", "range", "P2POp"}) | IMPORTABLE | COLLECTIVES
ATTRIBUTES = LOGGER_METHODS | {"item", "tolist", "backward", "P2POp", "device"} | IMPORTABLE | COLLECTIVES
"""Last names of the calls that may break: the shape test before any name is resolved."""


def collect(ctx: FileContext) -> Iterator[InsideCompiledCandidate]:
    loggers: frozenset[str] | None = None
    rnn_attributes: dict[str, frozenset[str]] | None = None
    chosen_attributes: dict[str, frozenset[str]] | None = None
    disabled: frozenset[str] | None = None
    for body in function_bodies(ctx):
        calls = body.memoised("DL301-shape", None, partial(_shaped_like_breaks, body))
        breaks: list[tuple[ast.expr, ast.AST, GraphBreak]] = [
            *body.memoised("DL301-masks", None, partial(_mask_reads, ctx, body)),
            *body.memoised("DL301-requires-grad", None, partial(_requires_grad_writes, ctx, body)),
        ]
        if rnn_attributes is None:
            rnn_attributes = {}
            for found_in_block in ctx.per_block("DL301-rnn", partial(_rnn_attributes, ctx)):
                for owner, attrs in found_in_block.items():
                    rnn_attributes[owner] = rnn_attributes.get(owner, frozenset()) | attrs
        owner = body.qualname.rpartition(".")[0]
        recurrent = rnn_attributes.get(owner)
        if recurrent:
            breaks += [(call, call, RNN) for call in body.calls if _calls_self_attribute(body, call, recurrent)]
        if chosen_attributes is None:
            chosen_attributes = {}
            for found_in_block in ctx.per_block("DL301-chosen", partial(_chosen_attributes, ctx)):
                for owner_name, attrs in found_in_block.items():
                    chosen_attributes[owner_name] = chosen_attributes.get(owner_name, frozenset()) | attrs
        chosen = chosen_attributes.get(owner, frozenset()) - (recurrent or frozenset())
        for call in body.calls if chosen else ():
            if _calls_self_attribute(body, call, chosen):
                # an RNN only if what the attribute holds says so (:func:`_judge`); it starts no in-loop skip here
                assert isinstance(call.func, ast.Attribute)
                chosen_call = _candidate(ctx, body, call, call, RNN)
                yield replace(chosen_call, data=(*chosen_call.data, (CHOSEN_MODULE, call.func.attr)))
        breaks += [(item, statement, LOCK_CONTEXT) for statement, item in _lock_contexts(ctx, body)]
        breaks += [(call, call, LOCK_METHOD) for call in body.calls if _is_lock_call(ctx, body, call)]
        breaks += [(statement.value, statement, HOOK_HANDLE_GLOBAL) for statement in _hook_handles_kept(body)]
        if disabled is None:
            disabled = frozenset().union(*ctx.per_block("DL301-disabled", partial(_disabled_defs, ctx)))
        if disabled:
            breaks += [(call, call, found) for call in body.calls if (found := _disabled_call(body, call, disabled))]
        if calls:
            if loggers is None:
                loggers = _always_loggers(ctx.per_block("DL301-loggers", partial(_logger_names, ctx)))
            found_calls = body.memoised(RULE.code, loggers, partial(_breaks, ctx, body, calls, loggers))
            breaks += [(call, call, found) for call, found in found_calls]
        in_loop = False
        for node, key, found in sorted(breaks, key=lambda b: (b[0].lineno, b[0].col_offset)):
            if in_loop and id(key) in body.in_loop:
                continue  # Dynamo gave up on the frame at the first break in a loop: this one is never traced
            in_loop = in_loop or id(key) in body.in_loop
            yield _candidate(ctx, body, node, key, found)


def _rnn_attributes(ctx: FileContext, nodes: Mapping[type[ast.AST], list[NodeAt]]) -> dict[str, frozenset[str]]:
    """Class qualified name → its attributes that a method of one block assigns a ``torch.nn`` RNN, GRU or LSTM
    (``self.rnn = nn.LSTM(...)``)."""
    found: dict[str, set[str]] = {}
    for at in nodes.get(ast.Assign, ()):
        node = at.node
        assert isinstance(node, ast.Assign)
        function = at.scope.function
        if function is None or not isinstance(node.value, ast.Call):
            continue
        if ctx.resolve(node.value.func) not in RECURRENT_MODULES:
            continue
        for target in node.targets:
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
                found.setdefault(function.qualname.rpartition(".")[0], set()).add(target.attr)
    return {owner: frozenset(attrs) for owner, attrs in found.items()}


def _chosen_attributes(ctx: FileContext, nodes: Mapping[type[ast.AST], list[NodeAt]]) -> dict[str, frozenset[str]]:
    """Class qualified name → its attributes that a method of one block assigns a module built from a class held
    in a variable (``self.net = network_klass(dim, hidden)``): what that class is, the workspace's values tell."""
    found: dict[str, set[str]] = {}
    for at in nodes.get(ast.Assign, ()):
        node = at.node
        assert isinstance(node, ast.Assign)
        function = at.scope.function
        value = node.value
        if function is None or not isinstance(value, ast.Call) or not isinstance(value.func, ast.Name):
            continue
        if ctx.resolve(value.func) is not None:
            continue  # an import or a definition of the file: `_rnn_attributes` reads those
        for target in node.targets:
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
                found.setdefault(function.qualname.rpartition(".")[0], set()).add(target.attr)
    return {owner: frozenset(attrs) for owner, attrs in found.items()}


def _judge(candidate: InsideCompiledCandidate, index: WorkspaceIndex) -> Iterator[Finding]:
    """:func:`judge`, for a call of a module chosen by a variable only when every module the attribute can hold is
    an RNN, GRU or LSTM (``partial(nn.GRU if use_gru else nn.LSTM, ...)``): one that may be anything else, or
    something the scan cannot tell, is left alone."""
    attribute = dict(candidate.data).get(CHOSEN_MODULE)
    if attribute is not None:
        owner = (candidate.span.path, candidate.function.rpartition(".")[0])
        held = {v for v in index.evaluator.attribute(owner, attribute) if not isinstance(v, Slot)}
        recurrent = {v for v in held if isinstance(v, External) and v.instance and v.dotted in RECURRENT_MODULES}
        if not held or held != recurrent:
            return
    yield from judge(candidate, index)


LOCKS = frozenset({"threading.Lock", "threading.RLock", "threading.Semaphore", "threading.BoundedSemaphore"})


def _lock_contexts(ctx: FileContext, body: FunctionBody) -> Iterator[tuple[ast.With, ast.expr]]:
    """``with LOCK:`` where ``LOCK`` is a module-level name bound only to a ``threading`` lock."""
    for statement in body.statements:
        if not isinstance(statement, ast.With):
            continue
        for item in statement.items:
            name = item.context_expr
            if isinstance(name, ast.Name) and body.reads_global(name.id) and _is_lock(ctx, name.id):
                yield statement, name


def _hook_handles_kept(body: FunctionBody) -> Iterator[ast.Assign]:
    """``HANDLE = t.register_hook(fn)`` where ``HANDLE`` is a global of the function (declared ``global``)."""
    for statement in body.statements:
        if not isinstance(statement, ast.Assign) or not isinstance(value := statement.value, ast.Call):
            continue
        func = value.func
        hook = isinstance(func, ast.Attribute) and func.attr == "register_hook"
        if hook and all(isinstance(t, ast.Name) and body.reads_global(t.id) for t in statement.targets):
            yield statement


def _is_lock_call(ctx: FileContext, body: FunctionBody, call: ast.Call) -> bool:
    """``LOCK.acquire()`` or ``LOCK.release()`` where ``LOCK`` is a module-level name bound only to a lock."""
    func = call.func
    return (
        isinstance(func, ast.Attribute)
        and func.attr in ("acquire", "release")
        and isinstance(func.value, ast.Name)
        and body.reads_global(func.value.id)
        and _is_lock(ctx, func.value.id)
    )


def _is_lock(ctx: FileContext, name: str) -> bool:
    values = [b.value for b in ctx.module_bindings if b.name == name]
    return bool(values) and all(
        isinstance(v, exprs.Call) and isinstance(v.func, exprs.Named) and v.func.ref.dotted in LOCKS for v in values
    )


def _disabled_defs(ctx: FileContext, nodes: Mapping[type[ast.AST], list[NodeAt]]) -> frozenset[str]:
    """Qualified names of the module-level functions and methods of one block decorated with
    ``torch.compiler.disable`` (or ``torch._dynamo.disable``): Dynamo never traces them."""
    found: set[str] = set()
    for at in nodes.get(ast.FunctionDef, ()):
        node = at.node
        assert isinstance(node, ast.FunctionDef)
        if at.scope.kind == "function":
            continue  # a nested def: called through its enclosing function's locals, not looked up here
        for decorator in node.decorator_list:
            target = decorator.func if isinstance(decorator, ast.Call) else decorator
            if ctx.resolve(target) in COMPILER_DISABLE:
                found.add(f"{at.scope.qualname}.{node.name}" if at.scope.qualname else node.name)
    return frozenset(found)


def _disabled_call(body: FunctionBody, call: ast.Call, disabled: frozenset[str]) -> GraphBreak | None:
    """``f(...)`` of a disabled module-level function of this file (not shadowed by a local ``f``), or
    ``self.m(...)`` of a disabled method of the class ``body`` is a method of."""
    func = call.func
    if isinstance(func, ast.Name):
        return DISABLED_CALL if func.id in disabled and body.reads_global(func.id) else None
    owner = body.qualname.rpartition(".")[0]
    if isinstance(func, ast.Attribute) and f"{owner}.{func.attr}" in disabled:
        return DISABLED_METHOD if _calls_self_attribute(body, call, frozenset({func.attr})) else None
    return None


def _calls_self_attribute(body: FunctionBody, call: ast.Call, attrs: frozenset[str]) -> bool:
    """``self.<attr>(...)`` for one of ``attrs``, in a method (``self`` is its first parameter)."""
    func = call.func
    positional = [*body.node.args.posonlyargs, *body.node.args.args]
    return (
        isinstance(func, ast.Attribute)
        and func.attr in attrs
        and isinstance(func.value, ast.Name)
        and bool(positional)
        and func.value.id == positional[0].arg
    )


def _mask_reads(ctx: FileContext, body: FunctionBody) -> list[tuple[ast.expr, ast.AST, GraphBreak]]:
    """``t[mask]`` with a boolean tensor ``mask`` (read, not assigned to): the result's size depends on the data,
    so Dynamo breaks the graph as for ``nonzero`` (measured: GB0036; ``t[mask] = v`` traces)."""
    found: list[tuple[ast.expr, ast.AST, GraphBreak]] = []
    for statement, node in body.expressions(lambda line: "[" in line):
        if not isinstance(node, ast.Subscript) or not isinstance(node.ctx, ast.Load):
            continue
        if body.tensors(ctx).is_bool_tensor(node.slice):
            found.append((node, statement, MASK_INDEX))
    return found


def _requires_grad_writes(ctx: FileContext, body: FunctionBody) -> list[tuple[ast.expr, ast.AST, GraphBreak]]:
    """``t.requires_grad = ...`` on a tensor: Dynamo cannot change which tensors are leaves in the middle of a graph
    (measured: GB0206)."""
    found: list[tuple[ast.expr, ast.AST, GraphBreak]] = []
    for statement, node in body.expressions(lambda line: ".requires_grad" in line):
        if (
            isinstance(node, ast.Attribute)
            and node.attr == "requires_grad"
            and isinstance(node.ctx, ast.Store)
            and body.tensors(ctx).is_tensor(node.value)
        ):
            found.append((node, statement, REQUIRES_GRAD_SET))
    return found


def _shaped_like_breaks(body: FunctionBody) -> list[ast.Call]:
    return [call for call in body.calls if _may_break(call)]


def _breaks(
    ctx: FileContext, body: FunctionBody, calls: list[ast.Call], loggers: frozenset[str]
) -> list[tuple[ast.Call, GraphBreak]]:
    """The calls of ``body`` that break the graph, with the registry entry of each."""
    found = []
    contexts = {
        id(item.context_expr)
        for statement in body.statements
        if isinstance(statement, ast.With | ast.AsyncWith)
        for item in statement.items
    }
    for call in calls:
        if isinstance(call.func, ast.Attribute) and call.func.attr == "device":
            if id(call) in contexts and ctx.resolve(call.func) == "torch.device":
                found.append((call, DEVICE_CONTEXT))  # `torch.device(...)` anywhere else is an ordinary value
            continue
        tensors = body.tensors(ctx) if _needs_tensors(call) else None
        graph_break = _classify(call, ctx, loggers, tensors)
        if graph_break is not None:
            found.append((call, graph_break))
    return found


def _may_break(call: ast.Call) -> bool:
    """Cheap shape test before any name resolution: the callee's last name is one we know breaks."""
    func = call.func
    if isinstance(func, ast.Name):
        return func.id in BUILTINS
    return isinstance(func, ast.Attribute) and func.attr in ATTRIBUTES


def _needs_tensors(call: ast.Call) -> bool:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id in ("int", "float", "bool", "str", "repr", "range", "copy", "deepcopy", "repeat_interleave")
    return isinstance(func, ast.Attribute) and func.attr in ("deepcopy", "copy", "tolist", *DATA_SIZED_METHODS)


def _classify(
    call: ast.Call, ctx: FileContext, loggers: frozenset[str], tensors: TensorInference | None
) -> GraphBreak | None:
    func = call.func
    if isinstance(func, ast.Attribute) and ctx.resolve(func) is None:
        method = func.attr
        if method == "item" and not call.args and not call.keywords:
            return ITEM
        if method == "tolist" and not call.args and not call.keywords:
            integer = tensors.integer(func.value) if tensors is not None else None
            return TOLIST if integer is None else TOLIST_INTEGER if integer else TOLIST_FLOAT
        if method == "nonzero":
            return NONZERO
        if method == "backward" and not call.args:
            return BACKWARD
        if method == "is_inference" and not call.args and not call.keywords:
            return IS_INFERENCE
        if method in DATA_SIZED_METHODS and tensors is not None and tensors.is_tensor(func.value):
            if method != "repeat_interleave":
                return DATA_SIZED
            return REPEATS_BY_TENSOR if _repeats_by_tensor(call, 0, tensors) else None
        if method in LOGGER_METHODS and _is_logger(func.value, ctx, loggers):
            return LOGGER
        return None
    dotted = ctx.resolve(func)
    if dotted is None:
        if isinstance(func, ast.Name) and func.id not in ctx.aliases and func.id not in ctx.local_defs.get("", {}):
            return _builtin(func.id, call, tensors)
        return None
    if dotted in LOGGING_FUNCTIONS:
        return LOGGING
    if dotted in SKIPPED_FUNCTIONS:
        return SKIPPED
    if dotted.startswith("torch.distributed.") and any(
        k.arg == "async_op" and not (isinstance(k.value, ast.Constant) and k.value.value is False)
        for k in call.keywords
    ):
        return ASYNC_COLLECTIVE
    if dotted == "torch.distributed.P2POp":
        return P2P
    if dotted == "torch.is_inference":
        return IS_INFERENCE
    if dotted == "torch.autograd.grad":
        return AUTOGRAD_GRAD
    if dotted == "torch.nonzero" or (dotted == "torch.where" and len(call.args) == 1 and not call.keywords):
        return NONZERO  # `torch.where(mask)` is `nonzero(as_tuple=True)`: a data-dependent output size
    if dotted in DATA_DEPENDENT_FUNCTIONS:
        return DATA_DEPENDENT
    if dotted == "torch._dynamo.graph_break":
        return USER_GRAPH_BREAK
    copied = call.args and tensors is not None and tensors.is_tensor(call.args[0])
    if dotted == "copy.deepcopy" and copied:
        return DEEPCOPY
    if dotted == "copy.copy" and copied:
        return SHALLOW_COPY
    if dotted == "torch.repeat_interleave" and tensors is not None:
        # data-sized when `repeats` is a tensor; `repeat_interleave(repeats)` always
        return REPEATS_BY_TENSOR if len(call.args) == 1 or _repeats_by_tensor(call, 1, tensors) else None
    if dotted in DATA_SIZED_FUNCTIONS:
        return DATA_SIZED
    return None


def _repeats_by_tensor(call: ast.Call, index: int, tensors: TensorInference) -> bool:
    """``repeat_interleave`` given a tensor of repeats (its argument ``index`` or ``repeats=``) and no
    ``output_size=``: the output size is the sum of the repeats (measured: int repeats, or ``output_size=``, trace)."""
    if any(k.arg == "output_size" for k in call.keywords):
        return False
    repeats = next((k.value for k in call.keywords if k.arg == "repeats"), None)
    if repeats is None and index < len(call.args):
        repeats = call.args[index]
    return repeats is not None and tensors.is_tensor(repeats)


def _asynchronous(keyword: ast.keyword) -> bool:
    """``async_op=True`` (or a value that may be true)."""
    value = keyword.value
    return keyword.arg == "async_op" and not (isinstance(value, ast.Constant) and value.value is False)


def _builtin(name: str, call: ast.Call, tensors: TensorInference | None) -> GraphBreak | None:
    if name == "print":
        return PRINT
    if name == "range":
        if tensors is None or not any(tensors.is_tensor(a) for a in call.args):
            return None
        return RANGE_OF_TENSOR_ITEM if describes_since(RANGE_OF_TENSOR_ITEM_SINCE) else RANGE_OF_TENSOR
    if len(call.args) != 1 or tensors is None or not tensors.is_tensor(call.args[0]):
        return None
    if name in ("int", "float", "bool"):
        return ITEM
    if name == "str":
        return PRINT
    return REPR if name == "repr" else None


def _is_logger(owner: ast.AST, ctx: FileContext, loggers: frozenset[str]) -> bool:
    if isinstance(owner, ast.Name):
        return owner.id in loggers
    return isinstance(owner, ast.Call) and _is_logger_factory(owner.func, ctx)


def _is_logger_factory(func: ast.AST, ctx: FileContext) -> bool:
    if ctx.resolve(func) == GET_LOGGER:
        return True
    last = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return last in LOGGER_FACTORIES


def _logger_names(ctx: FileContext, nodes: Mapping[type[ast.AST], list[NodeAt]]) -> tuple[set[str], set[str]]:
    """In one block of the file: the names bound to ``logging.getLogger(...)`` (or a ``get_logger(...)`` helper),
    and the module-level names bound to anything else."""
    loggers: set[str] = set()
    others: set[str] = set()
    for at in (*nodes.get(ast.Assign, ()), *nodes.get(ast.AnnAssign, ())):
        statement = at.node
        value = getattr(statement, "value", None)
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        names = {t.id for t in targets if isinstance(t, ast.Name)}
        if isinstance(value, ast.Call) and _is_logger_factory(value.func, ctx):
            loggers |= names
        elif at.scope.function is None:
            others |= names
    return loggers, others


def _always_loggers(per_block: list[tuple[set[str], set[str]]]) -> frozenset[str]:
    """The names every binding of the file's module level makes a logger: torchchat's ``logger = NoOpLogger() if
    os.getenv("LOG_LEVEL") is None else logging.getLogger(__name__)`` is a no-op object Dynamo traces through."""
    loggers = set().union(*(found for found, _ in per_block))
    return frozenset(loggers - set().union(*(others for _, others in per_block)))


def _candidate(
    ctx: FileContext, body: FunctionBody, node: ast.expr, key: ast.AST, found: GraphBreak
) -> InsideCompiledCandidate:
    """The finding for ``node`` (a call, or a masked read), whose context (loop, condition) is that of ``key``: the
    call itself, or the statement around the read."""
    text = ctx.source(node, 60)
    message = f"`{text}` breaks the graph when compiled ({torch_name()}: {found.quoted()}); {found.advice}"
    in_loop = id(key) in body.in_loop
    if in_loop:
        message += break_in_loop()
    return InsideCompiledCandidate(
        code=RULE.code,
        span=ctx.span(node),
        function=body.qualname,
        message=message,
        severity=Severity.INFO if found.deliberate and not in_loop else RULE.default_severity,
        data=(
            ("gb_id", found.installed_id()),
            ("call", text),
            ("in_loop", str(in_loop).lower()),
            ("skips_function", str(in_loop or found.skips_function).lower()),
        ),
        only_if_taken=True,
        guarded=id(key) in body.guarded,
        requires=body.requires.get(id(key), ()),
        first_call=body.first_call.get(id(key), ()),
        # `bool(t)` under capture_scalar_outputs still breaks where the value steers a branch (GB0170, measured)
        lifted_by="" if isinstance(node, ast.Call) and _is_bool_call(node) else found.lifted_by,
        lifted_partly=found.lifted_partly,
        raised_message=raised_under_fullgraph(f"`{text}` is a call", found),
    )


def _is_bool_call(call: ast.Call) -> bool:
    return isinstance(call.func, ast.Name) and call.func.id == "bool"


def _reads_settings(candidate: InsideCompiledCandidate, index: WorkspaceIndex) -> bool:
    """The candidate's judgement depends on settings the workspace may make anywhere (``capture_scalar_outputs``
    in another program's file), and on which programs can run them, or on what the callers of a constructor pass
    it (the class a chosen module is built from): never carried from one link to the next."""
    return bool(candidate.lifted_by) or CHOSEN_MODULE in dict(candidate.data)


def judge_workspace(index: WorkspaceIndex) -> Iterator[Finding]:
    """Calls, in compiled code, of a ``torch.compiler.disable``d function or method defined in another file (the
    file's own are candidates of :func:`collect`): Dynamo skips the callee and breaks the graph at the call."""
    disabled = _disabled_elsewhere_names(index)
    if not disabled:
        return
    found: dict[Span, tuple[CallSite, GraphBreak, Span, str, list[CompileSite]]] = {}
    for site in index.compile_sites():
        for node in index.reach.reached_nodes(site):
            if not index.reach.always_runs(site, node):
                continue  # reached only under a condition on the way: whether it runs is the program's business
            path = node[1][0]
            summary: MethodSummary | FunctionSummary | None
            env = NO_ENV
            if node[0] == "method":
                owner = index.class_summary(node[1])
                summary = owner.method(node[2]) if owner is not None else None
                env = index.evaluator.self_env(node[1])
            else:
                summary = index.files.function_summary(node[1])
            if summary is None:
                continue
            for call in summary.calls:
                if call.name not in disabled or call.guarded:
                    continue
                if call.span in found:
                    found[call.span][4].append(site)
                    continue
                callee = _disabled_callee(index, call, path, env)
                if callee is not None:
                    found[call.span] = (call, *callee, [site])
    for span, (call, graph_break, defined, name, sites) in found.items():
        message = (
            f"`{call.name}(...)` calls `{name}`, which `torch.compiler.disable` keeps out of compiled code: the call "
            f"breaks the graph ({torch_name()}: {graph_break.quoted()}); {graph_break.advice}"
        )
        severity = Severity.INFO
        if call.in_loop:
            message, severity = message + break_in_loop(), RULE.default_severity
        related = (Related(defined, f"`{name}` is disabled here"),)
        data = {"gb_id": graph_break.installed_id(), "in_loop": str(call.in_loop).lower()}
        yield index.finding(RULE, span, message, sites, severity=severity, related=related, data=data)


def _disabled_elsewhere_names(index: WorkspaceIndex) -> frozenset[str]:
    """The names of the disabled functions and methods of the workspace: the calls worth evaluating."""
    names: set[str] = set()
    for summary in index.summaries:
        names.update(f.qualname.rpartition(".")[2] for f in summary.functions if f.disabled)
        names.update(m.name for c in summary.classes for m in c.methods if m.disabled)
    return frozenset(names)


def _disabled_callee(index: WorkspaceIndex, call: CallSite, path: str, env: Env) -> tuple[GraphBreak, Span, str] | None:
    """The break a call makes when its callee is a disabled function or method of another file, with where that is
    defined and its name."""
    for value in index.evaluator.evaluate(call.func, path, env):
        if isinstance(value, FunctionValue) and value.key[0] != path:
            function = index.files.function_summary(value.key)
            if function is not None and function.disabled:
                return DISABLED_CALL, function.span, value.key[1]
        elif isinstance(value, MethodValue):
            method = index.find_method(value.cls, value.name)
            if method is not None and method[1].disabled and method[0][0] != path:
                return DISABLED_METHOD, method[1].span, f"{method[0][1]}.{value.name}"
    return None


CHECK = Check(
    RULE.code,
    collect=collect,
    judge=_judge,
    judge_workspace=judge_workspace,
    judged_locally=True,
    reads_workspace=_reads_settings,
)
