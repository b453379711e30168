"""DL502 · recompile-limit-hit

## What it does
Reported after an instrumented run when a compiled frame reached `torch._dynamo.config.recompile_limit` (8 cache
entries per frame by default) or `accumulated_recompile_limit` (256 across a frame's entries). The finding sits on
the line of the last failing guard (as DL501 attributes it) and names the limit and the last reason.

## Why it matters
When the limit is reached Dynamo stops compiling that frame. Calls whose inputs still match an existing cache entry
keep using it; every other call runs the original Python code eagerly, with no further log line. Throughput silently
drops to eager speed (or worse, with the guard checks on top), which is the slowdown users report as "torch.compile
made no difference". With `fullgraph=True` or `torch._dynamo.config.fail_on_recompile_limit_hit` the same event raises
`FailOnRecompileLimitHit` instead.

## Example
```python
class Model(nn.Module):
    def forward(self, x):
        self.steps += 1            # DL502: recompile_limit (8) hit; later calls run eagerly
        return self.lin(x) * self.steps
```

## Use instead
Fix the recompile cause reported as DL501 on the same frame. Raising the limit
(`torch.compile(model, recompile_limit=16)` from torch 2.12, or `torch._dynamo.config.recompile_limit = 16`) only
helps when the number of variants is genuinely bounded, such as a handful of fixed input shapes.

## Known limitations
Dynamo does not record which later calls ran eagerly; the report estimates their number when the shim could count
guard misses. The limit counts cache entries of one code object, so resume functions after a graph break have
separate counts.

## Fix safety
No automatic fix. Raising the limit is safe for results but multiplies compile time and memory.

## References
- PyTorch, "Dealing with recompilations": https://docs.pytorch.org/docs/stable/compile/programming_model.recompilation.html
- `torch/_dynamo/config.py`: `recompile_limit`, `accumulated_recompile_limit`, `fail_on_recompile_limit_hit`
"""

from __future__ import annotations

from dynamo_lens.codes import Rule
from dynamo_lens.model import Severity

RULE = Rule(
    code="DL502",
    name="recompile-limit-hit",
    summary="A compiled frame reached Dynamo's recompile limit and runs eagerly from then on",
    default_severity=Severity.ERROR,
    source="runtime",
    docs_url="https://docs.pytorch.org/docs/stable/compile/programming_model.recompilation.html",
)
