"""DL103 · attr-created-in-forward

## What it does
Flags an attribute that the traced call creates (`self.cache = ...` in `forward` or a method reachable from it)
although no `__init__`, class body or other method defines it, *and* that a later call reads before writing it
again (`if hasattr(self, "cache")`, `getattr(self, "cache", None)`, `self.count = getattr(self, "count", 0) + 1`).

## Why it matters
On torch 2.13 the first call traces a module that does not have the attribute and guards on its absence; the
second call finds it and recompiles. What follows depends on the value (see DL101, DL105): a tensor of stable shape
costs that one extra compile; an int that changes every call recompiles every call until `recompile_limit` (8),
after which the frame runs eagerly.

An attribute that is only written, never read back by compiled code, is free (measured: one compile; Dynamo only
checks that the name does not shadow a parameter, buffer or submodule). It is not flagged.

Older torch differs, and the message follows the torch you run: on 2.5.1, 2.6.0 and 2.7.1 an int counter created
this way compiled 3 times (absent, its first value, then a symbolic int), not 8 with the limit.

## Example
```python
class Model(nn.Module):
    def forward(self, x):
        y = self.lin(x)
        if hasattr(self, "prev"):
            y = y + self.prev
        self.prev = y.detach()     # DL103: the second call recompiles
        return y
```

## Use instead
Define the attribute in `__init__` with a value of the kind it will hold (a tensor of the right shape, or a
buffer), so that every call sees the same structure:
```python
        self.register_buffer("prev", torch.zeros(4, 8))
```

## Known limitations
A class whose bases are outside the workspace (other than `torch.nn.Module`) may define the attribute in code the
analysis cannot see; such classes are skipped. Attributes set from outside the class (`model.prev = ...`) count as
defined only if some method of the class sets them.

## Fix safety
There is no automatic fix: the right initial value depends on the shape and dtype the attribute will hold.

## References
- PyTorch, "Dealing with recompilations": https://docs.pytorch.org/docs/stable/compile/programming_model.recompilation.html
"""

from __future__ import annotations

from collections.abc import Iterator

from dynamo_lens.codes import Check, Rule
from dynamo_lens.model import Finding, Related, Severity
from dynamo_lens.static.context import HASATTR, SELF_FLAG
from dynamo_lens.static.semantic import settings
from dynamo_lens.static.semantic.index import WorkspaceIndex
from dynamo_lens.static.semantic.state_flow import (
    AttrFlow,
    ClassFlow,
    closure,
    ints_made_dynamic,
    keep_loudest,
    sites_of,
    stateful_flows,
)
from dynamo_lens.torch_facts import INT_MODULE_ATTR_STATIC_SINCE

RULE = Rule(
    code="DL103",
    name="attr-created-in-forward",
    summary="An attribute created inside the compiled forward is read back by later calls",
    default_severity=Severity.WARNING,
    source="static",
    docs_url="https://docs.pytorch.org/docs/stable/compile/programming_model.recompilation.html",
    confirmed_by=("DL501", "DL502"),
)


def judge_workspace(index: WorkspaceIndex) -> Iterator[Finding]:
    findings: list[Finding] = []
    for flow in stateful_flows(index):
        for attr in flow.attrs.values():
            finding = _judge(index, flow, attr)
            if finding is not None:
                findings.append(finding)
    yield from keep_loudest(findings)


def _defined_outside(index: WorkspaceIndex, flow: ClassFlow, name: str) -> bool:
    """Some code other than the traced call may define the attribute: a class attribute, a method (or property)
    of that name, a write in a method the call does not run, or a base class we cannot see."""
    order, complete = index.mro(flow.cls)
    if not complete:
        return True
    if name in closure(index, flow.cls, "__init__")[1]:
        return True  # set by a helper that __init__ calls (and that forward may call again)
    for key in order:
        summary = index.class_summary(key)
        if summary is None:
            return True
        if name in summary.class_attrs or summary.method(name) is not None:
            return True
        for method in summary.methods:
            if (key, method.name) in flow.methods:
                continue
            if any(e.attr == name and e.kind in ("write", "aug", "mutate") for e in method.events):
                return True
    return False


def _judge(index: WorkspaceIndex, flow: ClassFlow, attr: AttrFlow) -> Finding | None:
    if attr.init is not None:
        return None
    exists = (f"{SELF_FLAG}{attr.attr}", HASATTR, True)
    writes = [
        a
        for a in attr.accesses
        if a.event.kind in ("write", "aug") and a.event.detail != "del" and exists not in a.event.requires
    ]  # a write under `if hasattr(self, "x")` never creates `x`
    reads = attr.carried_reads
    if not writes or not reads or _defined_outside(index, flow, attr.attr):
        return None
    first = writes[0]
    name = f"self.{attr.attr}"
    place = f"`{first.method}`" + (f" (called from `{flow.entry}`)" if first.method != flow.entry else "")
    kinds = {a.event.value_kind for a in writes}
    # A number or string computed from its previous value (`getattr(self, "n", 0) + 1`) changes every call.
    counter = kinds <= {"int", "str", "unknown"} and any(
        a.event.kind == "aug" or a.event.detail in ("concat", "self") for a in writes
    )
    sites = sites_of(index, [first, *reads])
    limit = settings.recompile_limit(index, sites)
    made_dynamic = (
        kinds <= {"int", "unknown"}
        and not any(a.event.detail == "concat" for a in writes)
        and ints_made_dynamic(index, sites, [flow.cls], attr.attr, flow.entry)
    )
    severity: Severity | None = Severity.INFO
    if counter and made_dynamic:
        cost = (
            "the first call guards that it does not exist, the second guards its first value (EQUALS_MATCH), and the "
            f"third makes the int dynamic (before torch {INT_MODULE_ATTR_STATIC_SINCE} an int attribute of a module "
            "the compiled frame gets as an input is made dynamic automatically): 3 compiles in all"
        )
    elif counter:
        severity = None  # the rule's: every call recompiles
        cost = (
            "the first call guards that it does not exist, and then each new value is guarded (EQUALS_MATCH): "
            f"every call recompiles; {limit.past()}"
        )
    else:
        cost = "the first call guards that it does not exist, so the second call recompiles (one extra compile)"
    message = f"`{name}` is created in {place}, not in `__init__`, and later calls read it: {cost}"
    related = tuple(
        Related(a.event.span, f"`{name}` is read here before this call sets it")
        for a in reads[:1]
        if a.event.span != first.event.span
    )
    return index.finding(
        RULE,
        first.event.span,
        message,
        sites,
        severity=severity,
        related=related + (limit.related if severity is None else ()),
        data={"attribute": attr.attr, "class": flow.cls[1]},
    )


CHECK = Check(RULE.code, judge_workspace=judge_workspace)
