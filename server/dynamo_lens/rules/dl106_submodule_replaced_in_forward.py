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

from dynamo_lens.model import Severity
from dynamo_lens.rules import Rule

RULE = Rule(
    code="DL106",
    name="submodule-replaced-in-forward",
    summary="A module with parameters is built inside the compiled forward",
    default_severity=Severity.WARNING,
    source="static",
    docs_url="https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0264.html",
)
