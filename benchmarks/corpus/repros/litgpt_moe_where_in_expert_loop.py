# Imitates a GPT whose blocks use a mixture-of-experts MLP that routes tokens with a one-argument torch.where on a
# boolean mask inside the loop over experts; the whole model is compiled (as for pretraining) and also reached
# through a compiled next-token helper that receives the model as an argument.
import torch
import torch.nn as nn
from torch._dynamo.utils import counters


class MoE(nn.Module):
    def __init__(self, d=8, n=4, k=2):
        super().__init__()
        self.gate = nn.Linear(d, n, bias=False)
        self.experts = nn.ModuleList(nn.Linear(d, d) for _ in range(n))
        self.k, self.n = k, n

    def forward(self, x):
        b, t, c = x.shape
        x = x.view(-1, c)
        probs, idx = torch.topk(self.gate(x), self.k)
        probs = probs.softmax(dim=1)
        masks = (idx.unsqueeze(-1) == torch.arange(self.n)).permute(2, 0, 1)
        y = torch.zeros_like(x)
        for mask, expert in zip(masks, self.experts, strict=False):
            tok, slot = torch.where(mask)
            y[tok] += probs[tok, slot, None] * expert(x[tok])
        return y.view(b, t, c)


class GPT(nn.Module):
    def __init__(self, layers=3):
        super().__init__()
        self.h = nn.ModuleList(MoE() for _ in range(layers))

    def forward(self, x):
        for block in self.h:
            x = x + block(x)
        return x


model = GPT()
compiled = torch.compile(model, backend="eager")
for _ in range(4):
    compiled(torch.randn(2, 5, 8))
# TORCH_LOGS=graph_breaks shows GB0036 (aten.nonzero) followed by "graph break in loop ... Skipping the frame".
print(
    "whole-model compile: graphs captured", counters["stats"]["unique_graphs"], "frames seen", dict(counters["frames"])
)


def next_token(m, x):
    return m(x)[:, -1].argmax(-1)


torch._dynamo.reset()
counters.clear()
step = torch.compile(next_token, backend="eager")
for _ in range(4):
    step(model, torch.randn(1, 3, 8))
print(
    "compiled next-token helper: graphs captured",
    counters["stats"]["unique_graphs"],
    "frames seen",
    dict(counters["frames"]),
)
