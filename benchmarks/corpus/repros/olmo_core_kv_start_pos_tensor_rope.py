"""Block compiled in place (module.compile) whose attention takes the rotary start position
from a KV-cache manager that stores it as a 0-d integer tensor buffer, then compares it with
the cached table length and slices the table with it (decode loop under inference_mode).

Measures graph breaks and compiled graphs over a prefill plus 10 decode steps.
"""

import torch
import torch.nn as nn
from torch._dynamo.utils import counters


class Cache(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("seqlens", torch.zeros((), dtype=torch.int32))

    def position(self):
        return self.seqlens


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.table = torch.randn(64, 8)
        self.cache = Cache()

    def forward(self, x):
        start = self.cache.position()
        needed = start + x.shape[1]
        if self.table.shape[0] < needed:
            raise RuntimeError("table too short")
        rot = self.table[start : start + x.shape[1]]
        self.cache.seqlens.add_(x.shape[1])
        return self.lin(x) * rot


block = Block()
block.compile(backend="eager")
with torch.inference_mode():
    block(torch.randn(2, 5, 8))
    for _ in range(10):
        block(torch.randn(2, 1, 8))
print("unique graphs:", counters["stats"]["unique_graphs"])
print("frames total/ok:", counters["frames"]["total"], counters["frames"]["ok"])
print("break reasons:", sorted({k.splitlines()[0] for k in counters["unimplemented"]}))
print("resume-frame calls:", dict(counters["resumes"]))
