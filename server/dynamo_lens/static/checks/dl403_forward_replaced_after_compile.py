"""DL403: ``module.forward = ...`` on a module that compiled code runs, after that code ran."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from dynamo_lens.rules.dl403_forward_replaced_after_compile import RULE
from dynamo_lens.static.checks import Check
from dynamo_lens.static.checks._usage import UsageCandidate, after_compiled_run, judge_usage, reach_of, usage
from dynamo_lens.static.context import FileContext


def collect(ctx: FileContext) -> Iterator[UsageCandidate]:
    table = usage(ctx)
    if not table.handles:
        return
    for at in ctx.attribute_bindings.get("forward", ()):
        node = at.node
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            if not isinstance(target, ast.Attribute) or target.attr != "forward":
                continue
            reach = reach_of(table, at, target.value)
            if reach is None:
                continue
            earlier = table.ran_before(set(reach.sites), at)
            if earlier is None:
                continue
            name = earlier.handle.name
            message = (
                f"`{ctx.source(target, 40)}` is replaced after compiled `{name}` already ran: torch 2.13 sees the new "
                "`forward` in the instance `__dict__` and compiles it on the next call (one compile per new "
                "function; results stay right), but the compiled module no longer runs the code its class shows"
            )
            yield after_compiled_run(ctx, RULE, target, message, reach, earlier)


CHECK = Check(RULE.code, collect=collect, judge=judge_usage)
