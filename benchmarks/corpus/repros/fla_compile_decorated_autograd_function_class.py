"""A kernel library puts @torch.compile on an autograd.Function subclass and calls it through Function.apply.

torch.compile applied to a class only wraps the class's __call__; apply is a classmethod that never goes through
it. Expected: 0 frames compiled, forward and backward run eagerly (no recompiles, no breaks, nothing compiled).
"""

import torch
from torch._dynamo.utils import counters


@torch.compile(backend="eager")
class Scale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, s):
        ctx.s = s
        return x * s

    @staticmethod
    def backward(ctx, g):
        return g * ctx.s, None


x = torch.randn(4, requires_grad=True)
for s in (1.0, 2.0, 3.0):
    Scale.apply(x, s).sum().backward()
print("frames compiled:", dict(counters["frames"]), "unique_graphs:", counters["stats"]["unique_graphs"])
