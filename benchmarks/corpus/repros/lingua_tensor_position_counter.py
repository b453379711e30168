"""A generator object (not a module) compiles its own bound decode method; the per-sequence position counter it
reads and bumps with `+= 1` is a tensor set up by a disabled setup method, not a Python int.

Expected: 1 compile over many decode steps (a tensor is guarded on metadata, and the in-place add is traced),
a second only when the number of sequences changes.
"""

import torch
from torch._dynamo.utils import counters


class Decoder:
    def __init__(self):
        self.weight = torch.randn(1, 8)
        self.pos = None  # starts as None, set per batch below
        self.step = torch.compile(self.step, backend="eager")

    @torch.compiler.disable
    def setup(self, lengths):
        self.pos = lengths.clone()

    def step(self, tok):
        out = (tok.float().unsqueeze(-1) + self.pos.unsqueeze(-1)) @ self.weight
        self.pos += 1
        return out


dec = Decoder()
for n_seqs in (3, 3, 5):
    dec.setup(torch.randint(1, 10, (n_seqs,)))
    for _ in range(10):
        dec.step(torch.randint(0, 32, (n_seqs,)))
    print(f"batch of {n_seqs}: unique_graphs={counters['stats']['unique_graphs']}, pos={dec.pos.tolist()}")
