"""accelerate-style regression model: a bool flag set in forward after printing once, model compiled whole."""

import torch
from torch._dynamo.utils import counters


class Regression(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Parameter(torch.tensor(2.0))
        self.b = torch.nn.Parameter(torch.tensor(1.0))
        self.first_batch = True

    def forward(self, x):
        if self.first_batch:
            print("dtype", self.a.dtype, x.dtype)
            self.first_batch = False
        return x * self.a + self.b


counters.clear()
model = torch.compile(Regression(), backend="eager")
x = torch.randn(4)
for _ in range(6):
    model(x).sum().backward()
print("frames compiled:", counters["stats"]["unique_graphs"])
print("graph breaks:", dict(counters["graph_break"]))
print("calls that compiled:", counters["frames"]["ok"])
