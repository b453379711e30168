"""A mixture-of-memories layer routes tokens to memories and, under torch.no_grad(), builds gather indices whose
length is the largest per-memory token count: a 0-d tensor (counts.max()) passed to torch.arange. The model is
compiled whole and trained.

Expected (TORCH_LOGS=graph_breaks): torch.arange needs a Python int, so Dynamo calls .item() on the 0-d tensor,
a data-dependent scalar it cannot trace with capture_scalar_outputs off (aten._local_scalar_dense): the graph
breaks at the arange line on every training call.
"""

import torch
from torch import nn
from torch._dynamo.utils import counters


class Router(nn.Module):
    def __init__(self, dim=8, n_mem=4):
        super().__init__()
        self.gate, self.proj = nn.Linear(dim, n_mem), nn.Linear(dim, dim)

    def forward(self, x):
        routing = torch.zeros_like(self.gate(x)).scatter(-1, self.gate(x).topk(2, -1).indices, 1.0)
        with torch.no_grad():
            counts = routing.sum(dim=1)  # tokens per (batch, memory)
            max_len = counts.max()  # 0-d tensor
            slots = torch.arange(max_len, device=x.device)  # data-dependent length
        return self.proj(x).sum() * slots.numel()


model = torch.compile(Router(), backend="eager")
for step in range(3):
    model(torch.randn(2, 16, 8)).backward()
    print(
        f"step {step}: unique_graphs={counters['stats']['unique_graphs']} "
        f"graph_breaks={sum(counters['graph_break'].values())}"
    )
