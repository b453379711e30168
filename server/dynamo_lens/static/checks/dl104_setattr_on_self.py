"""DL104: ``setattr(self, name, value)`` in traced code with a name chosen by an argument."""

from __future__ import annotations

from collections.abc import Iterator

from dynamo_lens.model import Finding
from dynamo_lens.rules.dl104_setattr_on_self import RULE
from dynamo_lens.static.checks import Check
from dynamo_lens.static.index import WorkspaceIndex
from dynamo_lens.static.state_flow import keep_loudest, sites_of, stateful_flows


def judge_workspace(index: WorkspaceIndex) -> Iterator[Finding]:
    findings: list[Finding] = []
    for flow in stateful_flows(index):
        for access in flow.accesses:
            event = access.event
            if event.kind != "setattr":
                continue
            place = f"`{access.method}`" + (f" (called from `{flow.entry}`)" if access.method != flow.entry else "")
            message = (
                f"`setattr(self, {event.text}, …)` in {place} writes an attribute named by an argument: Dynamo (torch "
                f"2.13) guards `{event.text}` as a string constant (EQUALS_MATCH), so every distinct name compiles "
                "again (strings never become dynamic); after recompile_limit (8) the frame runs eagerly"
            )
            findings.append(
                index.finding(
                    RULE,
                    event.span,
                    message,
                    sites_of(index, [access]),
                    data={"name": event.text, "class": flow.cls[1]},
                )
            )
    yield from keep_loudest(findings)


CHECK = Check(RULE.code, judge_workspace=judge_workspace)
