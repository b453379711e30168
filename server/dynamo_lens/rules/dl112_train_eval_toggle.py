"""DL112 · train-eval-toggle

## What it does
Flags `.train()`, `.train(False)` and `.eval()` on a compiled module (or on its compiled wrapper) in a program that
calls the compiled module, so that the module runs in both modes.

## Why it matters
`nn.Module.training` is a Python bool. Submodules whose `forward` reads it (`Dropout`, `BatchNorm`, any
`if self.training:`) make Dynamo guard it by value (`TRUE_MATCH self._modules['drop'].training == True`). Measured on
torch 2.13 (`backend="eager"`, 12 calls alternating `.train()`/`.eval()`): 2 compiles in all, one per mode, and both
entries are reused afterwards. A module whose code never reads `training` (e.g. only `Linear` layers) compiled once.
The cost is bounded, so this is an `info` finding: it explains the second compile you see in a log, nothing more.
Calling evaluation under `torch.no_grad()` adds a grad-mode guard as well (see DL208), still one entry per mode.

## Example
```python
compiled = torch.compile(model)
for epoch in range(10):
    model.train()                   # DL112: one compile for training mode ...
    train_one_epoch(compiled)
    model.eval()                    # ... and one for eval mode (2 in all)
    evaluate(compiled)
```

## Use instead
Nothing needs to change: two compiled entries are the expected price of two modes. To avoid compiling the
evaluation mode at all, run evaluation on the uncompiled module (`model(x)` instead of `compiled(x)`).

## Known limitations
Only a switch *to* eval mode (or to a mode computed at run time) after the compiled module ran is reported, on a
name bound in the same file. For workspace classes the finding needs a layer that reads `training`: a `Dropout`,
`BatchNorm`, `InstanceNorm`, RNN or attention layer among the submodules built in `__init__` (recursively), a
`self.training` read, or a submodule from outside the workspace (assumed to read it). A `torch.nn` layer without
such behaviour (`nn.Linear`) is not reported; `nn.Sequential` and other containers are.

## Fix safety
No fix is offered.

## References
- PyTorch, "Dealing with recompilations": https://docs.pytorch.org/docs/stable/compile/programming_model.recompilation.html
- `torch.nn.Module.train`: https://docs.pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.train
"""

from dynamo_lens.model import Severity
from dynamo_lens.rules import Rule

RULE = Rule(
    code="DL112",
    name="train-eval-toggle",
    summary="A compiled module is switched between training and eval mode: one compile per mode",
    default_severity=Severity.INFO,
    source="static",
    docs_url="https://docs.pytorch.org/docs/stable/compile/programming_model.recompilation.html",
)
