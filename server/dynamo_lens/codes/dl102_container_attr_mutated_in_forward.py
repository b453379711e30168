"""DL102 · container-attr-mutated-in-forward

## What it does
Flags a list, dict or set attribute of a module that the traced call reads and changes, so that the next call
sees a different container: `self.history.append(y)`, `self.cache[key] = v` with a computed key,
`self.log += [loss]`, `self.counts["a"] += 1`, `self.seen.add(i)`, in `forward` or in a method reachable from it.

## Why it matters
Dynamo guards containers on their structure: a list on its length (`LENGTH_CHECK`: `not self.history`, then
`len(self.history) == 1`, ...), a dict on its keys (`DICT_LENGTH`, key checks), and every element the traced code
reads (a `TENSOR_MATCH` per stored tensor, an `EQUALS_MATCH` per Python number). On torch 2.13 a list that grows
on every call fails its length guard on every call: each call recompiles until `recompile_limit` (8) is hit, and
from then on the frame silently runs eagerly. An int stored in a dict and incremented behaves the same way.

Containers that stop changing cost a bounded number of compiles and are reported at a lower severity: a dict that
gains a fixed key on the first call compiles twice (measured: `DICT_LENGTH not self.stats` fails once). A container
that the call empties again before it returns (`self.buf.clear()` on every path, at the end) is not flagged.
Replacing the container before reading it (`self.buf = []` first) is not carried across calls and not flagged.

## Example
```python
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.history = []

    def forward(self, x):
        y = self.lin(x)
        self.history.append(y.detach())   # DL102: recompiles every call, eager after 8
        return y
```

## Use instead
Return what you want to record and keep the bookkeeping outside the compiled call:
```python
y = compiled(x)
history.append(y.detach())
```
Or move the append into a helper decorated with `@torch.compiler.disable` (one graph break per call, no
recompiles), or pre-populate a dict's keys in `__init__` so that its structure never changes.

## Known limitations
The analysis follows `self.<name>` in statement order through `self.method()` calls and properties. It does not see
containers mutated through an alias (`h = self.history; h.append(x)`) or through another object, and it cannot
tell how large a container that is both grown and shrunk gets; those are reported as unbounded. Attributes whose
`__init__` value is a tensor, a module or a tuple are never treated as containers. A compile site that calls the
compiled module once, where it compiles it, on an object its function builds (`module = Net().eval()`;
`torch.compile(module)(x)`, as tests do) does not count: no later compiled call meets the container (measured: 1
compile for 12 such checks), and the finding is a hint unless another site reaches it.

## Fix safety
There is no automatic fix: moving state out of `forward` changes the module's interface.

## References
- PyTorch, "Dealing with recompilations": https://docs.pytorch.org/docs/stable/compile/programming_model.recompilation.html
- `torch/_dynamo/config.py`: `recompile_limit`
"""

from __future__ import annotations

from collections.abc import Iterator

from dynamo_lens.codes import Check, Rule
from dynamo_lens.model import Finding, Severity
from dynamo_lens.static.semantic import settings
from dynamo_lens.static.semantic.index import WorkspaceIndex
from dynamo_lens.static.semantic.state_flow import (
    Access,
    AttrFlow,
    ClassFlow,
    init_related,
    judge_attrs,
    method_summary,
    read_related,
    sites_of,
)
from dynamo_lens.static.walk import GROWING_METHODS, SHRINKING_METHODS
from dynamo_lens.torch_facts import torch_name

RULE = Rule(
    code="DL102",
    name="container-attr-mutated-in-forward",
    summary="A list, dict or set module attribute is changed inside the compiled forward and read by the next call",
    default_severity=Severity.WARNING,
    source="static",
    docs_url="https://docs.pytorch.org/docs/stable/compile/programming_model.recompilation.html",
    confirmed_by=("DL501", "DL502"),
)


_LIST_ONLY = frozenset({"append", "extend", "insert", "appendleft", "extendleft"})
_CONTAINERS = frozenset({"list", "dict", "set"})
_GUARD = {"list": "its length (LENGTH_CHECK)", "dict": "its keys (DICT_LENGTH)", "set": "its length (LENGTH_CHECK)"}


def judge_workspace(index: WorkspaceIndex) -> list[Finding]:
    return judge_attrs(index, _judge)


def _container_kind(attr: AttrFlow, mutations: list[Access]) -> str | None:
    kind = attr.init_kind
    if kind in _CONTAINERS:
        return kind
    if kind in (None, "unknown") and mutations and all(a.event.detail in _LIST_ONLY for a in mutations):
        return "list"  # only list methods are called on it: a list set up outside __init__
    return None


