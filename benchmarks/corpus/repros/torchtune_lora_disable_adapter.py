"""DPO-style step with per-layer compiled blocks whose LoRA linear reads a `disabled` bool;
a context manager flips it to True for the reference forward (under no_grad) and back after.

torch 2.13, backend="eager", 6 steps: the reference pass fails the bool guard (and the grad-mode
guard) once, compiles a second entry, and both entries are reused afterwards: 2 compiles in all.
"""

from contextlib import contextmanager

import torch
import torch.nn as nn
from torch._dynamo.utils import counters


class LoRALinear(nn.Module):
    def __init__(self):
        super().__init__()
        self.base = nn.Linear(8, 8)
        self.a = nn.Linear(8, 2, bias=False)
        self.b = nn.Linear(2, 8, bias=False)
        self.disabled = False

    def forward(self, x):
        out = self.base(x)
        if self.disabled:
            return out
        return out + self.b(self.a(x))


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.q = LoRALinear()

    def forward(self, x):
        return x + self.q(x)


@contextmanager
def adapters_off(model):
    for m in model.modules():
        if isinstance(m, LoRALinear):
            m.disabled = True
    try:
        yield
    finally:
        for m in model.modules():
            if isinstance(m, LoRALinear):
                m.disabled = False


model = nn.Sequential(*[Layer() for _ in range(4)])
for layer in model:
    layer.compile(backend="eager")
x = torch.randn(2, 8, requires_grad=True)
for _step in range(6):
    model(x).sum().backward()  # policy forward
    with torch.no_grad(), adapters_off(model):
        model(x.detach())  # reference forward
print("compiles:", counters["stats"]["unique_graphs"])
