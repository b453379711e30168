"""Per-block compile, a training loop that evaluates every few steps (model.eval() + no_grad)
and calls torch.compiler.reset() at the end of every evaluation.

torch 2.13, backend="eager", 12 steps, eval every 4: the reset throws away the training entries,
so each eval costs the eval compiles and the next training step compiles the blocks from scratch
(a first compile, no recompile event). Prints the compile count per phase.
"""

import torch
import torch.nn as nn
from torch._dynamo.utils import counters


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.att = nn.Linear(8, 8)
        self.ff = nn.Linear(8, 8)
        self.p = 0.1

    def forward(self, x):
        a = self.att(x)
        a = torch.nn.functional.dropout(a, 0.0 if not self.training else self.p)
        return x + self.ff(x + a)


blocks = nn.ModuleList([Block() for _ in range(4)])
for b in blocks:
    b.compile(backend="eager")

x = torch.randn(2, 8, requires_grad=True)
log = []
for step in range(1, 13):
    before = counters["stats"]["unique_graphs"]
    blocks.train()
    h = x
    for b in blocks:
        h = b(h)
    h.sum().backward()
    log.append(("train", step, counters["stats"]["unique_graphs"] - before))
    if step % 4 == 0:
        before = counters["stats"]["unique_graphs"]
        blocks.eval()
        with torch.no_grad():
            h = x.detach()
            for b in blocks:
                h = b(h)
        torch.compiler.reset()
        log.append(("eval", step, counters["stats"]["unique_graphs"] - before))
print([e for e in log if e[2]])
print("total compiles:", counters["stats"]["unique_graphs"], "(1 without the evals)")
