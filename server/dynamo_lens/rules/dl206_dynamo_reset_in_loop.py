"""DL206 · dynamo-reset-in-loop

## What it does
Flags `torch._dynamo.reset()` and `torch.compiler.reset()` evaluated inside a loop, or inside a function called from
a loop in the same file, when that loop also calls a compiled callable that was compiled outside it (so the reset
throws away exactly the code the loop is about to reuse).

## Why it matters
`reset()` drops every compiled cache entry of every function. The next call compiles from scratch, and because the
cache is empty this is a *first* compile, not a recompile: `TORCH_LOGS=recompiles` shows nothing and the recompile
limit is never reached. Measured on torch 2.13 (`backend="eager"`, 12 iterations, a reset before each call): 12
compiles with either spelling, against 1 without the reset. With Inductor each of those compiles costs seconds.

## Example
```python
compiled = torch.compile(model)
for batch in loader:
    torch._dynamo.reset()           # DL206: every step compiles from scratch
    compiled(batch)
```

## Use instead
Reset once, between independent experiments (or in test teardown), never per step. If the reset was meant to get
around the recompile limit, fix the recompiles instead (see `dynamo-lens run`).

## Known limitations
Functions called from a loop are followed one level, within one file. A reset under a condition inside the loop
(`if step % 1000 == 0:`) is still reported. A loop that does not call a compiled callable of
this file compiled outside it (one reset per experiment or per test, each compiling its own model; a benchmark
helper that resets and compiles) is not reported, nor is a reset in a file that compiles nothing.

## Fix safety
No automatic fix: where the reset belongs depends on why it was written.

## References
- `torch.compiler.reset`: https://docs.pytorch.org/docs/stable/generated/torch.compiler.reset.html
"""

from dynamo_lens.model import Severity
from dynamo_lens.rules import Rule

RULE = Rule(
    code="DL206",
    name="dynamo-reset-in-loop",
    summary="The Dynamo cache is reset on every iteration of a loop",
    default_severity=Severity.WARNING,
    source="static",
    docs_url="https://docs.pytorch.org/docs/stable/generated/torch.compiler.reset.html",
)