def _judge(index: WorkspaceIndex, flow: ClassFlow, attr: AttrFlow) -> Iterator[Finding]:
    mutations = [a for a in attr.accesses if a.event.kind == "mutate"]
    kind = _container_kind(attr, mutations)
    if kind is None:
        return
    growing = [a for a in attr.accesses if not a.fresh and _grows(a, kind)]
    if not growing:
        return
    if _reset_before_return(attr, growing):
        return
    init_keys = set(attr.init[1].keys) if attr.init is not None else set()
    for access in growing:
        event = access.event
        bounded = event.detail == "setitem" and event.text != "" and event.text in init_keys
        if bounded:
            continue  # the key exists from the start: the dict's structure never changes
        # a constant key is added once; a computed key of a cache (the flow looks its keys up) once per distinct key
        bounded = event.detail == "setitem" and (event.text != "" or _looked_up(index, flow, attr.attr))
        yield _finding(index, flow, attr, kind, access, bounded)


def _looked_up(index: WorkspaceIndex, flow: ClassFlow, name: str) -> bool:
    """The traced call looks keys up in ``self.<name>`` (``key in self.cache``): the container is a cache."""
    for owner, method_name in flow.methods:
        method = method_summary(index, owner, method_name)
        if method is not None and name in method.lookups:
            return True
    return False


def _grows(access: Access, kind: str) -> bool:
    event = access.event
    if event.kind == "mutate":
        return event.detail in GROWING_METHODS or event.detail in ("setitem", "setitem-aug")
    if event.kind == "aug":
        return kind == "list"  # self.log += [x]
    if event.kind == "write":
        return event.detail == "concat"  # self.log = self.log + [x]
    return False


def _reset_before_return(attr: AttrFlow, growing: list[Access]) -> bool:
    """The call always ends by emptying the container (``self.buf.clear()`` / ``self.buf = []`` on every path)."""
    last_growth = max(attr.accesses.index(a) for a in growing)
    for access in attr.accesses[last_growth + 1 :]:
        event = access.event
        if not access.definite:
            continue
        if event.kind == "mutate" and event.detail == "clear":
            return True
        if event.kind == "write" and event.detail == "const" and event.text in ("[]", "{}", "set()"):
            return True
    return False


def _finding(
    index: WorkspaceIndex, flow: ClassFlow, attr: AttrFlow, kind: str, access: Access, bounded: bool
) -> Finding:
    name = f"self.{attr.attr}"
    event = access.event
    sites = sites_of(index, [access, *attr.carried_reads])
    limit = settings.recompile_limit(index, sites)
    place = f"`{access.method}`" + (f" (called from `{flow.entry}`)" if access.method != flow.entry else "")
    if event.detail == "setitem-aug":
        action = f"updates a value stored in `{name}`"
        cost = (
            f"Dynamo ({torch_name()}) guards the stored value it reads (EQUALS_MATCH on the item), so every call "
            f"recompiles; {limit.past()}"
        )
        bounded = False
    elif bounded and event.text:
        action = f"adds the key {event.text} to `{name}`"
        cost = (
            f"Dynamo guards {_GUARD[kind]}, which changes once: one extra compile; create the key in `__init__` "
            "to avoid it"
        )
    elif bounded:
        action = f"stores a computed key in `{name}`"
        cost = (
            f"Dynamo guards {_GUARD[kind]}, so each new key compiles once more (one extra compile for a cache whose "
            "key stays the same, one per distinct key otherwise)"
        )
    else:
        shrinks = any(a.event.detail in SHRINKING_METHODS for a in attr.accesses if a.event.kind == "mutate")
        action = f"grows the {kind} `{name}`" + (
            " (and shrinks it, by an amount the analysis cannot tell)" if shrinks else ""
        )
        cost = f"Dynamo ({torch_name()}) guards {_GUARD[kind]}, so each call that changes it recompiles; {limit.past()}"
    message = f"{action} in {place}, and the next call reads it: {cost}"
    return index.finding(
        RULE,
        event.span,
        message,
        sites,
        severity=Severity.INFO if bounded else None,
        related=(*init_related(attr), *read_related(attr, event.span), *(() if bounded else limit.related)),
        data={"attribute": attr.attr, "kind": kind, "class": flow.cls[1], "unbounded": not bounded},
    )


CHECK = Check(RULE.code, judge_workspace=judge_workspace)
