"""A compiled layer (module.compile()) whose forward returns its input untouched when an optional
input is missing (like a cross-attention layer given no encoder states).

torch 2.13, backend="eager": if the FIRST call takes the no-op path, Dynamo traces no ops, skips the
frame ("No ops traced for the FX graph") and never compiles that code object again: later calls
with the optional input run eagerly (0 graphs). If the first call has the input: 1 graph.
"""

import sys

import torch
import torch.nn as nn
from torch._dynamo.utils import counters


class CrossAttn(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x, *, enc=None):
        if enc is None:
            return x
        return x + self.proj(enc)


first_empty = len(sys.argv) > 1 and sys.argv[1] == "empty_first"
layer = CrossAttn()
layer.compile(backend="eager")
x = torch.randn(2, 4)
inputs = [None, torch.randn(2, 4)] if first_empty else [torch.randn(2, 4), None]
for _ in range(3):
    for enc in inputs:
        layer(x, enc=enc)
print(
    "empty first" if first_empty else "input first",
    "graphs:",
    counters["stats"]["unique_graphs"],
    "frames:",
    dict(counters["frames"]),
)
