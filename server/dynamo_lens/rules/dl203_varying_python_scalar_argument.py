"""DL203 · varying-python-scalar-argument

## What it does
Flags a call of a compiled callable, inside a loop, with a Python `int`, `float` or `str` argument whose value
changes from one iteration to the next: the loop counter (`range()`, the index of `enumerate()`), arithmetic on it,
an f-string built from it.

## Why it matters
Dynamo first specialises every Python scalar argument to its value (`EQUALS_MATCH n == 2`). Measured on torch 2.13
(`backend="eager"`, 12 calls, a new value each call):

* `int` or `float` argument used in arithmetic: one recompile, then automatic dynamic turns it into a symbolic value
  (2 compiles in all). An int used as a size behaved the same (`torch.zeros(n)`, `x[:n]`, `x.repeat(n, 1)`: 2
  compiles for 12 values); `x.reshape(n, -1)` added divisibility guards (5 compiles for 10 powers of two). Reported
  at `info`.
* an argument the compiled function never reads is not guarded (1 compile): not reported.
* the same with `dynamic=False` at the compile site: one compile per value, 8 compiles then `recompile_limit` (8) →
  eager. Reported at the rule's default severity (warning).
* an int that decides Python control flow stays specialised: `for _ in range(n)` in the compiled function compiled
  per value (8 + limit, warning); `if n > 5:` added one compile per branch (3 in all).
* `str` argument: one compile per distinct value, never dynamic (8 + limit, warning).
* `dynamic=True` at the compile site: 1 compile for int arguments.

## Example
```python
@torch.compile(dynamic=False)
def f(x, n):
    return x * n

for i in range(100):
    f(x, i)                         # DL203: `n` guarded by value, eager after 8 values
```

## Use instead
Pass the changing value as a tensor (`torch.tensor(i)`), mark the compile site `dynamic=True` (or drop
`dynamic=False`), or keep strings and loop bounds that select code paths out of the compiled function.

## Known limitations
Only values whose kind is evident from the syntax are followed (loop counters of `range()`/`enumerate()`, numeric
arithmetic on them, f-strings, `str()`); values from data loaders are not assumed to be scalars. Whether the callee uses
the argument in `range()` is checked for compiled functions defined in the same file.

## Fix safety
Adding `dynamic=True` at the compile site is offered as an unsafe fix: it makes every input dynamic, which can slow
down the compiled code or the compile.

## References
- PyTorch, "Dealing with recompilations": https://docs.pytorch.org/docs/stable/compile/programming_model.recompilation.html
- PyTorch, "Dynamic shapes": https://docs.pytorch.org/docs/stable/torch.compiler_dynamic_shapes.html
"""

from dynamo_lens.model import Severity
from dynamo_lens.rules import Rule

RULE = Rule(
    code="DL203",
    name="varying-python-scalar-argument",
    summary="A compiled callable is called with a Python scalar argument that changes between calls",
    default_severity=Severity.WARNING,
    source="static",
    docs_url="https://docs.pytorch.org/docs/stable/compile/programming_model.recompilation.html",
    fix_title="Compile with dynamic=True",
)
