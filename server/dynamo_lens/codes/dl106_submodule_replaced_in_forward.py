"""DL106 · submodule-replaced-in-forward

## What it does
Flags a module with parameters that is built inside `forward` (or a method reachable from it): a new
submodule installed with `self.head = nn.Linear(8, 2)`, or a temporary one such as `nn.LayerNorm(8)(x)`. It knows
the `torch.nn` classes that create parameters (`Linear`, `Conv2d`, `LayerNorm`, `Embedding`, `LSTM`, ...) and the
workspace's own module classes whose `__init__` creates parameters, directly or through their submodules.

## Why it matters
Creating an `nn.Parameter` cannot be traced: on torch 2.13 Dynamo graph-breaks inside the constructor (for
`nn.Linear`, the `Parameter(torch.empty(...))` in its `__init__`; registry id GB0264), so `forward` is split into
several graphs and the construction runs eagerly on every call. Each call also gets freshly initialised random
weights that no optimizer ever sees, which is rarely what was meant.

Building parameter-free modules (`nn.ReLU()`, `nn.Dropout(0.1)`) inside `forward`, or replacing one such
submodule with another, traces fine and is not flagged (measured: one graph, no break).

## Example
```python
    def forward(self, x):
        self.head = nn.Linear(x.shape[-1], 2)   # DL106: graph break on every call, new weights each time
        return self.head(x)
```

## Use instead
Build every module with parameters once, in `__init__` (use `nn.LazyLinear` when the input size is only known at
the first call):
```python
    def __init__(self):
        super().__init__()
        self.head = nn.LazyLinear(2)
```

## Known limitations
Modules created by factory functions, or classes outside the workspace other than `torch.nn`'s, are not
recognised. `nn.Sequential(...)`/`nn.ModuleList(...)` are reported through the modules built in their arguments.

## Fix safety
There is no automatic fix: moving construction to `__init__` changes when the weights are created.

## References
- PyTorch, graph break GB0264: https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0264.html
- PyTorch, `torch.compile`: https://docs.pytorch.org/docs/stable/generated/torch.compile.html
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from dynamo_lens.codes import Check, Rule
from dynamo_lens.model import Finding, Severity, Span
from dynamo_lens.static.semantic.index import ClassKey, WorkspaceIndex
from dynamo_lens.static.semantic.state_flow import (
    Access,
    ClassFlow,
    class_flows,
    keep_loudest,
    method_summary,
    sites_of,
    unseen_summaries,
)
from dynamo_lens.static.summary import Ref
from dynamo_lens.torch_facts import torch_name

RULE = Rule(
    code="DL106",
    name="submodule-replaced-in-forward",
    summary="A module with parameters is built inside the compiled forward",
    default_severity=Severity.WARNING,
    source="static",
    docs_url="https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0264.html",
    confirmed_by=("DL501", "DL502"),
)


TORCH_MODULES_WITH_PARAMETERS = frozenset(
    {"Linear", "Bilinear", "LazyLinear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
     "ConvTranspose3d", "LazyConv1d", "LazyConv2d", "LazyConv3d", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d",
     "SyncBatchNorm", "LayerNorm", "GroupNorm", "RMSNorm", "Embedding", "EmbeddingBag", "RNN", "LSTM", "GRU",
     "RNNCell", "LSTMCell", "GRUCell", "MultiheadAttention", "PReLU", "Transformer", "TransformerEncoder",
     "TransformerDecoder", "TransformerEncoderLayer", "TransformerDecoderLayer"}
)  # fmt: skip
"""``torch.nn`` classes whose constructor creates an ``nn.Parameter`` with default arguments."""


@dataclass(frozen=True, slots=True)
class _Built:
    """A module built in traced code: written to ``self.<attr>`` (``access``), or a bare call in ``owner.method``."""

    span: Span
    message: str
    access: Access | None
    attr: str
    owner: ClassKey
    method: str
    module: str


def judge_workspace(index: WorkspaceIndex) -> Iterator[Finding]:
    findings: list[Finding] = []
    for flow in class_flows(index):
        built = flow.derived.get(RULE.code)
        if built is None:
            built = flow.derived[RULE.code] = _built_in(index, flow)
        for found in built:
            if found.access is not None:
                findings.append(_finding(index, found.span, found.message, [found.access], found.attr))
            else:
                sites = index.sites_for_method(found.owner, found.method)
                data = {"module": found.module, "class": flow.cls[1]}
                findings.append(index.finding(RULE, found.span, found.message, sites, data=data))
    yield from keep_loudest(findings)


def _built_in(index: WorkspaceIndex, flow: ClassFlow) -> list[_Built]:
    found: list[_Built] = []
    lines: set[tuple[str, int]] = set()
    for access in flow.accesses:
        event = access.event
        if event.kind != "write" or event.ctor is None:
            continue
        built = _builds_parameters(index, access.owner[0], event.ctor)
        if built is None:
            continue
        lines.add((event.span.path, event.span.line))
        message = (
            f"`self.{event.attr} = {event.text}` in {_place(flow.entry, access.method)} builds a new `{built}` "
            f"on every call: {_COST}"
        )
        found.append(_Built(event.span, message, access, event.attr, access.owner, access.method, built))
    for owner, name in sorted(flow.methods):
        method = method_summary(index, owner, name)
        if method is None:
            continue
        for call in method.builds:
            if (call.span.path, call.span.line) in lines:
                continue
            built = _builds_parameters(index, owner[0], call.ref)
            if built is None:
                continue
            message = f"`{built}(…)` in {_place(flow.entry, name)} builds a new module on every call: {_COST}"
            found.append(_Built(call.span, message, None, "", owner, name, built))
    return found


_COST = (
    f"creating its parameters cannot be traced, so Dynamo ({torch_name()}) graph-breaks there on every call, and the "
    "module gets new random weights each time; build it once in `__init__`"
)


def _place(entry: str, method: str) -> str:
    return f"`{method}`" + (f" (called from `{entry}`)" if method != entry else "")


def _finding(index: WorkspaceIndex, span: Span, message: str, accesses: list[Access], attr: str) -> Finding:
    return index.finding(RULE, span, message, sites_of(index, accesses), data={"attribute": attr})


def _builds_parameters(index: WorkspaceIndex, path: str, ref: Ref) -> str | None:
    """The class name if calling ``ref`` builds a module with parameters."""
    if not ref.last[:1].isupper():
        return None  # a function or method call, not a class being instantiated
    if ref.level == 0 and ref.dotted.startswith("torch.nn."):
        last = ref.last
        return f"nn.{last}" if last in TORCH_MODULES_WITH_PARAMETERS else None
    key = index.resolve_class(path, ref)
    if key is None or not index.is_module_class(key):
        return None
    owns = index.memo(("dl106.has_parameters", key), lambda: _has_parameters(index, key, set()))
    return key[1] if owns else None


def _has_parameters(index: WorkspaceIndex, key: ClassKey, seen: set[ClassKey]) -> bool:
    """Instances of the workspace class ``key`` own parameters (their ``__init__`` creates some)."""
    for current, summary in unseen_summaries(index, key, seen):
        for attr in summary.init_attrs:
            if attr.kind == "parameter":
                return True
            for constructor in attr.constructors:
                if constructor.level == 0 and constructor.dotted.startswith("torch.nn."):
                    if constructor.last in TORCH_MODULES_WITH_PARAMETERS:
                        return True
                    continue
                sub = index.resolve_class(current[0], constructor)
                if sub is not None and _has_parameters(index, sub, seen):
                    return True
    return False


CHECK = Check(RULE.code, judge_workspace=judge_workspace)
