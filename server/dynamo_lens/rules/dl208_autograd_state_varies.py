"""DL208 · autograd-state-varies

## What it does
Flags a compiled callable that is called both under a grad-mode context (`torch.no_grad()`,
`torch.inference_mode()`, `torch.enable_grad()`, `torch.set_grad_enabled(...)`) and outside it, in one file. The
finding sits on the call under the context that differs from the others.

## Why it matters
Grad mode is part of Dynamo's global-state guard. A call in another mode fails it (`GLOBAL_STATE changed:
grad_mode`) and compiles a second entry. Measured on torch 2.13 (`backend="eager"`, 12 calls alternating): 2
compiles for `no_grad`/grad, 2 for `inference_mode`/normal, 2 for inputs alternating `requires_grad=True/False`
(`TENSOR_MATCH`), and 2 when an inference tensor is passed to a function compiled for normal tensors. Each state gets
one entry that is then reused, so the cost is bounded and the finding is `info`. The failing guards carry no source
line; this finding names the call whose context differs.

## Example
```python
compiled = torch.compile(model)
for x in loader:
    loss = compiled(x).sum()        # grad enabled
with torch.no_grad():
    compiled(x_val)                 # DL208: GLOBAL_STATE guard fails, second compile
```

## Use instead
Nothing is wrong with one entry per mode. To avoid compiling evaluation at all, evaluate with the uncompiled module;
to share one entry, evaluate under the same grad mode.

## Known limitations
Only `with` blocks in the same file are considered; decorators (`@torch.no_grad()` on a caller) and grad mode set
by callers in other files are not followed. Inputs with differing `requires_grad` are not detected statically.

## Fix safety
No fix is offered.

## References
- PyTorch, "Dealing with recompilations": https://docs.pytorch.org/docs/stable/compile/programming_model.recompilation.html
- `torch/_dynamo/guards.py`: `GLOBAL_STATE`
"""

from dynamo_lens.model import Severity
from dynamo_lens.rules import Rule

RULE = Rule(
    code="DL208",
    name="autograd-state-varies",
    summary="A compiled callable is called under different grad modes: one compile per mode",
    default_severity=Severity.INFO,
    source="static",
    docs_url="https://docs.pytorch.org/docs/stable/compile/programming_model.recompilation.html",
)
