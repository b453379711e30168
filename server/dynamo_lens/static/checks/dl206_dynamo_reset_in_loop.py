"""DL206: ``torch._dynamo.reset()`` / ``torch.compiler.reset()`` run on every iteration of a loop that reuses a
compiled callable."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from dynamo_lens.model import Related
from dynamo_lens.rules.dl206_dynamo_reset_in_loop import RULE
from dynamo_lens.static.checks import Check
from dynamo_lens.static.checks._usage import (
    RESETS,
    HandleCall,
    Loop,
    Usage,
    UsageCandidate,
    call_named,
    judge_usage,
    scope_key,
    usage,
)
from dynamo_lens.static.context import FileContext


def collect(ctx: FileContext) -> Iterator[UsageCandidate]:
    if "reset" not in ctx.text or not ctx.compile_sites:
        return
    table = usage(ctx)
    for at in ctx.nodes(ast.Call):
        call = call_named(ctx, at, RESETS)
        if call is None:
            continue
        loops = table.enclosing_loops(at)
        function = at.scope.function
        helper = getattr(function.node, "name", "") if function is not None else ""
        if loops:
            reused = _reused_in(table, loops[-1], scope_key(at.scope))
            where = "on every iteration of this loop"
        elif helper and not any(site.scope == scope_key(at.scope) for site in ctx.compile_sites):
            reused = _reused_around_calls_of(table, helper)
            where = f"on every call of `{helper}()`, which a loop calls"
        else:
            continue
        if reused is None:
            continue  # the loop does not reuse a compiled callable: e.g. one reset per experiment
        name = reused.handle.name
        message = (
            f"`{ctx.source(call.func)}()` {where}, which also calls compiled `{name}`: the reset drops every "
            "compiled entry, so each iteration compiles from scratch (torch 2.13: 12 compiles for 12 steps, and "
            "`TORCH_LOGS=recompiles` shows none)"
        )
        related = (Related(ctx.span(reused.call), f"compiled `{name}` is called again here"),)
        yield UsageCandidate(
            RULE.code, ctx.span(call), message, RULE.default_severity, (reused.handle.site,), related=related
        )


def _reused_in(table: Usage, loop: Loop, scope: str) -> HandleCall | None:
    """A call, inside ``loop``, of a compiled callable that was compiled outside it."""
    start, end = loop.lineno, loop.end_lineno or loop.lineno
    for handle_call in table.calls:
        line = handle_call.call.lineno
        site_line = handle_call.handle.site.span.line
        if scope_key(handle_call.at.scope) == scope and start <= line <= end and not start <= site_line <= end:
            return handle_call
    return None


def _reused_around_calls_of(table: Usage, helper: str) -> HandleCall | None:
    """For each loop that calls ``helper``: a compiled callable the same loop reuses."""
    for loop_scope, loops in table.loops.items():
        for loop in loops:
            calls_helper = any(
                isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == helper
                for node in ast.walk(loop)
            )
            if calls_helper:
                reused = _reused_in(table, loop, loop_scope)
                if reused is not None:
                    return reused
    return None


CHECK = Check(RULE.code, collect=collect, judge=judge_usage)
