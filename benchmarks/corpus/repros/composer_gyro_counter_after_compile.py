"""GyroDropout-style surgery: after the model's forward is compiled (wrapped-forward idiom),
an algorithm swaps Dropout for a layer whose forward bumps an int step counter every training
call and picks a new mask every `period` steps. Count compiles of the outer forward."""

import torch
from torch import nn
from torch._dynamo.utils import counters


class CountingDropout(nn.Module):
    def __init__(self, period):
        super().__init__()
        self.period = period
        self.step = 0
        self.mask = torch.ones(1, 8)

    def forward(self, x):
        if self.training:
            if self.step % self.period == 0:
                self.mask = (torch.rand(1, x.shape[1]) > 0.5).float()
            self.step += 1
            return x * self.mask * 2
        return x


torch._dynamo.reset()
counters.clear()
model = nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.5), nn.Linear(8, 2))
compiled = torch.compile(model, backend="eager")
model.forward = compiled.dynamo_ctx(model.forward)
model(torch.randn(4, 8))  # compiled before the surgery, as in the trainer's __init__
model[1] = CountingDropout(period=100)  # surgery at fit start
for _ in range(20):
    model(torch.randn(4, 8)).sum().backward()
print("graphs compiled over 21 calls:", counters["stats"]["unique_graphs"])
print("recompile-limit hits:", dict(counters["frames"]))
