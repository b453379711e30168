"""Regional compile idiom: `for block in layers: block.compile(fullgraph=True)`.

Measures (torch 2.13, backend="eager"):
  uniform    - every block identical: the loop compiles each block in place, 1 compile in all
  moe_flag   - a per-layer bool (dense first layer, MoE after) read in forward: 1 extra compile
  layer_int  - a per-layer int read in forward: 8 compiles, then FailOnRecompileLimitHit (fullgraph)
  + eval     - afterwards, eval() + no_grad (a validation pass) adds one entry per variant
"""

import sys

import torch
import torch.nn as nn
from torch._dynamo.utils import counters

mode = sys.argv[1] if len(sys.argv) > 1 else "uniform"


class Block(nn.Module):
    def __init__(self, i):
        super().__init__()
        self.proj = nn.Linear(8, 8)
        self.expert = nn.Linear(8, 8)
        self.use_expert = i > 0  # like a dense-first-layers MoE stack
        self.idx = i

    def forward(self, x):
        h = self.proj(x)
        if mode == "moe_flag" and self.use_expert:
            h = h + self.expert(h) * (1.0 if self.training else 0.5)
        if mode == "layer_int":
            h = h * (self.idx + 1)
        return x + h


layers = nn.ModuleList([Block(i) for i in range(12)])
for block in layers:
    block.compile(backend="eager", fullgraph=True)

x = torch.randn(4, 8, requires_grad=True)  # like an embedding output
try:
    for _step in range(3):
        h = x
        for block in layers:
            h = block(h)
        h.sum().backward()
    train_graphs = counters["stats"]["unique_graphs"]
    layers.eval()
    with torch.no_grad():
        h = x.detach()
        for block in layers:
            h = block(h)
    print(mode, "train compiles:", train_graphs, "after eval/no_grad pass:", counters["stats"]["unique_graphs"])
except Exception as e:  # fullgraph=True turns the recompile limit into an error
    print(mode, "compiles before error:", counters["stats"]["unique_graphs"], "error:", type(e).__name__)
