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

from dynamo_lens.model import Severity
from dynamo_lens.rules import Rule

RULE = Rule(
    code="DL105",
    name="tensor-attr-rebound-in-forward",
    summary="A tensor attribute read by the next call changes from None to a tensor, or grows, inside forward",
    default_severity=Severity.INFO,
    source="static",
    docs_url="https://docs.pytorch.org/docs/stable/compile/programming_model.recompilation.html",
)
