"""Per-block compiled module called with a per-batch Python int keyword argument (the longest
document of the batch) and a cumulative-lengths tensor whose length changes per batch.

torch 2.13, backend="eager", 12 batches: the first new value recompiles each block frame once,
then the int and the tensor length are symbolic (automatic dynamic): 2 compiles in all.
"""

import torch
import torch.nn as nn
from torch._dynamo.utils import counters


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x, *, max_doc_len=None, cu_doc_lens=None):
        h = self.lin(x)
        if max_doc_len is not None and cu_doc_lens is not None:
            h = h[:max_doc_len] * (cu_doc_lens[-1] + max_doc_len)
        return h


blocks = [Block() for _ in range(4)]
for b in blocks:
    b.compile(backend="eager")
x = torch.randn(64, 4)
for step in range(12):
    n_docs = 2 + step % 5
    cu = torch.arange(n_docs + 1) * 7
    for b in blocks:
        b(x, max_doc_len=6 + 2 * step, cu_doc_lens=cu)
print("compiles:", counters["stats"]["unique_graphs"])
