"""DL202 · ephemeral-module-argument

## What it does
Flags a module constructed inside a loop (or inline in the call) and passed as an argument to a compiled function:
`run(Block(), x)`, `step(nn.Linear(8, 8), batch)`.

## Why it matters
On torch 2.13 modules are unspecialized: Dynamo guards the module's type and the attributes it reads, and passes the
parameters as graph inputs. Measured on torch 2.13 (`backend="eager"`, 12 calls, a fresh `Block()` each call):
**1 compile**, no recompile. The cost appears when the fresh modules differ in a Python scalar the compiled code
reads: `run(Block(k=i), x)` with `self.k = k` read in `forward` compiled 8 times and then hit `recompile_limit` (8)
→ eager, because each instance's int is guarded by value (`EQUALS_MATCH`).

On torch < 2.5 (`inline_inbuilt_nn_modules` off) the module was specialized and guarded by identity (`ID_MATCH`):
every fresh module was a cache miss, dead modules' entries still counted towards the limit ("Cache line invalidated
... deallocated"), so the pattern recompiled until the limit (pytorch#130776). Reproduced on 2.13 by the legacy
switch `torchdynamo_force_dynamic = False`: 8 compiles + limit.

Building a module per call is also rarely what was meant: its parameters are freshly initialised on every call and
never trained. Reported at `info` on torch 2.13, and at `warning` when a constructor keyword that changes with the
loop counter is stored by `__init__` in an attribute that the module's methods read (the 8 + limit case above).

## Example
```python
@torch.compile
def run(mod, x):
    return mod(x) + 1

for x in loader:
    run(Block(), x)                 # DL202: a new module (and new weights) on every call
```

## Use instead
Build the module once, outside the loop, and pass the same instance on every call:
```python
block = Block()
for x in loader:
    run(block, x)
```

## Known limitations
Only constructor calls of classes known to be `nn.Module` subclasses (workspace classes and `torch.nn` layers) are
recognised, when they appear directly as an argument or through a name bound in the same loop body.

## Fix safety
No automatic fix: sharing one instance changes behaviour whenever the per-call construction was intended (fresh
random weights, different constructor arguments).

## References
- pytorch/pytorch#130776: https://github.com/pytorch/pytorch/issues/130776
- `torch/_dynamo/mutation_guard.py`: `is_dynamic_nn_module`
"""

from dynamo_lens.model import Severity
from dynamo_lens.rules import Rule

RULE = Rule(
    code="DL202",
    name="ephemeral-module-argument",
    summary="A module built per call is passed to a compiled function",
    default_severity=Severity.INFO,
    source="static",
    docs_url="https://github.com/pytorch/pytorch/issues/130776",
    fix_title="Build the module once, outside the loop",
)
