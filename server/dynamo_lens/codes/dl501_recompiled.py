"""DL501 · recompiled

## What it does
Reported after an instrumented run (`dynamo-lens run`) for every compiled frame that Dynamo compiled more than once.
The finding sits on the user line responsible for the guard that failed: the read that installed the guard
(`self.steps += 1` for `self.steps == 2`), or, for failures that carry no source line of their own (a tensor's size,
dtype, stride or `requires_grad`, grad mode, the default device), the user's call that triggered the recompile. The
message names the guard, its kind and how often the frame recompiled (recompiles that produced a cache entry; one
that the recompile limit refused is counted apart, and reported by DL502); the guard diff between consecutive cache
entries shows what changed (`self.steps == 2` → `== 3`, `x` size[0] 4 → dynamic).

## Why it matters
Every recompile re-runs Dynamo's tracing and the backend compiler (seconds with Inductor) and adds one more cache
entry whose guards are checked on every call. A frame that recompiles on every call never reaches a steady state and,
after `torch._dynamo.config.recompile_limit` (8) entries, falls back to eager execution (see DL502). Dynamo reports
only the first failing guard of each earlier entry, so fixing one cause can reveal the next. A line whose guard failed
once, the new entry then serving every later call (a train/eval switch, a grad mode, a size before automatic dynamic
shapes made it dynamic), is reported as info; recompiles that recur, or that the limit refused, are warnings.

## Example
```python
class Model(nn.Module):
    def forward(self, x):
        self.steps += 1            # DL501: recompiled 7\N{MULTIPLICATION SIGN}: `self.steps == 7` failed (EQUALS_MATCH)
        return self.lin(x) * self.steps
```

## Use instead
Remove what the failing guard depends on from the compiled region's Python state: keep counters in tensor buffers
updated in place, mark varying sizes dynamic before the first call (`torch._dynamo.mark_dynamic(x, 0)`), call the
compiled code under one grad mode, pass varying Python numbers as tensors. The static codes (DL1xx, DL2xx) describe
the fix for each cause; a runtime finding on the same line confirms them.

## Known limitations
Attribution needs the shim's data: on a torch where a listener is missing (see the report's `missing` list) the
finding falls back to the compiled function's `def` line. Frames compiled again after `torch._dynamo.reset()` are
counted per compile id as Dynamo numbers them. Runtime findings describe one run; a line edited since the run may no
longer match.

## Fix safety
Where a tensor's size failed the guard (`tensor 'x' size mismatch at index 0`) and the call passes that tensor as a
plain name, the finding offers `torch._dynamo.mark_dynamic(<name>, <dim>)` on the line before the call's statement
(measured: ten batch sizes under `dynamic=False` go from 8 compiles and the limit to 1 compile; "Re-run to verify"
shows it). The fix is unsafe: code that specialises on that size then raises a constraint violation instead of
recompiling. Other causes carry no fix of their own; the static finding a run confirms does, with its safety.

## References
- PyTorch, "Dealing with recompilations": https://docs.pytorch.org/docs/stable/compile/programming_model.recompilation.html
- `TORCH_LOGS=recompiles` prints the same reasons without the user-line attribution
"""

from __future__ import annotations

from dynamo_lens.codes import Rule
from dynamo_lens.model import Severity

RULE = Rule(
    code="DL501",
    name="recompiled",
    summary="A compiled frame was compiled more than once during the run; the failing guard is shown at its user line",
    default_severity=Severity.WARNING,
    source="runtime",
    docs_url="https://docs.pytorch.org/docs/stable/compile/programming_model.recompilation.html",
)
