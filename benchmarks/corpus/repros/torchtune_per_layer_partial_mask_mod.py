"""Per-layer compile of identical layer classes that hold a per-layer mask helper: a fresh
functools.partial (same function, same keyword) on most layers and None on every 4th layer.

torch 2.13, backend="eager", 16 layers x 2 steps: partials are guarded by type and contents, not
identity, so all partial-holding layers share one entry and the None layers get a second one:
2 compiles in all (a recompile per layer kind, not per layer).
"""

import functools

import torch
import torch.nn as nn
from torch._dynamo.utils import counters


def chunked_mask(x, *, chunk):
    return x * chunk


class Layer(nn.Module):
    def __init__(self, mask_mod):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.mask_mod = mask_mod

    def forward(self, x):
        if self.mask_mod is not None:
            x = self.mask_mod(x)
        return self.lin(x)


layers = [Layer(None if (i + 1) % 4 == 0 else functools.partial(chunked_mask, chunk=8)) for i in range(16)]
for layer in layers:
    layer.compile(backend="eager")
x = torch.randn(2, 4, requires_grad=True)  # like the embedding output feeding layer 0
for _step in range(2):
    h = x
    for layer in layers:
        h = layer(h)
print("compiles:", counters["stats"]["unique_graphs"])
