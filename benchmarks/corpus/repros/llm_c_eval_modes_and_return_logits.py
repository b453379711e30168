"""llm.c-style train script: whole model compiled, a bool kwarg, eval()+no_grad validation."""

import torch
import torch.nn.functional as F
from torch import nn
from torch._dynamo.utils import counters


class Attn(nn.Module):
    def __init__(self, kv_cache):
        super().__init__()
        self.lin = nn.Linear(16, 16)
        self.kv_cache = kv_cache
        self.cache = torch.zeros(4, 8, 16)

    def forward(self, x, start_pos=0):
        y = self.lin(x)
        if self.kv_cache and not self.training and start_pos >= 0:  # llama3-style read of training
            self.cache[: x.size(0), start_pos : start_pos + x.size(1)] = y
            y = self.cache[: x.size(0), : start_pos + x.size(1)]
        return y


class Model(nn.Module):
    def __init__(self, kv_cache):
        super().__init__()
        self.emb = nn.Embedding(32, 16)
        self.ln = nn.LayerNorm(16)
        self.attn = Attn(kv_cache)
        self.head = nn.Linear(16, 32)

    def forward(self, idx, targets=None, return_logits=True):
        logits = self.head(self.ln(self.attn(self.emb(idx))))
        loss = F.cross_entropy(logits.view(-1, 32), targets.view(-1))
        return (logits if return_logits else None), loss


def run(kv_cache, write_tensors, val):
    torch._dynamo.reset()
    counters.clear()
    model = torch.compile(Model(kv_cache), backend="eager")
    x = torch.randint(0, 32, (4, 8))
    if write_tensors:  # one reference forward with return_logits left at True
        model(x, x)[1].backward()
    for _ in range(3):
        if val:
            model.eval()
            with torch.no_grad() if val == "no_grad" else torch.enable_grad():
                model(x, x, return_logits=False)
        model.train()
        model(x, x, return_logits=False)[1].backward()
    return counters["stats"]["unique_graphs"]


for kv in (False, True):
    print(f"kv_cache={kv}: train only             ->", run(kv, False, False), "graphs")
    print(f"kv_cache={kv}: + return_logits=True   ->", run(kv, True, False), "graphs")
    print(f"kv_cache={kv}: + eval()/no_grad val   ->", run(kv, False, "no_grad"), "graphs")
    print(f"kv_cache={kv}: + eval() val with grad ->", run(kv, False, "grad"), "graphs")
