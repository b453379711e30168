"""A per-batch Python int carried inside a NamedTuple argument of a regionally compiled block
(like varlen metadata whose max sequence length comes from `.item()` on every batch).

torch 2.13, backend="eager", fullgraph=True, 12 batches with a new max length each:
the first change recompiles, then the int is symbolic (automatic dynamic): 2 compiles in all.
"""

from typing import NamedTuple

import torch
import torch.nn as nn
from torch._dynamo.utils import counters


class Meta(NamedTuple):
    offsets: torch.Tensor
    max_len: int


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x, meta):
        return self.lin(x)[: meta.max_len] * meta.max_len


blocks = [Block() for _ in range(4)]
for b in blocks:
    b.compile(backend="eager", fullgraph=True)
x = torch.randn(64, 4)
for step in range(12):
    meta = Meta(torch.zeros(3, dtype=torch.int32), 5 + 3 * step)
    for b in blocks:
        b(x, meta)
print("compiles:", counters["stats"]["unique_graphs"])
