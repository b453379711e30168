"""DL104 · setattr-on-self

## What it does
Flags `setattr(self, name, value)` and `self.__dict__[name] = value` inside `forward` (or a method reachable from
it) where `name` comes from an argument of the method, so that different calls may write different attributes.

## Why it matters
Dynamo (torch 2.13) must know which attribute is written, so it specialises on the name: it guards the argument as
a string constant (`EQUALS_MATCH name == 'a'`). Every distinct name compiles the frame again, and strings are never
made dynamic: with more than `recompile_limit` (8) names the frame runs eagerly. Measured: three names, three
compiles. Storing into a dict keyed by the name instead is worse (the dict's keys are guarded as well: six compiles
for three names).

`setattr(self, "steps", v)` with a constant name is an ordinary attribute write and is checked as such (DL101,
DL103, DL105).

## Example
```python
    def forward(self, x, name):
        y = self.lin(x)
        setattr(self, name, y.detach())    # DL104: one compile per distinct name
        return y
```

## Use instead
Do the bookkeeping outside the compiled call, where it costs nothing:
```python
y = compiled(x)
setattr(model, name, y.detach())
```

## Known limitations
Only names that mention a parameter of the method are flagged; names computed from module state or globals are
not followed.

## Fix safety
There is no automatic fix: moving the write changes when the attribute is set.

## References
- PyTorch, "Dealing with recompilations": https://docs.pytorch.org/docs/stable/compile/programming_model.recompilation.html
"""

from __future__ import annotations

from collections.abc import Iterator

from dynamo_lens.codes import Check, Rule
from dynamo_lens.model import Finding, Severity
from dynamo_lens.static.semantic import settings
from dynamo_lens.static.semantic.index import WorkspaceIndex
from dynamo_lens.static.semantic.state_flow import keep_loudest, sites_of, stateful_flows
from dynamo_lens.torch_facts import torch_name

RULE = Rule(
    code="DL104",
    name="setattr-on-self",
    summary="An attribute name chosen by an argument is written on self inside the compiled forward",
    default_severity=Severity.WARNING,
    source="static",
    docs_url="https://docs.pytorch.org/docs/stable/compile/programming_model.recompilation.html",
    confirmed_by=("DL501", "DL502"),
)


def judge_workspace(index: WorkspaceIndex) -> Iterator[Finding]:
    findings: list[Finding] = []
    for flow in stateful_flows(index):
        for access in flow.accesses:
            event = access.event
            if event.kind != "setattr":
                continue
            place = f"`{access.method}`" + (f" (called from `{flow.entry}`)" if access.method != flow.entry else "")
            sites = sites_of(index, [access])
            limit = settings.recompile_limit(index, sites)
            message = (
                f"`setattr(self, {event.text}, …)` in {place} writes an attribute named by an argument: Dynamo "
                f"({torch_name()}) guards `{event.text}` as a string constant (EQUALS_MATCH), so every distinct name "
                f"compiles again (strings never become dynamic); {limit.past()}"
            )
            findings.append(
                index.finding(
                    RULE,
                    event.span,
                    message,
                    sites,
                    related=limit.related,
                    data={"name": event.text, "class": flow.cls[1]},
                )
            )
    yield from keep_loudest(findings)


CHECK = Check(RULE.code, judge_workspace=judge_workspace)
