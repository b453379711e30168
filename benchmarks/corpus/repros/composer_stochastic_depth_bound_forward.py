"""Stochastic-depth style surgery done before compiling: a residual block gets a 0-d tensor
drop-rate attribute and a new forward bound on the instance. The "block" variant turns a
Bernoulli sample into a Python bool; the "sample" variant tests the tensor drop rate with if.
The outer model's forward is compiled (wrapped-forward idiom); count graphs and breaks."""

import torch
from torch import nn
from torch._dynamo.utils import counters


def block_forward(self, x):
    keep = (not self.training) or bool(torch.bernoulli(1 - self.drop_rate))
    return x + self.lin(x) if keep else x


def sample_forward(self, x):
    out = self.lin(x)
    if self.drop_rate:
        out = out * (torch.rand(x.shape[0], 1) + 1 - self.drop_rate).floor()
    return x + out


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)


torch.manual_seed(0)
for variant in (block_forward, sample_forward):
    torch._dynamo.reset()
    counters.clear()
    model = nn.Sequential(*[Block() for _ in range(3)])
    for b in model:
        b.drop_rate = torch.tensor(0.2)
        b.forward = variant.__get__(b)
    compiled = torch.compile(model, backend="eager")
    model.forward = compiled.dynamo_ctx(model.forward)
    for _ in range(4):
        model(torch.randn(4, 8))
    reasons = [r.splitlines()[0] for r in counters["graph_break"]]
    print(f"{variant.__name__}: graphs={counters['stats']['unique_graphs']} breaks={reasons}")
