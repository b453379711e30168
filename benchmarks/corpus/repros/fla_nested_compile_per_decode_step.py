"""A decoding branch of an attention layer defines a small helper and decorates it with @torch.compile inside
forward, so a fresh compiled wrapper is made at every decoding step of every layer. The key cache it updates grows
by one token per step.

Expected: the fresh wrappers share the helper's code object and its Dynamo cache, so the cost is the same as one
module-level compile: 2 compiles in all (the second when the cache length first changes, after which that dim is
dynamic), none per layer or per step.
"""

import torch
from torch._dynamo.utils import counters


def decode_layer(past_k, w, beta):
    @torch.compile(backend="eager")
    def rank_one_update(k, w, beta):
        return k - beta[..., None] * (k * w).sum(-1, keepdim=True) * w

    return rank_one_update(past_k, w, beta)


for t in range(1, 12):  # decoding steps: the cache holds t tokens
    for _layer in range(4):
        decode_layer(torch.randn(2, t, 4, 8), torch.randn(2, 1, 4, 8), torch.randn(2, 1, 4))
print("compiles over 11 steps x 4 layers:", counters["stats"]["unique_graphs"])
