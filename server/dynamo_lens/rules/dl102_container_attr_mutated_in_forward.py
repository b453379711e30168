"""DL102 · container-attr-mutated-in-forward

## What it does
Flags a list, dict or set attribute of a module that the traced call reads and changes, so that the next call
sees a different container: `self.history.append(y)`, `self.cache[key] = v` with a computed key,
`self.log += [loss]`, `self.counts["a"] += 1`, `self.seen.add(i)`, in `forward` or in a method reachable from it.

## Why it matters
Dynamo guards containers on their structure: a list on its length (`LENGTH_CHECK`: `not self.history`, then
`len(self.history) == 1`, ...), a dict on its keys (`DICT_LENGTH`, key checks), and every element the traced code
reads (a `TENSOR_MATCH` per stored tensor, an `EQUALS_MATCH` per Python number). On torch 2.13 a list that grows
on every call fails its length guard on every call: each call recompiles until `recompile_limit` (8) is hit, and
from then on the frame silently runs eagerly. An int stored in a dict and incremented behaves the same way.

Containers that stop changing cost a bounded number of compiles and are reported at a lower severity: a dict that
gains a fixed key on the first call compiles twice (measured: `DICT_LENGTH not self.stats` fails once). A container
that the call empties again before it returns (`self.buf.clear()` on every path, at the end) is not flagged.
Replacing the container before reading it (`self.buf = []` first) is not carried across calls and not flagged.

## Example
```python
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.history = []

    def forward(self, x):
        y = self.lin(x)
        self.history.append(y.detach())   # DL102: recompiles every call, eager after 8
        return y
```

## Use instead
Return what you want to record and keep the bookkeeping outside the compiled call:
```python
y = compiled(x)
history.append(y.detach())
```
Or move the append into a helper decorated with `@torch.compiler.disable` (one graph break per call, no
recompiles), or pre-populate a dict's keys in `__init__` so that its structure never changes.

## Known limitations
The analysis follows `self.<name>` in statement order through `self.method()` calls and properties. It does not see
containers mutated through an alias (`h = self.history; h.append(x)`) or through another object, and it cannot
tell how large a container that is both grown and shrunk gets; those are reported as unbounded. Attributes whose
`__init__` value is a tensor, a module or a tuple are never treated as containers.

## Fix safety
There is no automatic fix: moving state out of `forward` changes the module's interface.

## References
- PyTorch, "Dealing with recompilations": https://docs.pytorch.org/docs/stable/compile/programming_model.recompilation.html
- `torch/_dynamo/config.py`: `recompile_limit`
"""

from dynamo_lens.model import Severity
from dynamo_lens.rules import Rule

RULE = Rule(
    code="DL102",
    name="container-attr-mutated-in-forward",
    summary="A list, dict or set module attribute is changed inside the compiled forward and read by the next call",
    default_severity=Severity.WARNING,
    source="static",
    docs_url="https://docs.pytorch.org/docs/stable/compile/programming_model.recompilation.html",
)
