"""DL206 · dynamo-reset-in-loop

## What it does
Flags `torch._dynamo.reset()` and `torch.compiler.reset()` evaluated inside a loop, or inside a function called from
a loop in the same file, when that loop also calls a compiled callable that was compiled outside it (so the reset
throws away exactly the code the loop is about to reuse).

## Why it matters
`reset()` drops every compiled cache entry of every function. The next call compiles from scratch, and because the
cache is empty this is a *first* compile, not a recompile: `TORCH_LOGS=recompiles` shows nothing and the recompile
limit is never reached. Measured on torch 2.13 (`backend="eager"`, 12 iterations, a reset before each call): 12
compiles with either spelling, against 1 without the reset. With Inductor each of those compiles costs seconds.

## Example
```python
compiled = torch.compile(model)
for batch in loader:
    torch._dynamo.reset()           # DL206: every step compiles from scratch
    compiled(batch)
```

## Use instead
Reset once, between independent experiments (or in test teardown), never per step. If the reset was meant to get
around the recompile limit, fix the recompiles instead (see `dynamo-lens run`).

## Known limitations
Functions called from a loop are followed one level, within one file. A reset under a condition inside the loop
(`if step % 1000 == 0:`) is still reported. A loop that does not call a compiled callable of
this file compiled outside it (one reset per experiment or per test, each compiling its own model; a benchmark
helper that resets and compiles) is not reported, nor is a reset in a file that compiles nothing.

## Fix safety
No automatic fix: where the reset belongs depends on why it was written.

## References
- `torch.compiler.reset`: https://docs.pytorch.org/docs/stable/generated/torch.compiler.reset.html
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from dynamo_lens.codes import Check, Rule
from dynamo_lens.model import Related, Severity
from dynamo_lens.static.context import FileContext
from dynamo_lens.static.semantic.usage import (
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

RULE = Rule(
    code="DL206",
    name="dynamo-reset-in-loop",
    summary="The Dynamo cache is reset on every iteration of a loop",
    default_severity=Severity.WARNING,
    source="static",
    docs_url="https://docs.pytorch.org/docs/stable/generated/torch.compiler.reset.html",
    confirmed_by=("DL501", "DL502"),
)


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
