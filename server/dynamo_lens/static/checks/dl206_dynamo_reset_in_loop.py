"""DL206: ``torch._dynamo.reset()`` / ``torch.compiler.reset()`` run on every iteration of a loop."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from dynamo_lens.rules.dl206_dynamo_reset_in_loop import RULE
from dynamo_lens.static.checks import Check
from dynamo_lens.static.checks._usage import Loop, UsageCandidate, call_named, judge_usage, usage
from dynamo_lens.static.context import FileContext

RESETS = frozenset({"torch._dynamo.reset", "torch.compiler.reset", "torch._dynamo.eval_frame.reset"})


def collect(ctx: FileContext) -> Iterator[UsageCandidate]:
    if "reset" not in ctx.text:
        return
    table = usage(ctx)
    compile_lines = [site.span.line for site in ctx.compile_sites]
    compiling_functions = {site.scope.rpartition(".")[2] for site in ctx.compile_sites if site.scope}
    for at in ctx.nodes(ast.Call):
        call = call_named(ctx, at, RESETS)
        if call is None:
            continue
        loops = table.enclosing_loops(at)
        function = at.scope.function
        name = getattr(function.node, "name", "") if function is not None else ""
        if loops:
            loop = loops[-1]
            where = "on every iteration of this loop"
        elif name and name in table.called_in_loop:
            loop = None
            where = f"on every call of `{name}()`, which a loop calls"
        else:
            continue
        if loop is not None and _compiles(loop, compile_lines, compiling_functions):
            continue  # a reset per experiment that compiles its own model anyway
        message = (
            f"`{ctx.source(call.func)}()` {where}: it drops every compiled entry, so each iteration compiles from "
            "scratch (torch 2.13: 12 compiles for 12 steps, and `TORCH_LOGS=recompiles` shows none)"
        )
        yield UsageCandidate(RULE.code, ctx.span(call), message, RULE.default_severity, tuple(ctx.compile_sites))


def _compiles(loop: Loop, compile_lines: list[int], compiling_functions: set[str]) -> bool:
    """The loop compiles something itself, or calls a function of this file that does."""
    end = loop.end_lineno or loop.lineno
    if any(loop.lineno <= line <= end for line in compile_lines):
        return True
    return any(
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in compiling_functions
        for node in ast.walk(loop)
    )


CHECK = Check(RULE.code, collect=collect, judge=judge_usage)
