"""Which context code runs in: the grad mode a ``with`` statement or a decorator sets, and the tests Dynamo folds
(``torch.compiler.is_compiling()``). The walk asks these while it records nodes (``NodeAt.grad``,
``NodeAt.eager_only``), so checks read the context of a call instead of working it out again."""

from __future__ import annotations

import ast

from dynamo_lens.static.context import IS_COMPILING, FileContext

GRAD = "grad enabled"
VARIES = "a grad mode decided at run time"
NO_GRAD = "no_grad"
INFERENCE = "inference_mode"
_MODES = {
    "torch.no_grad": NO_GRAD,
    "torch.autograd.no_grad": NO_GRAD,
    "torch.autograd.grad_mode.no_grad": NO_GRAD,
    "torch.inference_mode": INFERENCE,
    "torch.autograd.inference_mode": INFERENCE,
    "torch.autograd.grad_mode.inference_mode": INFERENCE,
    "torch.enable_grad": GRAD,
    "torch.autograd.enable_grad": GRAD,
    "torch.set_grad_enabled": "set_grad_enabled",
    "torch.autograd.set_grad_enabled": "set_grad_enabled",
}


def grad_context(ctx: FileContext, expr: ast.expr) -> str | None:
    """The grad mode a context manager or decorator expression sets: :data:`NO_GRAD`, :data:`INFERENCE`,
    :data:`GRAD`, :data:`VARIES` (a flag known only at run time), or None for anything else."""
    call = expr if isinstance(expr, ast.Call) else None
    name = ctx.resolve(call.func if call is not None else expr)
    mode = _MODES.get(name or "")
    if mode != "set_grad_enabled":
        if mode == INFERENCE and call is not None and call.args:
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
        return GRAD if flag.value else NO_GRAD
    return VARIES


def compiling_test(test: ast.expr, ctx: FileContext) -> bool | None:
    """True for ``torch.compiler.is_compiling()`` (or ``torch._dynamo.is_compiling()``), False for its negation,
    None for any other test."""
    negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
    if negated:
        test = test.operand  # type: ignore[attr-defined]
    func = test.func if isinstance(test, ast.Call) else None
    last = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    if func is not None and last == "is_compiling" and ctx.resolve(func) in IS_COMPILING:
        return not negated
    return None
