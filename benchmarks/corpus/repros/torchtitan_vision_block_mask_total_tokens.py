"""torch.compile(create_block_mask) called once per batch of variable-resolution images with the
packed token count as Q_LEN/KV_LEN and a per-batch closure over segment ids.

torch 2.13, backend="eager", 12 batches of 1-4 segments of 50-400 tokens: the first new length
recompiles (guard Q_LEN == n), the next adds a size-relation guard, then the lengths stay
symbolic: 3 compiles in all, no recompile limit.
"""

import random

import torch
from torch._dynamo.utils import counters
from torch.nn.attention.flex_attention import create_block_mask

compiled_cbm = torch.compile(create_block_mask, backend="eager")
random.seed(0)


def block_diagonal(seg_lens, total):
    seg_ids = torch.repeat_interleave(
        torch.arange(seg_lens.shape[0], dtype=torch.int32), seg_lens.to(torch.int32), output_size=total
    )

    def mask_mod(b, h, q, kv):
        return seg_ids[q] == seg_ids[kv]

    return compiled_cbm(mask_mod, 1, None, total, total, device="cpu")


for _batch in range(12):
    lens = torch.tensor([random.randint(50, 400) for _ in range(random.randint(1, 4))])
    block_diagonal(lens, int(lens.sum()))
print("compiles:", counters["stats"]["unique_graphs"])
