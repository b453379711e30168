"""A whole model compiled in place with .compile() builds its pooling masks in a @torch.no_grad() helper that
packs the selected entries of one boolean mask into another with boolean-mask indexing (`dst[m1] = src[m2]`).

Expected: the boolean-mask read `src[m2]` needs aten.nonzero, whose output shape depends on the data, so Dynamo
breaks the graph there (GB0036); capture_dynamic_output_shape_ops is off by default. The break sits in the helper's
loop over levels, so the helper runs eagerly and forward is split around it, on every call (no new compiles after
the first step).
"""

import torch
from torch import nn
from torch._dynamo.utils import counters


class Pooler(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    @torch.no_grad()
    def pool_mask(self, levels, n_levels=2):
        keep, masks = torch.ones_like(levels, dtype=torch.bool), []
        for i in range(n_levels):
            mask = levels > i
            packed = torch.zeros_like(mask)
            front = torch.arange(mask.size(1)).expand(mask.size(0), -1) < keep.sum(1, keepdim=True)
            packed[front] = mask[keep]
            masks.append(packed)
            keep = mask & keep
        return masks

    def forward(self, x, levels):
        m = self.pool_mask(levels)
        return (self.proj(x) * m[0].unsqueeze(-1) * m[1].unsqueeze(-1)).sum()


model = Pooler()
model.compile(backend="eager")
for step in range(3):
    model(torch.randn(2, 16, 8), torch.randint(0, 3, (2, 16)))
    breaks = sum(counters["graph_break"].values())
    print(f"step {step}: unique_graphs={counters['stats']['unique_graphs']} graph_breaks={breaks}")
