"""DL206 · dynamo-reset-in-loop

## What it does
Flags `torch._dynamo.reset()` and `torch.compiler.reset()` evaluated inside a loop, or inside a function called from
a loop in the same file, when that loop also calls a compiled callable that was compiled outside it (so the reset
throws away exactly the code the loop is about to reuse). Also a loop that resets and then compiles, on every
iteration, something it does not rebind and calls (`compiled = torch.compile(model)` then `compiled(x)`,
`torch.compile(f)(x)`, `model.compile()` then `model(x)`): the same code compiled from scratch each time (measured:
12 compiles for 12 iterations in each form), where a loop that builds a new model per iteration is left alone.

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
from dynamo_lens.model import Finding, Related, Severity
from dynamo_lens.static.context import RESETS, FileContext
from dynamo_lens.static.semantic.evaluate import FunctionValue, MethodValue
from dynamo_lens.static.semantic.index import WorkspaceIndex
from dynamo_lens.static.semantic.program import PlacedCall, calls, reached_sites
from dynamo_lens.static.semantic.usage import (
    HandleCall,
    Loop,
    Usage,
    UsageCandidate,
    bound_in,
    call_named,
    judge_usage,
    names_in,
    scope_key,
    site_call,
    usage,
)
from dynamo_lens.static.summary import CallSite, CompileSite
from dynamo_lens.torch_facts import torch_name

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
        if not loops:
            continue  # a reset in a function that a loop calls: judged across the workspace (judge_workspace)
        reused = _reused_in(table, loops[-1], scope_key(at.scope))
        where = "on every iteration of this loop"
        if reused is None:
            recompiled = _recompiled_in(ctx, table, loops[-1], scope_key(at.scope))
            if recompiled is not None:
                yield _compiled_again(ctx, call, recompiled)
            continue  # else the loop does not reuse a compiled callable: e.g. one reset per experiment
        name = reused.handle.name
        message = (
            f"`{ctx.source(call.func)}()` {where}, which also calls compiled `{name}`: the reset drops every "
            f"compiled entry, so each iteration compiles from scratch ({torch_name()}: 12 compiles for 12 steps, and "
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


def _recompiled_in(ctx: FileContext, table: Usage, loop: Loop, scope: str) -> CompileSite | None:
    """A compile site in ``loop`` whose result the loop calls (``compiled = torch.compile(model)`` then
    ``compiled(x)``, ``torch.compile(f)(x)``, ``model.compile()`` then ``model(x)``), compiled from something the loop
    does not rebind: the same code, compiled again each time."""
    start, end = loop.lineno, loop.end_lineno or loop.lineno
    bound = bound_in(loop)
    called = [h.handle.site for h in table.calls if scope_key(h.at.scope) == scope and start <= h.call.lineno <= end]
    inline = {id(node.func) for node in ast.walk(loop) if isinstance(node, ast.Call)}
    for site in ctx.compile_sites:
        at = site_call(ctx, site)
        if at is None or scope_key(at.scope) != scope or not start <= site.span.line <= end:
            continue
        node = at.node
        assert isinstance(node, ast.Call)
        if site not in called and id(node) not in inline:
            continue  # compiled in the loop, but not called there
        target = node.args[0] if node.args else node.func.value if isinstance(node.func, ast.Attribute) else None
        if target is not None and not names_in(target) & bound:
            return site
    return None


def _compiled_again(ctx: FileContext, reset: ast.Call, site: CompileSite) -> UsageCandidate:
    message = (
        f"`{ctx.source(reset.func)}()` on every iteration of this loop, which then compiles `{site.target_text}` "
        f"again and calls it: the loop does not change what it compiles, so each iteration compiles the same code "
        f"from scratch ({torch_name()}: a full compile per iteration, and `TORCH_LOGS=recompiles` shows none); unless "
        "the loop measures compile time, compile once before it"
    )
    related = (Related(site.span, "compiled again here on every iteration"),)
    return UsageCandidate(RULE.code, ctx.span(reset), message, RULE.default_severity, (site,), related=related)


def judge_workspace(index: WorkspaceIndex) -> Iterator[Finding]:
    """A reset in a function (or method) that a loop calls, where the same function also calls compiled code in a
    loop: each call of the function throws the compiled entries away, and the loop compiles them again."""
    for summary in index.summaries:
        for span, function in summary.resets:
            if any(site.scope == function for site in summary.compile_sites):
                continue  # it resets what it compiles itself: one compile per call, by design
            found = _loop_calling(index, summary.path, function)
            if found is None:
                continue
            caller, compiled, sites = found
            name = function.rpartition(".")[2]
            message = (
                f"the Dynamo cache is reset on every call of `{name}()`, which a loop calls next to compiled code: "
                "the reset drops every compiled entry, so the loop compiles them again after each call "
                f"({torch_name()}: a full compile per iteration, and `TORCH_LOGS=recompiles` shows none)"
            )
            related = (
                Related(caller.call.span, f"`{name}()` is called in a loop here"),
                Related(compiled.call.span, "compiled code runs in the same loop here"),
            )
            yield index.finding(RULE, span, message, sites, related=related)


def _loop_calling(
    index: WorkspaceIndex, path: str, function: str
) -> tuple[PlacedCall, PlacedCall, list[CompileSite]] | None:
    """A call of ``function`` in a loop, and a call in the same calling function, also in a loop, that runs
    compiled code."""
    last = function.rpartition(".")[2]
    for call, at in index.evaluator.callers(last):
        summary = index.summary(at)
        if summary is None or not call.in_loop or not _calls(index, call, at, path, function):
            continue
        for placed in calls(summary):
            if placed.call.in_loop and placed.call is not call and placed.call.name != last:
                sites = reached_sites(index, placed)
                if sites:
                    caller = next(p for p in calls(summary) if p.call is call)
                    return caller, placed, sites
    return None


def _calls(index: WorkspaceIndex, call: CallSite, at: str, path: str, function: str) -> bool:
    """``call`` (made in ``at``) calls the function or method ``function`` of ``path``."""
    for value in index.evaluator.evaluate(call.func, at):
        if isinstance(value, FunctionValue) and value.key == (path, function):
            return True
        if isinstance(value, MethodValue):
            found = index.find_method(value.cls, value.name)
            if found is not None and found[0] == (path, function.rpartition(".")[0]):
                return True
    return False


CHECK = Check(RULE.code, collect=collect, judge=judge_usage, judge_workspace=judge_workspace)
