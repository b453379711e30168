"""DL507 · global-hook-fired-extra

## What it does
Reported after an instrumented run where torch warned, at a call of a module wrapped with `torch.compile(module)`,
that global module hooks (`register_module_forward_hook` and the like) were installed: the finding sits on that call,
the line torch's warning names. It is what DL402 predicts before the run, seen happening.

## Why it matters
`torch.compile(module)` returns an `OptimizedModule` wrapper, itself an `nn.Module`: every global hook runs for the
wrapper as well as for the modules inside, so each call fires the hooks once more than eager code does. Measured on
torch 2.13 (`backend="eager"`, `nn.Sequential(nn.Linear, nn.ReLU)`, a global forward hook that records the module):
3 firings per eager call, 4 per compiled call. A hook that counts, logs, or changes outputs sees an extra module, one
whose output is the whole model's. torch 2.8 and later warn about it on the first such call.

## Example
```python
register_module_forward_hook(record_activation)
compiled = torch.compile(model)
compiled(x)      # DL507 (after a run): the global hooks fire an extra time, for the OptimizedModule
```

## Use instead
Compile in place with `model.compile()` (no wrapper module), or register hooks on the modules you want to observe
instead of globally.

## Known limitations
Found through torch's own warning, so only on torch 2.8 and later, and not when the program silences or records
warnings itself (`warnings.filterwarnings("ignore")`, `warnings.catch_warnings(record=True)`, which pytest uses around
every test: "Run Test Under Cursor" does not report it). Python shows the warning once per calling line, so each
such line is reported once, not per call.

## Fix safety
No automatic fix: whether the program can compile in place depends on how it uses the returned wrapper.

## References
- `torch/_dynamo/eval_frame.py`: `OptimizedModule.__call__` (the warning)
- PyTorch, "torch.compile and nn.Module": https://docs.pytorch.org/docs/stable/torch.compiler_nn_module.html
"""

from __future__ import annotations

from dynamo_lens.codes import Rule
from dynamo_lens.model import Severity

RULE = Rule(
    code="DL507",
    name="global-hook-fired-extra",
    summary="Global module hooks fired an extra time for a torch.compile(module) wrapper",
    default_severity=Severity.WARNING,
    source="runtime",
    docs_url="https://docs.pytorch.org/docs/stable/torch.compiler_nn_module.html",
)
