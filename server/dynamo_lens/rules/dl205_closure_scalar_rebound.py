"""DL205 · closure-scalar-rebound

## What it does
Flags a read, inside compiled code, of a closed-over variable of an enclosing function that holds a Python scalar and
is bound again while the compiled function is in use: rebound later in the enclosing function (typically in the loop
that calls the compiled function), through `nonlocal` in another inner function, or captured from a loop variable
when a fresh closure is compiled on every iteration. The finding sits on the read; the rebinding is related.

## Why it matters
Dynamo guards the cell contents of every free variable it reads (`EQUALS_MATCH scale == 2`; for a helper closure it
inlines, `helper.__closure__[0].cell_contents == 2`). Measured on torch 2.13 (`backend="eager"`, 12 calls, a new
value each time):

* `int` and `float`: one recompile, after which automatic dynamic shapes turn the cell into a symbolic value
  (2 compiles in all). An int that decides Python control flow or a size (`range(n)`, `x.view(n, -1)` with many
  values) stays specialised: `range(n)` recompiled on every value and hit `recompile_limit` (8) → eager.
* `str`: one compile per distinct value, never dynamic: the limit is hit.
* `bool`: one compile per value (2 in all).

Closures are not globals: unlike a global int (always specialised, see DL204), a closure int usually costs a single
extra compile, so most cases are reported at `info`; strings and ints that feed `range()` are reported at the
rule's default severity.

## Example
```python
def train(x):
    scale = 1

    @torch.compile
    def step(x):
        return x * scale           # DL205: guarded `scale == 1`

    for i in range(100):
        scale = i + 2              # rebinds the cell step() reads
        step(x)
```

## Use instead
Pass the value as an argument, or keep it in a tensor created once and updated in place (`scale.fill_(i + 2)`):
tensors are guarded on metadata, not on their values.

## Known limitations
The analysis looks at functions nested in one file: a closure built in one module and compiled in another is seen
only when the compiled function is defined inside the enclosing function. Kinds are inferred from the assigned
expressions (literals, arithmetic, `range()` loop variables, `len()`/`int()`/`float()`/`str()`); other values are
not reported. Whether an int decides control flow is only recognised for `range(name)`.

## Fix safety
No automatic fix: turning a closed-over value into an argument changes the function's signature and every call.

## References
- PyTorch, "Dealing with recompilations": https://docs.pytorch.org/docs/stable/compile/programming_model.recompilation.html
- `torch/_dynamo/config.py`: `automatic_dynamic_shapes`, `recompile_limit`
"""

from dynamo_lens.model import Severity
from dynamo_lens.rules import Rule

RULE = Rule(
    code="DL205",
    name="closure-scalar-rebound",
    summary="Compiled code reads a closed-over Python scalar that is rebound between calls",
    default_severity=Severity.WARNING,
    source="static",
    docs_url="https://docs.pytorch.org/docs/stable/compile/programming_model.recompilation.html",
    fix_title="Pass the value as an argument or keep it in a tensor",
)
