"""DL103 · attr-created-in-forward

## What it does
Flags an attribute that the traced call creates (`self.cache = ...` in `forward` or a method reachable from it)
although no `__init__`, class body or other method defines it, *and* that a later call reads before writing it
again (`if hasattr(self, "cache")`, `getattr(self, "cache", None)`, `self.count = getattr(self, "count", 0) + 1`).

## Why it matters
On torch 2.13 the first call traces a module that does not have the attribute and guards on its absence; the
second call finds it and recompiles. What follows depends on the value (see DL101, DL105): a tensor of stable shape
costs that one extra compile; an int that changes every call recompiles every call until `recompile_limit` (8),
after which the frame runs eagerly.

An attribute that is only written, never read back by compiled code, is free (measured: one compile; Dynamo only
checks that the name does not shadow a parameter, buffer or submodule). It is not flagged.

## Example
```python
class Model(nn.Module):
    def forward(self, x):
        y = self.lin(x)
        if hasattr(self, "prev"):
            y = y + self.prev
        self.prev = y.detach()     # DL103: the second call recompiles
        return y
```

## Use instead
Define the attribute in `__init__` with a value of the kind it will hold (a tensor of the right shape, or a
buffer), so that every call sees the same structure:
```python
        self.register_buffer("prev", torch.zeros(4, 8))
```

## Known limitations
A class whose bases are outside the workspace (other than `torch.nn.Module`) may define the attribute in code the
analysis cannot see; such classes are skipped. Attributes set from outside the class (`model.prev = ...`) count as
defined only if some method of the class sets them.

## Fix safety
There is no automatic fix: the right initial value depends on the shape and dtype the attribute will hold.

## References
- PyTorch, "Dealing with recompilations": https://docs.pytorch.org/docs/stable/compile/programming_model.recompilation.html
"""

from dynamo_lens.model import Severity
from dynamo_lens.rules import Rule

RULE = Rule(
    code="DL103",
    name="attr-created-in-forward",
    summary="An attribute created inside the compiled forward is read back by later calls",
    default_severity=Severity.WARNING,
    source="static",
    docs_url="https://docs.pytorch.org/docs/stable/compile/programming_model.recompilation.html",
)
