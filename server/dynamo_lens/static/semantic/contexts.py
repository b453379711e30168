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


AUTOCAST = "autocast"
NO_AUTOCAST = "autocast off"
AUTOCAST_UNKNOWN = "an autocast state fixed at run time"
_AUTOCASTS = {
    "torch.autocast": 2,
    "torch.amp.autocast": 2,
    "torch.amp.autocast_mode.autocast": 2,
    "torch.cuda.amp.autocast": 0,
    "torch.cuda.amp.autocast_mode.autocast": 0,
    "torch.cpu.amp.autocast": 0,
    "torch.cpu.amp.autocast_mode.autocast": 0,
}
"""Autocast context managers → the position of their ``enabled`` argument."""


def autocast_context(ctx: FileContext, expr: ast.expr) -> str | None:
    """The autocast state a context manager or decorator expression sets: :data:`AUTOCAST` (enabled),
    :data:`NO_AUTOCAST` (``enabled=False``), :data:`AUTOCAST_UNKNOWN` (``enabled=use_amp``: a flag the scan cannot
    read), or None for anything else."""
    call = expr if isinstance(expr, ast.Call) else None
    position = _AUTOCASTS.get(ctx.resolve(call.func if call is not None else expr) or "")
    if position is None:
        return None
    enabled = None
    if call is not None:
        enabled = next((k.value for k in call.keywords if k.arg == "enabled"), None)
        if enabled is None and len(call.args) > position:
            enabled = call.args[position]
    if enabled is None:
        return AUTOCAST
    if isinstance(enabled, ast.Constant) and isinstance(enabled.value, bool):
        return AUTOCAST if enabled.value else NO_AUTOCAST
    return AUTOCAST_UNKNOWN


SET_STANCE = "torch.compiler.set_stance"
FORCE_EAGER = "force_eager"
"""The stance that runs every compiled callable eagerly. Measured on 2.13 (a module counter, the stance set at module
level before the first call, 12 calls): 0 compiles; a ``no_grad`` evaluation inside ``with set_stance("force_eager")``
between training calls: 1 compile."""


def forces_eager(ctx: FileContext, expr: ast.expr) -> bool:
    """``expr`` is ``torch.compiler.set_stance("force_eager")`` (as a ``with`` item or a decorator): compiled code
    runs eagerly inside."""
    if not isinstance(expr, ast.Call) or ctx.resolve(expr.func) != SET_STANCE:
        return False
    stance = expr.args[0] if expr.args else next((k.value for k in expr.keywords if k.arg == "stance"), None)
    return isinstance(stance, ast.Constant) and stance.value == FORCE_EAGER


CONTEXT_MANAGER_DECORATORS = frozenset({"contextlib.contextmanager", "contextlib.asynccontextmanager"})


def method_grad_context(
    ctx: FileContext, expr: ast.expr, cls: ast.ClassDef | None, self_name: str | None
) -> str | None:
    """The grad mode ``with self.<name>():`` sets when ``<name>`` is a ``@contextlib.contextmanager`` method of
    ``cls`` (the class whose method holds the ``with``) that enters a grad-mode context before it yields: ``with
    torch.no_grad(): yield``, or ``stack.enter_context(torch.no_grad())`` in an ``ExitStack`` (OLMo-core's
    ``_eval_batch_context``). None for anything else, and when the yield sits under a condition or in a loop."""
    if cls is None or self_name is None or not isinstance(expr, ast.Call):
        return None
    func = expr.func
    if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == self_name):
        return None
    for statement in cls.body:
        if (
            isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef)
            and statement.name == func.attr
            and any(ctx.resolve(d) in CONTEXT_MANAGER_DECORATORS for d in statement.decorator_list)
        ):
            return _grad_at_yield(ctx, statement.body, None) or None
    return None


def _grad_at_yield(ctx: FileContext, body: list[ast.stmt], mode: str | None) -> str | None:
    """The grad mode in force at the ``yield`` of a context-manager generator's ``body`` (``mode`` on entry)."""
    for statement in body:
        if isinstance(statement, ast.Expr) and isinstance(call := statement.value, ast.Call):
            entered = call.func
            if isinstance(entered, ast.Attribute) and entered.attr == "enter_context" and len(call.args) == 1:
                mode = grad_context(ctx, call.args[0]) or mode
        if not any(isinstance(node, ast.Yield | ast.YieldFrom) for node in ast.walk(statement)):
            continue
        if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Yield | ast.YieldFrom):
            return mode
        if isinstance(statement, ast.With | ast.AsyncWith):
            for item in statement.items:
                mode = grad_context(ctx, item.context_expr) or mode
            return _grad_at_yield(ctx, statement.body, mode)
        if isinstance(statement, ast.Try):
            return _grad_at_yield(ctx, statement.body, mode)
        return None  # the yield runs under a condition, in a loop, or inside an expression
    return None


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
