# Imitates a mixture-of-experts layer compiled in place by a recipe that sets capture_scalar_outputs=True before
# compiling: integer per-expert token counts go through .tolist() into torch.split, a Python loop over experts, and
# a .item() on their sum. With the flag set, the whole layer is one graph; without it, the same code breaks.
import torch
import torch.nn as nn
from torch._dynamo.utils import counters


class Experts(nn.Module):
    def __init__(self, n=4, d=8):
        super().__init__()
        self.w = nn.Parameter(torch.randn(n, d, d))

    def forward(self, x, counts):
        parts = torch.split(x, split_size_or_sections=counts.tolist(), dim=0)
        return torch.cat([p @ self.w[i] for i, p in enumerate(parts)], 0)


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.router = nn.Linear(8, 4)
        self.experts = Experts()

    def forward(self, x):
        choice = self.router(x).argmax(-1)
        counts = (choice[:, None] == torch.arange(4)).sum(0)  # int64, fixed shape
        y = self.experts(x[torch.argsort(choice, stable=True)], counts)
        n = counts.sum().item()
        torch._check(n >= 0)
        return y


for flag in (True, False):
    torch._dynamo.reset()
    counters.clear()
    torch._dynamo.config.capture_scalar_outputs = flag
    layer = Layer()
    layer.compile(backend="eager")
    for _ in range(4):
        layer(torch.randn(16, 8))
    print(
        f"capture_scalar_outputs={flag}: graphs",
        counters["stats"]["unique_graphs"],
        "graph breaks",
        sum(counters["graph_break"].values()),
    )
