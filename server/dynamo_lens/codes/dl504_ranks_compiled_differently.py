"""DL504 · ranks-compiled-differently

## What it does
Reported after an instrumented multi-process run (`dynamo-lens run -m torch.distributed.run …`, or a script that
starts workers with `torch.multiprocessing.spawn`) when the ranks did not compile alike: a frame compiled more often
on some ranks than on others, compiled on some ranks only, or first compiled in another order. The finding sits on
the line of the guard that failed on the rank that recompiled (for a failure without a line of its own, a tensor's
size or the grad mode, on that rank's call that recompiled), names the ranks, the frame and the guard, and points at
where the other ranks compiled the same frame.

## Why it matters
In data-parallel training every rank runs the same compiled code and meets the others at each collective
(all-reduce of gradients, barriers). A rank that recompiles spends seconds in Dynamo and the backend while the others
wait for it at the next collective; with a recompile on every step, the whole job runs at the pace of the slowest
rank. When the ranks' graphs differ, the collectives inside them can differ too, and the job hangs until the
collective timeout. The cause is almost always a value that differs by rank: a float attribute set from the rank, a
data shard of another length, a branch on `dist.get_rank()` inside compiled code. Measured on torch 2.13 with two
gloo ranks on CPU: a module's float attribute changed on rank 1 only compiled `forward` once on rank 0 and twice on
rank 1 (`self.scale == 1.0` failed there).

## Example
```python
rank = dist.get_rank()
model = torch.compile(Net())
for step in range(10):
    if rank == 1:
        model.scale = 1.0 + step     # DL504 (after a run): forward compiled 1x on rank 0, 2x on rank 1
    model(x)
```

## Use instead
Keep values that differ by rank out of the compiled code or make them tensors (`self.register_buffer("scale",
torch.tensor(1.0))`); give every rank inputs of the same shapes (`drop_last=True` in the sampler, padding), or mark
the varying dimension dynamic (`torch._dynamo.mark_dynamic(x, 0)`) so every rank compiles one graph for all sizes.

## Known limitations
Ranks are compared by frame (function, file and line) and reset epoch: a frame compiled under different names on
two ranks is two frames. Only the processes the run started under `dynamo-lens run` are compared (a rank on another
machine is not). The first rank to differ in compile order is named, not every one.

## Fix safety
No automatic fix: the change that makes ranks agree depends on why the value differs.

## References
- PyTorch, "Dealing with recompilations": https://docs.pytorch.org/docs/stable/compile/programming_model.recompilation.html
- tlparse's multi-rank report ("Diverging Compilation IDs detected across ranks"): https://github.com/meta-pytorch/tlparse
"""

from __future__ import annotations

from dynamo_lens.codes import Rule
from dynamo_lens.model import Severity

RULE = Rule(
    code="DL504",
    name="ranks-compiled-differently",
    summary="The ranks of a multi-process run compiled a frame differently: one waits for the other",
    default_severity=Severity.WARNING,
    source="runtime",
    docs_url="https://docs.pytorch.org/docs/stable/compile/programming_model.recompilation.html",
)
