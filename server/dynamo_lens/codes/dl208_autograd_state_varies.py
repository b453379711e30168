"""DL208 · autograd-state-varies

## What it does
Flags a compiled callable that is called both under a grad-mode context (`torch.no_grad()`,
`torch.inference_mode()`, `torch.enable_grad()`, `torch.set_grad_enabled(...)`, as a `with` block or as a decorator
of the calling function) and outside it, anywhere in the workspace: a validation function decorated with
`@torch.no_grad()` that calls the model the training loop calls, a module whose blocks were compiled in place. The
finding sits on the call under the context that differs from the others. Also flags a call in a loop that sets
`requires_grad` of what it passes (an argument, or the compiled module's parameters) to a value that changes between
iterations.

## Why it matters
Grad mode is part of Dynamo's global-state guard. A call in another mode fails it (`GLOBAL_STATE changed:
grad_mode`) and compiles a second entry. Measured on torch 2.13 (`backend="eager"`, 12 calls alternating): 2
compiles for `no_grad`/grad, 2 for `inference_mode`/normal, 2 for inputs alternating `requires_grad=True/False`
(`TENSOR_MATCH`), and 2 when an inference tensor is passed to a function compiled for normal tensors. Each state gets
one entry that is then reused, so the cost is bounded and the finding is `info`. Only calls that run the same code
share entries: a teacher and a student of two classes, compiled by one helper, compile one `forward` each whatever
their modes (2 compiles with the teacher under `no_grad` or not); of one class, 2 against 1. A call inside `with
torch.compiler.set_stance("force_eager")` (or a function decorated with it) runs the compiled code eagerly and adds
no entry (measured: 1 compile). The failing guards carry no source line; this finding names the call whose context
differs.

## Example
```python
compiled = torch.compile(model)
for x in loader:
    loss = compiled(x).sum()        # grad enabled
with torch.no_grad():
    compiled(x_val)                 # DL208: GLOBAL_STATE guard fails, second compile
```

## Use instead
Nothing is wrong with one entry per mode. To avoid compiling evaluation at all, evaluate with the uncompiled module;
to share one entry, evaluate under the same grad mode.

## Known limitations
The grad mode of a call is the one its own function sets (a `with` block around it, a decorator of the function, or a
`@contextlib.contextmanager` method of its class that enters a grad-mode context before it yields), else the one every
caller of the function sets, followed up to four levels of callers (a test calling a scoring helper calling the model; a
closure a function returns is called through the parameter it is passed to, in its file: a benchmark's timing helper); a
helper with one caller in grad mode, or reached only deeper, counts as running with grad enabled. Calling an object runs
its `forward` (or `__call__`): a task that calls its compiled model there runs it in the mode of the task's caller. A
`forward` that picks its compiled path by `self.training` is followed down both paths, so a call in eval mode may be
said to run the training path's entry. Inputs with differing `requires_grad` are detected where a loop around the call
sets `requires_grad` (`x.requires_grad_(flag)`, `x.requires_grad = flag`, `model.requires_grad_(flag)` on the compiled
module) to a value that can change between iterations; elsewhere they are not. A helper that compiles what it is given
(`update = compile_with_warmup(update)`, `score = compile_with_warmup(scorer)`) makes one compiled object per call:
calls of two such variables of one function are not compared, nor calls of wrappers of workspace modules whose classes
take `forward` from different classes. When what a wrapper wraps is not known (a module built by another library, a
helper that takes `*args`), its calls are compared with every other call of the site. A script's `main()` called at
module level is not a call in grad mode: the calls inside it are judged each in its own mode.

## Fix safety
No fix is offered.

## References
- PyTorch, "Dealing with recompilations": https://docs.pytorch.org/docs/stable/compile/programming_model.recompilation.html
- `torch/_dynamo/guards.py`: `GLOBAL_STATE`
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from dynamo_lens.codes import Check, Rule
from dynamo_lens.model import Finding, Related, Severity
from dynamo_lens.static.context import FileContext
from dynamo_lens.static.semantic.contexts import GRAD, VARIES
from dynamo_lens.static.semantic.global_state import StatePart, differing_states
from dynamo_lens.static.semantic.index import WorkspaceIndex
from dynamo_lens.static.semantic.program import (
    PlacedCall,
    compiled_callees,
    reset_around,
)
from dynamo_lens.static.semantic.usage import HandleCall, Loop, UsageCandidate, judge_usage, usage
from dynamo_lens.static.summary import CompileSite
from dynamo_lens.torch_facts import torch_name

RULE = Rule(
    code="DL208",
    name="autograd-state-varies",
    summary="A compiled callable is called under different grad modes: one compile per mode",
    default_severity=Severity.INFO,
    source="static",
    docs_url="https://docs.pytorch.org/docs/stable/compile/programming_model.recompilation.html",
    confirmed_by=("DL501", "DL502"),
)


GRAD_MODE = StatePart(
    "grad",
    GRAD,
    of=lambda call: call.grad,
    each_call=frozenset({VARIES}),
)
"""Grad mode as a part of the global state: ``set_grad_enabled(flag)`` with a flag the program flips (``phase ==
"train"``) runs both modes by itself."""


def judge_workspace(index: WorkspaceIndex) -> Iterator[Finding]:
    for found in differing_states(index, GRAD_MODE):
        yield _finding(index, found.site, found.shown, found.same, found.states)


def _finding(
    index: WorkspaceIndex, site: CompileSite, placed: PlacedCall, same: list[PlacedCall], modes: set[str]
) -> Finding:
    call = placed.call
    mode = call.grad
    direct = site in compiled_callees(index, placed)
    if not call.name:
        what = "the compiled callable runs" if direct else "this call runs compiled code"
    else:
        what = f"compiled `{call.name}` runs" if direct else f"`{call.name}(…)` runs compiled code"
    if mode == VARIES:
        message = (
            f"{what} under {mode}: grad mode is part of Dynamo's `GLOBAL_STATE` guard, so "
            f"{torch_name()} compiles one entry per mode (2 compiles for grad on/off)"
        )
    else:
        others = sorted(m for m in modes if m != mode) or [GRAD]
        cost = "bounded: one entry per mode"
        if reset_around(index, placed.path, placed.function):
            cost = "the Dynamo reset around it drops that entry, so it compiles again every time"
        message = (
            f"{what} under `{mode}` here and with {', '.join(others)} elsewhere: grad mode is "
            f"part of Dynamo's `GLOBAL_STATE` guard, so {torch_name()} compiles a second entry for this mode ({cost})"
        )
    related = [Related(call.grad_from, f"`{mode}` starts here")] if call.grad_from is not None else []
    related += [
        Related(other.call.span, f"also under `{mode}` (the same entry)") for other in same if other is not placed
    ]
    return index.finding(RULE, call.span, message, (site,), related=related[:4])


def collect(ctx: FileContext) -> Iterator[UsageCandidate]:
    """Calls in a loop that also sets ``requires_grad`` of what the call passes (an argument, or the compiled
    module's parameters through ``model.requires_grad_(...)``) to a value that changes between iterations: the
    tensor guard checks ``requires_grad``, so each setting compiles an entry of its own (measured: 2 compiles)."""
    table = usage(ctx)
    for handle_call in table.calls:
        loops = table.enclosing_loops(handle_call.at)
        if not loops or not handle_call.handle.runs_compiled:
            continue
        site = handle_call.handle.site
        call = handle_call.call
        passed = {a.id: a for a in (*call.args, *(k.value for k in call.keywords)) if isinstance(a, ast.Name)}
        modules = {h.name for h in table.handles.values() if h.site == site and h.module}
        flips = _requires_grad_flips(loops[0], set(passed) | modules)
        for name, flip in flips.items():
            yield _flip_candidate(ctx, handle_call, passed.get(name), name, flip)


def _requires_grad_flips(loop: Loop, names: set[str]) -> dict[str, ast.stmt]:
    """``name`` → the statement of ``loop`` that sets its ``requires_grad`` to a value that can differ between
    iterations: a non-constant value, or constants that differ (``x.requires_grad_(True)`` ... ``(False)``)."""
    found: dict[str, ast.stmt] = {}
    constants: dict[str, set[object]] = {}
    for statement in ast.walk(loop):
        if not isinstance(statement, ast.Expr | ast.Assign):
            continue
        target, value = _requires_grad_set(statement)
        if target is None or target not in names:
            continue
        seen = constants.setdefault(target, set())
        if isinstance(value, ast.Constant):
            seen.add(value.value)
        if not isinstance(value, ast.Constant) or len(seen) > 1:
            found.setdefault(target, statement)
    return found


def _requires_grad_set(statement: ast.Expr | ast.Assign) -> tuple[str | None, ast.expr | None]:
    """(``x``, value) for ``x.requires_grad_(value)`` (no argument: ``True``) or ``x.requires_grad = value``."""
    if isinstance(statement, ast.Expr):
        call = statement.value
        if (
            isinstance(call, ast.Call)
            and isinstance(func := call.func, ast.Attribute)
            and func.attr == "requires_grad_"
            and isinstance(func.value, ast.Name)
        ):
            value = call.args[0] if call.args else next((k.value for k in call.keywords), ast.Constant(True))
            return func.value.id, value
        return None, None
    [target] = statement.targets if len(statement.targets) == 1 else [None]
    if isinstance(target, ast.Attribute) and target.attr == "requires_grad" and isinstance(target.value, ast.Name):
        return target.value.id, statement.value
    return None, None


def _flip_candidate(
    ctx: FileContext, handle_call: HandleCall, argument: ast.Name | None, name: str, flip: ast.stmt
) -> UsageCandidate:
    what = f"`{name}` gets" if argument is not None else f"the parameters of `{name}` get"
    message = (
        f"{what} `requires_grad` set to a value that changes between iterations (line {flip.lineno}) before "
        f"this call of compiled `{handle_call.handle.name}`: {torch_name()} guards `requires_grad` of every tensor "
        "input (`TENSOR_MATCH`), so each setting compiles an entry of its own (2 in all, each reused)"
    )
    return UsageCandidate(
        RULE.code,
        ctx.span(argument if argument is not None else handle_call.call),
        message,
        Severity.INFO,
        (handle_call.handle.site,),
        related=(Related(ctx.span(flip), "`requires_grad` set here"),),
    )


CHECK = Check(RULE.code, collect=collect, judge=judge_usage, judge_workspace=judge_workspace)
