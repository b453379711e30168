# Imitates a fused-MLP autograd.Function whose kernel launcher lazily creates a module-level dummy tensor
# (global NAME; NAME = torch.zeros(...) when it is still None); the Function is applied inside a model compiled
# with dynamic=False, fullgraph=True, and only the eval path (no fp8 scales passed) asks for the dummy.
import torch
import torch.nn as nn
from torch._dynamo.utils import counters

_dummy = None


def _get_dummy(device):
    global _dummy
    if _dummy is None or _dummy.device != device:
        _dummy = torch.zeros(1, device=device)
    return _dummy


def launch(x, w, scale=None):
    if scale is None:
        scale = _get_dummy(x.device)
    return torch.relu(x @ w.t()).square() * scale.sum().add(1)


class FusedMLP(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w, scale=None):
        ctx.save_for_backward(x, w)
        return launch(x, w, scale)

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        return g @ w, g.t() @ x, None


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(8, 8))
        self.s = nn.Parameter(torch.ones(1))

    def forward(self, x):
        if self.training:
            return FusedMLP.apply(x, self.w, self.s)
        return FusedMLP.apply(x, self.w)


model = torch.compile(Net(), backend="eager", dynamic=False, fullgraph=True)
x = torch.randn(4, 8)
for step in range(4):
    model.eval()
    with torch.no_grad():
        model(x)
    model.train()
    model(x).sum().backward()
    print("after step", step, "compiles:", counters["stats"]["unique_graphs"])
