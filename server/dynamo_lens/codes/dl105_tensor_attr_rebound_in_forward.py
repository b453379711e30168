"""DL105 · tensor-attr-rebound-in-forward

## What it does
Flags a tensor attribute that the traced call reads and then rebinds in a way that changes what Dynamo guards:
an attribute that starts as `None` in `__init__` and becomes a tensor in `forward` (`self.cache = y.detach()`
after `if self.cache is not None`), or a tensor that grows with every call
(`self.memory = torch.cat([self.memory, x])`).

## Why it matters
Dynamo guards tensors on their metadata (dtype, device, shape, strides, `requires_grad`), not on their values, and
`None` by identity (`NONE_MATCH`). Measured on torch 2.13:

* `None` → tensor: the first call guards `self.cache is None`, the second call recompiles once, and later calls
  with a tensor of the same metadata reuse the second entry (two compiles in all).
* a growing tensor: the second call fails the size guard, Dynamo marks the dimension dynamic
  (automatic dynamic shapes) and compiles once more; later sizes reuse that entry (two compiles in all).
* `None` → a list or tuple built lazily (`if self.table is None: self.table = [...]`, a rotary table made on the
  first call): the second call fails `self.table is None` and compiles once more; later calls find the same list
  and reuse that entry (two compiles in all). Only lazy builds are reported: every write that makes the attribute a
  list either runs under `if self.<attr> is None` or rebuilds it from itself (`[t.to(device) for t in self.table]`).

The same holds for a helper object that is not a module (a plain class whose `__call__` a compiled `forward`
calls): Dynamo traces it and guards what it reads of its instance.

Both cost one extra compile, so the finding is informational. Rebinding a tensor attribute to a tensor of the same
metadata (`self.state = self.state * 0.9 + x.mean()`), updating a buffer in place (`self.buf.add_(1)`), or writing
the attribute before reading it in the same call costs nothing and is not flagged.

## Example
```python
    def __init__(self):
        super().__init__()
        self.cache = None

    def forward(self, x):
        if self.cache is not None:
            x = x + self.cache
        self.cache = x.detach()          # DL105: second call recompiles once (NONE_MATCH)
        return x
```

## Use instead
Start with a tensor of the final shape, ideally a buffer updated in place:
```python
        self.register_buffer("cache", torch.zeros(4, 8))
    ...
        self.cache.copy_(x.detach())
```

## Known limitations
Shapes are not known statically: a rebound tensor whose shape changes from call to call for other reasons (a
slice whose size depends on the input) is not detected. With `torch._dynamo.config.automatic_dynamic_shapes =
False` a growing tensor recompiles on every call instead of once.

## Fix safety
There is no automatic fix: the right initial tensor depends on the shape and dtype the attribute will hold.

## References
- PyTorch, "Dynamic shapes": https://docs.pytorch.org/docs/stable/torch.compiler_dynamic_shapes.html
- PyTorch, "Dealing with recompilations": https://docs.pytorch.org/docs/stable/compile/programming_model.recompilation.html
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from dynamo_lens.codes import Check, Rule
from dynamo_lens.model import Finding, Severity
from dynamo_lens.static.context import SELF_FLAG
from dynamo_lens.static.semantic.index import WorkspaceIndex
from dynamo_lens.static.semantic.state_flow import (
    Access,
    AttrFlow,
    ClassFlow,
    init_related,
    judge_attrs,
    read_related,
    set_at_construction,
    sites_of,
)
from dynamo_lens.static.summary import CompileSite
from dynamo_lens.torch_facts import torch_name

RULE = Rule(
    code="DL105",
    name="tensor-attr-rebound-in-forward",
    summary="A tensor attribute read by the next call changes from None to a tensor, or grows, inside forward",
    default_severity=Severity.INFO,
    source="static",
    docs_url="https://docs.pytorch.org/docs/stable/compile/programming_model.recompilation.html",
    confirmed_by=("DL501", "DL502"),
)


_GROWING_CALL = re.compile(r"\b(cat|concat|concatenate|stack|hstack|vstack|column_stack|dstack)\(")
_TENSOR_KINDS = frozenset({"tensor", "buffer", "parameter"})


def judge_workspace(index: WorkspaceIndex) -> list[Finding]:
    return judge_attrs(index, _judge)


def _judge(index: WorkspaceIndex, flow: ClassFlow, attr: AttrFlow) -> Iterator[Finding]:
    if attr.init is None or not attr.carried:
        return
    writes = [a for a in attr.changes if a.event.kind == "write" and a.event.detail != "del"]
    if not writes:
        return
    if attr.init_kind == "none" and set_at_construction(index, flow.cls, attr.attr):
        return  # `self.cache = None`, then `self.reset_parameters()` fills it: the first call never sees None
    name = f"self.{attr.attr}"
    kinds = {a.event.value_kind for a in writes}
    if attr.init_kind == "none" and kinds & {"list", "tuple"} and _built_lazily(attr.attr, writes):
        if not [a for a in attr.carried_reads if a.event.kind == "read"]:
            return
        access = next(a for a in writes if a.event.value_kind != "none")
        built = "a tuple" if "tuple" in kinds else "a list"
        message = (
            f"`{name}` starts as `None` and {_place(flow, access.method)} builds {built} in it on the first call, "
            f"which the next call reads: the first call guards `{name} is None` (NONE_MATCH), so the second call "
            f"recompiles once ({torch_name()}); later calls reuse that entry while the contents keep their length and "
            "shapes"
        )
        yield _finding(index, flow, attr, access, message, starts_none=True)
    elif attr.init_kind == "none" and "tensor" in kinds and kinds <= {"tensor", "unknown", "none"}:
        if not [a for a in attr.carried_reads if a.event.kind == "read"]:
            return
        for access in writes:
            if access.event.value_kind == "none":
                continue
            message = (
                f"`{name}` starts as `None` and {_place(flow, access.method)} makes it a tensor that the next call "
                f"reads: the first call guards `{name} is None` (NONE_MATCH), so the second call recompiles once "
                f"({torch_name()}); later calls with the same shape and dtype reuse that entry"
            )
            yield _finding(index, flow, attr, access, message, starts_none=True)
    elif attr.init_kind in _TENSOR_KINDS:
        for access in writes:
            event = access.event
            if event.detail == "self" and _GROWING_CALL.search(event.text):
                message = (
                    f"`{name} = {event.text}` in {_place(flow, access.method)} grows a tensor that the next call "
                    "reads: its size guard fails on the second call, Dynamo marks the dimension dynamic (automatic "
                    f"dynamic shapes, {torch_name()}) and compiles once more"
                )
                yield _finding(index, flow, attr, access, message)


def _built_lazily(attr: str, writes: list[Access]) -> bool:
    """Every write that gives the attribute a value runs under ``if self.<attr> is None`` or rebuilds it from
    itself under some condition (``self.table = [t.to(device) for t in self.table]`` when the device changed)."""
    lazy = (f"{SELF_FLAG}{attr}", "none", True)
    made = [a.event for a in writes if a.event.value_kind != "none"]
    return (
        bool(made)
        and all(lazy in event.requires or (event.detail == "self" and event.guarded) for event in made)
        and any(lazy in event.requires for event in made)
    )


def _may_start_none(index: WorkspaceIndex, site: CompileSite, flow: ClassFlow, attr: str) -> bool:
    """The site compiles an instance that may reach its first call with ``self.<attr>`` still ``None``: not only
    subclasses whose construction fills it (or an instance the scan cannot tell)."""
    classes = [c for c in index.compiled_classes(site) if flow.cls in index.mro(c)[0]]
    return not classes or any(not set_at_construction(index, c, attr) for c in classes)


def _place(flow: ClassFlow, method: str) -> str:
    return f"`{method}`" + (f" (called from `{flow.entry}`)" if method != flow.entry else "")


def _finding(
    index: WorkspaceIndex, flow: ClassFlow, attr: AttrFlow, access: Access, message: str, starts_none: bool = False
) -> Finding:
    sites = sites_of(index, [access, *attr.carried_reads])
    if starts_none:
        sites = {site for site in sites if _may_start_none(index, site, flow, attr.attr)}
    return index.finding(
        RULE,
        access.event.span,
        message,
        sites,
        related=(*init_related(attr), *read_related(attr, access.event.span)),
        data={"attribute": attr.attr, "class": flow.cls[1]},
    )


CHECK = Check(RULE.code, judge_workspace=judge_workspace)
