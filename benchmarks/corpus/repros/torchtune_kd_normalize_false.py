"""A loss module compiled on its own (the chunked wrapper compiles only the inner per-chunk loss)
whose forward returns early when called with normalize=False, before a branch on a tensor value.

torch 2.13, backend="eager": called the way the chunked wrapper calls it (normalize=False, 8 chunks
x 3 steps) Dynamo specialises on the constant bool, never traces the tensor branch: 1 graph,
0 graph breaks. Called with normalize=True the same branch does break (GB0170).
"""

import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch._dynamo.utils import counters


class KL(nn.Module):
    def forward(self, student, teacher, labels, normalize=True):
        t = F.softmax(teacher, dim=-1)
        s = F.log_softmax(student, dim=-1)
        per_tok = (t * s).sum(-1)
        mask = (labels != -100).int()
        if not normalize:
            return -(per_tok * mask).sum()
        total = mask.sum()
        if total == 0:  # tensor-valued condition
            return torch.tensor(0.0)
        return -(per_tok * mask).sum() / total


normalize = len(sys.argv) > 1 and sys.argv[1] == "normalize"
inner = torch.compile(KL(), backend="eager")
for _step in range(3):
    for _chunk in range(8):
        inner(torch.randn(6, 10), torch.randn(6, 10), torch.randint(0, 10, (6,)), normalize=normalize)
print(
    f"normalize={normalize} graphs:",
    counters["stats"]["unique_graphs"],
    "graph breaks:",
    sum(counters["graph_break"].values()) + sum(counters["unimplemented"].values()),
)
