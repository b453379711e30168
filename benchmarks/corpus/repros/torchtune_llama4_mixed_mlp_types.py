"""Imitates torchtune's Llama 4 stack compiled layer by layer (training/_compile.py): interleaved layers hold an MoE or
a dense MLP in `self.mlp`, and every layer shares TransformerSelfAttentionLayer.forward. Dynamo guards the type of
the submodule (`___check_type_id(self._modules['mlp'], ...)`), so each kind of layer is an entry of its own: 2
compiles for the two kinds, reused afterwards (run with TORCH_LOGS=recompiles to see the type guard)."""

import torch
import torch._dynamo.utils as du
from torch import nn


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        return self.proj(x)


class MoE(nn.Module):
    def __init__(self):
        super().__init__()
        self.expert_a = nn.Linear(8, 8)
        self.expert_b = nn.Linear(8, 8)

    def forward(self, x):
        return self.expert_a(x) + self.expert_b(x)


class Layer(nn.Module):
    def __init__(self, mlp):
        super().__init__()
        self.mlp = mlp
        self.norm = nn.LayerNorm(8)

    def forward(self, x):
        return x + self.mlp(self.norm(x))


layers = nn.ModuleList([Layer(MoE() if (i + 1) % 2 == 0 else MLP()) for i in range(8)])
for layer in layers:
    layer.compile(backend="eager")
with torch.no_grad():
    for _ in range(3):
        x = torch.randn(2, 8)
        for layer in layers:
            x = layer(x)
print("compiles:", du.counters["stats"]["unique_graphs"])
