"""DL401 · hook-added-after-compile

## What it does
Flags `register_forward_hook`, `register_forward_pre_hook`, `register_full_backward_hook` and
`register_full_backward_pre_hook` on a submodule of a compiled module (`model.layer.register_forward_hook(...)`),
or on a module that a compiled function calls, after the compiled code has already run; also a call, after the
compiled code ran, of a function of the same file that registers such hooks on submodules of the module it is given
(`add_hooks(model)` looping over `module.blocks`), reported at that call.

## Why it matters
Dynamo does not guard hook dictionaries that were empty when it compiled
(`torch._dynamo.config.skip_nnmodule_hook_guards = True`, documented as unsafe). A hook added afterwards to a
module whose call was traced into the graph is never seen: no recompile, the hook does not run, and the output
silently differs from eager. Measured on torch 2.13 (`backend="eager"`, a hook counting its calls in a tensor):

* forward hook, forward pre-hook and full backward hook added to a *submodule* after the first call: 0 firings
  over the next calls (eager: one per call), with `torch.compile(model)` and with `model.compile()`;
* a hook on a module that a compiled function calls: 0 firings (eager 5);
* a hook on the top-level module of `torch.compile(nn.Sequential(...))`: 0 firings: for `torch.nn` classes
  `torch.compile` traces the module's own `__call__`, hooks included;
* not reported, because they behaved like eager: hooks registered before the first call; a hook on the top-level
  module of a *workspace* class compiled with `torch.compile(model)` or `model.compile()` (its own hooks run
  outside the compiled frame); adding a second hook to a module that already had one (the non-empty dict is
  guarded: one recompile); `nn.Sequential(...).compile()`, whose calls were not compiled at all.

Under `torch._dynamo.config.skip_nnmodule_hook_guards = False` the hook dicts are guarded: in each of the cases
above the next call recompiled once (2 compiles) and the hooks fired as often as in eager. A project that sets it
gets an `info` that names the setting.

## Example
```python
compiled = torch.compile(model)
compiled(x)
model.encoder.register_forward_hook(save_activation)    # DL401: never called by the compiled code
compiled(x)
```

## Use instead
Register hooks before the first call of the compiled module, or call `torch._dynamo.reset()` after registering them
(one new compile), or set `torch._dynamo.config.skip_nnmodule_hook_guards = False` (more guards on every call).

## Known limitations
"After the compiled code has run" is decided by statement order within one function: a call of the compiled module
or function earlier in the same function, or an enclosing loop that calls it. Hooks registered through helper
functions are followed one level deep: module-level functions of the same file, and functions imported from
another file of the workspace that register hooks on submodules of the parameter the compiled module is passed to
(`for child in module.children(): child.register_forward_hook(...)`).

## Fix safety
The fix "Guard module hooks" sets `torch._dynamo.config.skip_nnmodule_hook_guards = False` below the imports of the
compile site's file. It is unsafe: every compiled module then checks its hook dicts on every call (more guard work),
and each later hook registration costs one recompile. Moving a hook registration is not offered: it changes which
calls the hook observes.

## References
- `torch/_dynamo/config.py`: `skip_nnmodule_hook_guards`
- PyTorch, "torch.compile and nn.Module hooks": https://docs.pytorch.org/docs/stable/torch.compiler_nn_module.html
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from dynamo_lens.codes import Check, Rule
from dynamo_lens.model import Finding, Fix, Related, Severity
from dynamo_lens.static import exprs
from dynamo_lens.static.context import FileContext, NodeAt
from dynamo_lens.static.semantic import settings
from dynamo_lens.static.semantic.evaluate import FunctionValue
from dynamo_lens.static.semantic.program import calls
from dynamo_lens.static.semantic.usage import (
    Usage,
    UsageCandidate,
    after_compiled_run,
    judge_usage,
    method_calls,
    reach_of,
    root_name,
    usage,
)
from dynamo_lens.static.summary import CallSite
from dynamo_lens.torch_facts import MODULE_HOOK_REGISTRATIONS, torch_name

if TYPE_CHECKING:
    from dynamo_lens.static.semantic.index import WorkspaceIndex

RULE = Rule(
    code="DL401",
    name="hook-added-after-compile",
    summary="A module hook is registered after the compiled code ran: compiled calls silently ignore it",
    default_severity=Severity.WARNING,
    source="static",
    docs_url="https://docs.pytorch.org/docs/stable/torch.compiler_nn_module.html",
    fix_title="Register the hook before the first compiled call",
    confirmed_by=("DL505",),
)


HOOKS = MODULE_HOOK_REGISTRATIONS


def collect(ctx: FileContext) -> Iterator[UsageCandidate]:
    table = usage(ctx)
    if not table.handles:
        return
    yield from _imported_helper_calls(ctx, table)
    for at, call, func in method_calls(ctx, HOOKS):
        reach = reach_of(table, at, func.value)
        if reach is None:
            yield from _through_helper(table, at, func)
            continue
        if not reach.inside:
            continue
        earlier = table.ran_before(set(reach.sites), at)
        if earlier is None:
            continue
        registers = f"`{func.attr}` on `{ctx.source(func.value, 40)}`"
        found = after_compiled_run(ctx, RULE, call, "", reach, earlier)
        yield _skipped(found, registers, earlier.handle.name, "this hook")


@dataclass(frozen=True, slots=True)
class SkippedHooks(UsageCandidate):
    """Hooks registered after compiled code ran: what the project's ``skip_nnmodule_hook_guards`` makes of them is
    decided when the workspace is linked. ``registers`` says what registers them, ``ran`` names the compiled callable
    that ran first."""

    registers: str = ""
    ran: str = ""


def _skipped(found: UsageCandidate, registers: str, ran: str, hooks: str) -> SkippedHooks:
    message = (
        f"{registers} after compiled `{ran}` already ran: {torch_name()} does not guard hook dicts that were "
        f"empty when it compiled (`skip_nnmodule_hook_guards`), so the compiled code never calls {hooks}: no "
        "recompile, no error, and results silently differ from eager"
    )
    return SkippedHooks(
        found.code,
        found.span,
        message,
        found.severity,
        found.sites,
        related=found.related,
        registers=registers,
        ran=ran,
    )


GUARD_HOOKS = "Guard module hooks (skip_nnmodule_hook_guards = False)"


@dataclass(frozen=True, slots=True)
class HelperCall(SkippedHooks):
    """A call, after compiled code ran, of a function imported from another file that is passed a compiled module
    (``attach_probes(model, store)``): the link finds out whether that function registers hooks on submodules of
    the parameter it is passed (``place``: a position or a keyword)."""

    place: int | str = 0
    argument: str = ""


def _imported_helper_calls(ctx: FileContext, table: Usage) -> Iterator[UsageCandidate]:
    """Calls of imported functions (``attach_probes(model)``, ``probes.attach(model)``) that pass a compiled module
    after compiled code ran: candidates the link keeps only when the function registers hooks on its submodules."""
    for at in ctx.nodes(ast.Call):
        call = at.node
        assert isinstance(call, ast.Call)
        ref = ctx.ref(call.func) if isinstance(call.func, ast.Name | ast.Attribute) else None
        if ref is None or ref.is_local or ref.dotted.partition(".")[0] in ("torch", "builtins"):
            continue
        places: list[tuple[int | str, ast.expr]] = [
            (i, a) for i, a in enumerate(call.args) if not isinstance(a, ast.Starred)
        ]
        places += [(k.arg, k.value) for k in call.keywords if k.arg is not None]
        for place, argument in places:
            reach = reach_of(table, at, argument) if isinstance(argument, ast.Name | ast.Attribute) else None
            earlier = table.ran_before(set(reach.sites), at) if reach is not None else None
            if reach is None or earlier is None:
                continue
            found = after_compiled_run(ctx, RULE, call, "", reach, earlier)
            yield HelperCall(
                found.code,
                found.span,
                "",
                found.severity,
                found.sites,
                related=found.related,
                ran=earlier.handle.name,
                place=place,
                argument=ctx.source(argument, 30),
            )
            break


def _registered_by_callee(index: WorkspaceIndex, candidate: HelperCall) -> tuple[str, CallSite] | None:
    """The function of another file the call runs and its call that registers a hook on a submodule of the parameter
    the compiled module is passed to."""
    path = candidate.span.path
    summary = index.summary(path)
    placed = next((p for p in calls(summary) if p.call.span == candidate.span), None) if summary else None
    if placed is None:
        return None
    for value in index.evaluator.evaluate(placed.call.func, path):
        if not isinstance(value, FunctionValue) or value.key[0] == path:
            continue  # a function of this file is followed where it is defined
        function = index.files.function_summary(value.key)
        if function is None:
            continue
        place = candidate.place
        param = place if isinstance(place, str) else function.params[place] if place < len(function.params) else None
        for inner in function.calls:
            func = inner.func
            if isinstance(func, exprs.Attr) and func.attr in HOOKS and _submodule_of(func.value) == param:
                return value.key[1], inner
    return None


def _submodule_of(expr: exprs.Expr) -> str | None:
    """The parameter whose submodule a lowered receiver names (``module.encoder``, the variable of ``for m in
    module.children()``), or None (the parameter itself, or anything else)."""
    steps = 0
    while True:
        expr = exprs.without_identity(expr)
        if isinstance(expr, exprs.OneOf):
            found = {_submodule_of(option) for option in expr.options} - {None}
            return found.pop() if len(found) == 1 else None
        if isinstance(expr, exprs.Attr | exprs.Item):
            expr, steps = expr.value, steps + 1
        elif isinstance(expr, exprs.Call) and isinstance(expr.func, exprs.Attr) and not expr.args:
            expr, steps = expr.func.value, steps + 1  # `module.children()`
        elif isinstance(expr, exprs.Param):
            return expr.name if steps else None
        else:
            return None


def judge(candidate: UsageCandidate, index: WorkspaceIndex) -> Iterator[Finding]:
    """Under ``skip_nnmodule_hook_guards = False`` the hook dicts are guarded: the next call recompiles and runs the
    hooks (measured: 2 compiles, the hooks fire as often as in eager), a bounded cost; otherwise the finding offers
    that setting."""
    if isinstance(candidate, HelperCall):
        registered = _registered_by_callee(index, candidate)
        if registered is None:
            return
        name, hook = registered
        func = hook.func
        assert isinstance(func, exprs.Attr)
        registers = f"`{name}(...)` registers `{func.attr}` on submodules of `{candidate.argument}`"
        shown = _skipped(candidate, registers, candidate.ran, "these hooks")
        candidate = replace(shown, related=(*shown.related, Related(hook.span, "the hook is registered here")))
    if isinstance(candidate, SkippedHooks):
        guarded = settings.in_force(index, "skip_nnmodule_hook_guards", "False", candidate.sites)
        if guarded is not None:
            message = (
                f"{candidate.registers} after compiled `{candidate.ran}` already ran, and the project sets "
                f"`skip_nnmodule_hook_guards = False`: {torch_name()} guards the modules' hook dicts, so the next call "
                "recompiles (one more entry) and runs the hooks"
            )
            related = (*candidate.related, settings.set_here(guarded))
            candidate = replace(candidate, message=message, severity=Severity.INFO, related=related)
        else:
            edit = settings.config_edit(index, candidate.sites[0].span.path, "skip_nnmodule_hook_guards", "False")
            if edit is not None:
                candidate = replace(candidate, fixes=(Fix(GUARD_HOOKS, (edit,)),))
    yield from judge_usage(candidate, index)


def _through_helper(table: Usage, at: NodeAt, func: ast.Attribute) -> Iterator[UsageCandidate]:
    """A hook registered by a function of this file on submodules of its parameter (``for m in module.blocks:
    m.register_forward_hook(...)``), reported at each call of the function that passes a compiled module after
    compiled code ran."""
    function = at.scope.function
    if function is None or function.parent is None or function.parent.kind != "module":
        return
    param = _submodule_param(table, at, func.value, function.params)
    if param is None:
        return
    node = function.node
    assert isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    positional = [a.arg for a in (*node.args.posonlyargs, *node.args.args)]
    ctx = table.ctx
    for call_at in ctx.nodes(ast.Call):
        call = call_at.node
        assert isinstance(call, ast.Call)
        if not isinstance(call.func, ast.Name) or call.func.id != node.name:
            continue
        argument = next((k.value for k in call.keywords if k.arg == param), None)
        index = positional.index(param) if param in positional else len(call.args)
        if argument is None and index < len(call.args):
            argument = call.args[index]
        if argument is None:
            continue
        reach = reach_of(table, call_at, argument)
        earlier = table.ran_before(set(reach.sites), call_at) if reach is not None else None
        if reach is None or earlier is None:
            continue
        registers = (
            f"`{node.name}(...)` registers `{func.attr}` on submodules of `{ctx.source(argument, 30)}` (line "
            f"{func.lineno})"
        )
        found = after_compiled_run(ctx, RULE, call, "", reach, earlier)
        found = replace(found, related=(*found.related, Related(ctx.span(func), "the hook is registered here")))
        yield _skipped(found, registers, earlier.handle.name, "these hooks")


def _submodule_param(table: Usage, at: NodeAt, receiver: ast.expr, params: frozenset[str]) -> str | None:
    """The parameter whose submodules ``receiver`` names: ``module.encoder``, or the variable of a loop over
    ``module.blocks`` / ``module.modules()`` around ``at`` (the parameter itself holds no hooks Dynamo traces)."""
    root, steps = root_name(receiver)
    if root is None:
        return None
    if root in params:
        return root if steps else None
    for loop in table.enclosing_loops(at):
        if isinstance(loop, ast.For | ast.AsyncFor) and isinstance(loop.target, ast.Name) and loop.target.id == root:
            iterable = loop.iter
            if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Attribute):
                iterable = iterable.func.value  # `module.modules()`, `module.named_children()`
            owner, _ = root_name(iterable)
            return owner if owner in params else None
    return None


CHECK = Check(RULE.code, collect=collect, judge=judge)
