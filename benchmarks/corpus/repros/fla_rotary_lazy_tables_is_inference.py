"""Each attention layer owns a rotary module that builds its cos/sin tables lazily in forward and rebuilds them
when the length grows, the device or dtype changes, or the module trains on tables made under inference mode
(`self.training and table.is_inference()`). The whole model is compiled and trained at one sequence length.

Expected (TORCH_LOGS=recompiles,graph_breaks): step 0 compiles with the tables still None; step 1 fails the guard
on the cached length (0) / the None table and recompiles once; from then on every training call evaluates
`is_inference()` on the cached table, which Dynamo cannot trace (GB0045), so the graph breaks there on every call.
"""

import torch
from torch import nn
from torch._dynamo.utils import counters


class Rotary(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.register_buffer("inv_freq", 1.0 / 10000 ** (torch.arange(0, dim, 2) / dim), persistent=False)
        self._len, self._cos = 0, None

    def forward(self, q):
        n = q.shape[1]
        if n > self._len or self._cos is None or (self.training and self._cos.is_inference()):
            self._len = n
            self._cos = torch.outer(torch.arange(n, dtype=torch.float32), self.inv_freq).cos()
        return q * self._cos[:n].repeat(1, 2)


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj, self.rotary = nn.Linear(8, 8), Rotary(8)

    def forward(self, x):
        return x + self.rotary(self.proj(x))


model = torch.compile(nn.Sequential(Layer(), Layer()), backend="eager")
for step in range(4):
    model(torch.randn(2, 16, 8)).sum().backward()
    print(
        f"step {step}: unique_graphs={counters['stats']['unique_graphs']} "
        f"graph_breaks={sum(counters['graph_break'].values())}"
    )
