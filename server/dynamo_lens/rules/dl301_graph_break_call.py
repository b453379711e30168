"""DL301 · graph-break-call

## What it does
Flags a call inside compiled code (a compiled function, a compiled module's `forward`, or a method or function
reached from them) that Dynamo cannot put in a graph, and names the graph-break registry entry torch 2.13 reports
for it:

| call | registry id |
|---|---|
| `print(...)` | GB0059 "Failed to trace builtin operator" |
| `t.item()`; `int(t)`, `float(t)`, `bool(t)` on a tensor | GB0124 "Unsupported Tensor.item() call ..." |
| `t.tolist()` | GB0109 (floating tensors), GB0033 "Data dependent operator" (integer tensors) |
| `logger.info(...)` and the other `logging.Logger` methods | GB0291 "logging.Logger method not supported ..." |
| `logging.info(...)` and the other module-level `logging` functions | GB4841 (breaks inside `logging`) |
| `warnings.warn(...)`, `time.time()`, `time.perf_counter()`, `time.monotonic()` | GB0007 (skipped function) |
| `copy.deepcopy(t)` | GB4198 "Attempted to copy.deepcopy a tensor" |
| `torch.nonzero(t)` / `t.nonzero()` | GB0036 "Dynamic shape operator" |
| `torch.equal(a, b)`, `torch.allclose(a, b)` | GB0033 "Data dependent operator" |
| `repr(t)` | GB0569 "repr() on tensor" |

## Why it matters
At a graph break Dynamo ends the graph, runs the call in Python and resumes in a new frame
(`torch_dynamo_resume_in_<fn>_at_<line>`), which has its own guards and its own recompiles. Each break costs a round
trip through Python (and, for `.item()` on an accelerator, a device synchronisation), and prevents fusion across
it. A break inside a loop makes Dynamo give up on the whole frame. `fullgraph=True` turns the break into an error.

## Example
```python
@torch.compile
def step(x):
    y = torch.relu(x)
    print("step", y.shape)         # DL301: GB0059
    scale = y.sum().item()         # DL301: GB0124
    return y / scale
```

## Use instead
Keep values as tensors (`y / y.sum()`); log outside the compiled region, or register the function in
`torch._dynamo.config.reorderable_logging_functions`; for `.item()`, set
`torch._dynamo.config.capture_scalar_outputs = True` (the scalar becomes a symbolic value in the graph); for
`nonzero`, `torch._dynamo.config.capture_dynamic_output_shape_ops = True`, or `torch.where` with a fixed shape.

## Known limitations
Whether a value is a tensor is inferred from how it was made (a `torch.*` call, a tensor method, an argument
annotated `torch.Tensor`): `int(n)` on a plain Python number is not reported. `t.numpy()` is not reported: with NumPy
installed and `trace_numpy` on (the default) Dynamo traces it. f-strings, `id()`, `len()` and `isinstance()` on
tensors do not break and are not reported. A logger is recognised when its name is bound to `logging.getLogger(...)`
or to a library's `get_logger(...)` helper. Calls are followed into functions of the same workspace that the
compiled code calls directly; functions decorated with `torch.compiler.disable` are not traced.

## Fix safety
No automatic fix: moving a call out of the compiled region changes when it runs, and `capture_scalar_outputs`
changes how every `.item()` in the program is compiled.

## References
- Graph-break registry: https://meta-pytorch.github.io/compile-graph-break-site/
- `torch/_dynamo/graph_break_registry.json` in the installed torch; `torch/_dynamo/config.py`: `capture_scalar_outputs`
"""

from dynamo_lens.model import Severity
from dynamo_lens.rules import Rule

RULE = Rule(
    code="DL301",
    name="graph-break-call",
    summary="A call inside compiled code that Dynamo cannot trace: the graph breaks here",
    default_severity=Severity.WARNING,
    source="static",
    docs_url="https://meta-pytorch.github.io/compile-graph-break-site/",
)
