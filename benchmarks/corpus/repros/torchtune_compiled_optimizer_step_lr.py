"""`optimizer.step = torch.compile(optimizer.step)` while a LambdaLR warmup/cosine schedule
rewrites the Python-float lr in param_groups after every step.

torch 2.13, backend="eager", AdamW, 12 steps: the second step fails the lr value guard and
recompiles once; after that the lr is a symbolic float: 2 compiles of the step in all.
"""

import math

import torch
import torch.nn as nn
from torch._dynamo.utils import counters

model = nn.Linear(8, 8)
opt = torch.optim.AdamW(model.parameters(), lr=2e-5)


def warmup_cosine(step, warmup=3, total=12):
    if step < warmup:
        return step / max(1, warmup)
    return 0.5 * (1 + math.cos(math.pi * (step - warmup) / (total - warmup)))


sched = torch.optim.lr_scheduler.LambdaLR(opt, warmup_cosine)
opt.step = torch.compile(opt.step, backend="eager")
x = torch.randn(4, 8)
for _step in range(12):
    model(x).sum().backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    sched.step()
print("compiles:", counters["stats"]["unique_graphs"], "frames:", dict(counters["frames"]))
