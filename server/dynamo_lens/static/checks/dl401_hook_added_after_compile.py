"""DL401: a module hook registered after the compiled code that traces the module already ran."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from dynamo_lens.model import Related
from dynamo_lens.rules.dl401_hook_added_after_compile import RULE
from dynamo_lens.static.checks import Check
from dynamo_lens.static.checks._usage import UsageCandidate, judge_usage, reach_of, usage
from dynamo_lens.static.context import FileContext

HOOKS = frozenset(
    {
        "register_forward_hook",
        "register_forward_pre_hook",
        "register_full_backward_hook",
        "register_full_backward_pre_hook",
        "register_backward_hook",
    }
)


def collect(ctx: FileContext) -> Iterator[UsageCandidate]:
    table = usage(ctx)
    if not table.handles:
        return
    for at in ctx.nodes(ast.Call):
        call = at.node
        assert isinstance(call, ast.Call)
        func = call.func
        if not isinstance(func, ast.Attribute) or func.attr not in HOOKS:
            continue
        reach = reach_of(table, at, func.value)
        if reach is None or not reach.inside:
            continue
        earlier = table.ran_before(set(reach.sites), at)
        if earlier is None:
            continue
        name = earlier.handle.name
        message = (
            f"`{func.attr}` on `{ctx.source(func.value, 40)}` after compiled `{name}` already ran: torch 2.13 does not "
            "guard hook dicts that were empty when it compiled (`skip_nnmodule_hook_guards`), so the compiled code "
            "never calls this hook: no recompile, no error, and results silently differ from eager"
        )
        yield UsageCandidate(
            RULE.code,
            ctx.span(call),
            message,
            RULE.default_severity,
            tuple(sorted(reach.sites, key=lambda s: (s.span.line, s.span.column))),
            related=(Related(ctx.span(earlier.call), f"compiled `{name}` ran here first"),),
        )


CHECK = Check(RULE.code, collect=collect, judge=judge_usage)
