"""DL208 · autograd-state-varies

## What it does
Flags a compiled callable that is called both under a grad-mode context (`torch.no_grad()`,
`torch.inference_mode()`, `torch.enable_grad()`, `torch.set_grad_enabled(...)`) and outside it, in one file. The
finding sits on the call under the context that differs from the others.

## Why it matters
Grad mode is part of Dynamo's global-state guard. A call in another mode fails it (`GLOBAL_STATE changed:
grad_mode`) and compiles a second entry. Measured on torch 2.13 (`backend="eager"`, 12 calls alternating): 2
compiles for `no_grad`/grad, 2 for `inference_mode`/normal, 2 for inputs alternating `requires_grad=True/False`
(`TENSOR_MATCH`), and 2 when an inference tensor is passed to a function compiled for normal tensors. Each state gets
one entry that is then reused, so the cost is bounded and the finding is `info`. The failing guards carry no source
line; this finding names the call whose context differs.

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
Only `with` blocks in the same file are considered; decorators (`@torch.no_grad()` on a caller) and grad mode set
by callers in other files are not followed. Inputs with differing `requires_grad` are not detected statically.

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
from dynamo_lens.model import Related, Severity
from dynamo_lens.static.context import FileContext, NodeAt
from dynamo_lens.static.semantic.usage import HandleCall, UsageCandidate, judge_usage, position, scope_key, usage
from dynamo_lens.static.summary import CompileSite

RULE = Rule(
    code="DL208",
    name="autograd-state-varies",
    summary="A compiled callable is called under different grad modes: one compile per mode",
    default_severity=Severity.INFO,
    source="static",
    docs_url="https://docs.pytorch.org/docs/stable/compile/programming_model.recompilation.html",
    confirmed_by=("DL501", "DL502"),
)


GRAD = "grad enabled"
VARIES = "a grad mode decided at run time"
MODES = {
    "torch.no_grad": "no_grad",
    "torch.autograd.no_grad": "no_grad",
    "torch.autograd.grad_mode.no_grad": "no_grad",
    "torch.inference_mode": "inference_mode",
    "torch.autograd.inference_mode": "inference_mode",
    "torch.autograd.grad_mode.inference_mode": "inference_mode",
    "torch.enable_grad": GRAD,
    "torch.autograd.enable_grad": GRAD,
    "torch.set_grad_enabled": "set_grad_enabled",
    "torch.autograd.set_grad_enabled": "set_grad_enabled",
}


def collect(ctx: FileContext) -> Iterator[UsageCandidate]:
    table = usage(ctx)
    if not table.calls:
        return
    withs = list(ctx.nodes(ast.With, ast.AsyncWith))
    functions = {
        scope_key(at.scope) + ("." if scope_key(at.scope) else "") + node.name: node
        for at in ctx.nodes(ast.FunctionDef, ast.AsyncFunctionDef)
        if isinstance(node := at.node, ast.FunctionDef | ast.AsyncFunctionDef)
    }
    by_site: dict[CompileSite, list[tuple[HandleCall, str, ast.AST | None]]] = {}
    for handle_call in table.calls:
        mode, where = _mode(ctx, handle_call, withs, functions)
        by_site.setdefault(handle_call.handle.site, []).append((handle_call, mode, where))
    for site, calls in by_site.items():
        modes = {mode for _, mode, _ in calls}
        if len(modes) < 2 and VARIES not in modes:
            continue
        for handle_call, mode, where in calls:
            if mode == GRAD:
                continue
            others = sorted(m for m in modes if m != mode) or [GRAD]
            name = handle_call.handle.name
            if mode == VARIES:
                message = (
                    f"compiled `{name}` runs under {mode}: grad mode is part of Dynamo's `GLOBAL_STATE` guard, so "
                    "torch 2.13 compiles one entry per mode (2 compiles for grad on/off)"
                )
            else:
                message = (
                    f"compiled `{name}` runs under `{mode}` here and with {', '.join(others)} elsewhere: grad mode is "
                    "part of Dynamo's `GLOBAL_STATE` guard, so torch 2.13 compiles a second entry for this mode "
                    "(bounded: one entry per mode)"
                )
            related = (Related(ctx.span(where), f"`{mode}` starts here"),) if where is not None else ()
            yield UsageCandidate(
                RULE.code, ctx.span(handle_call.call), message, RULE.default_severity, (site,), related=related
            )


def _mode(
    ctx: FileContext,
    handle_call: HandleCall,
    withs: list[NodeAt],
    functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef],
) -> tuple[str, ast.AST | None]:
    """The grad mode the call runs under (innermost ``with`` of its function, else the function's decorator)."""
    here = position(handle_call.call)
    key = scope_key(handle_call.at.scope)
    best: tuple[tuple[int, int], str, ast.AST] | None = None
    for at in withs:
        node = at.node
        assert isinstance(node, ast.With | ast.AsyncWith)
        if scope_key(at.scope) != key or not (node.body[0].lineno <= here[0] <= (node.end_lineno or node.lineno)):
            continue
        for item in node.items:
            mode = _context_mode(ctx, item.context_expr)
            if mode is not None and (best is None or position(node) > best[0]):
                best = (position(node), mode, item.context_expr)
    if best is not None:
        return best[1], best[2]
    function = functions.get(key)
    if function is not None:
        for decorator in function.decorator_list:
            mode = _context_mode(ctx, decorator)
            if mode is not None:
                return mode, decorator
    return GRAD, None


def _context_mode(ctx: FileContext, expr: ast.expr) -> str | None:
    call = expr if isinstance(expr, ast.Call) else None
    name = ctx.resolve(call.func if call is not None else expr)
    mode = MODES.get(name or "")
    if mode != "set_grad_enabled":
        if mode == "inference_mode" and call is not None and call.args:
            flag = call.args[0]
            if isinstance(flag, ast.Constant) and flag.value is False:
                return GRAD
            if not isinstance(flag, ast.Constant):
                return VARIES
        return mode
    if call is None or not call.args:
        return None
    flag = call.args[0]
    if isinstance(flag, ast.Constant) and isinstance(flag.value, bool):
        return GRAD if flag.value else "no_grad"
    return VARIES


CHECK = Check(RULE.code, collect=collect, judge=judge_usage)
