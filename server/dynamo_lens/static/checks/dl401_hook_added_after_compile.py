"""DL401: a module hook registered after the compiled code that traces the module already ran."""

from __future__ import annotations

from collections.abc import Iterator

from dynamo_lens.rules.dl401_hook_added_after_compile import RULE
from dynamo_lens.static.checks import Check
from dynamo_lens.static.checks._usage import (
    UsageCandidate,
    after_compiled_run,
    judge_usage,
    method_calls,
    reach_of,
    usage,
)
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
    for at, call, func in method_calls(ctx, HOOKS):
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
        yield after_compiled_run(ctx, RULE, call, message, reach, earlier)


CHECK = Check(RULE.code, collect=collect, judge=judge_usage)
