"""DL503 · graph-break

## What it does
Reported after an instrumented run for every distinct graph break Dynamo hit: at the user line where tracing
stopped, with the reason, the graph-break registry id (`GB0124` for `Tensor.item()`, `GB0059` for `print`), the
registry's explanation and its hints.

## Why it matters
At a graph break Dynamo ends the current graph, runs the offending code in Python, and starts a new frame (a resume
function named `torch_dynamo_resume_in_<fn>_at_<line>`) for the rest. Each break costs a device synchronisation or a
round trip through Python, splits the graph so the backend cannot fuse across it, and gives the resume function its
own guards and its own recompiles. A graph break inside a loop makes Dynamo skip the whole frame: the message then
says the function runs eagerly on every call, and its lens reads "not compiled" (the run's summary lists it too).

## Example
```python
@torch.compile
def step(x):
    y = torch.relu(x)
    scale = y.sum().item()         # DL503: GB0124 Unsupported Tensor.item() call
    return y / scale
```

## Use instead
Follow the hints of the registry entry: keep values as tensors (`y / y.sum()`), move logging and `print` out of the
compiled region, use `torch.cond` for data-dependent branches, or set `torch._dynamo.config.capture_scalar_outputs =
True` where `.item()` is unavoidable. `torch.compile(..., fullgraph=True)` turns any remaining break into an error.

## Known limitations
A break that Dynamo reports again on every re-trace is shown once per user line and kind. Breaks inside torch code
are attributed to the innermost user frame on the stack. Without Dynamo's structured trace (see the report's
`missing` list) the registry id may be absent.

## Fix safety
No automatic fix: removing a break changes where Python code runs.

## References
- Graph-break registry: https://meta-pytorch.github.io/compile-graph-break-site/
- `torch/_dynamo/graph_break_registry.json` in the installed torch
"""

from __future__ import annotations

from dynamo_lens.codes import Rule
from dynamo_lens.model import Severity

RULE = Rule(
    code="DL503",
    name="graph-break",
    summary="Dynamo broke the compiled graph at this line during the run",
    default_severity=Severity.WARNING,
    source="runtime",
    docs_url="https://meta-pytorch.github.io/compile-graph-break-site/",
)
