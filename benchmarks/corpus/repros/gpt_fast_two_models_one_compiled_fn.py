# Imitates speculative generation, where a single compiled forward helper is called alternately with a target model
# and a smaller draft model (same class, different layer count, head count and widths, different input lengths).
import torch
import torch.nn as nn
from torch._dynamo.utils import counters


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.lin = nn.Linear(dim, dim)
        self.heads = heads

    def forward(self, x):
        b, t, d = x.shape
        return self.lin(x).view(b, t, self.heads, d // self.heads).flatten(2)


class LM(nn.Module):
    def __init__(self, layers, dim, heads):
        super().__init__()
        self.emb = nn.Embedding(50, dim)
        self.layers = nn.ModuleList(Block(dim, heads) for _ in range(layers))
        self.out = nn.Linear(dim, 50)

    def forward(self, idx):
        x = self.emb(idx)
        for layer in self.layers:
            x = layer(x)
        return self.out(x)


def model_forward(model, idx):
    return model(idx)


model_forward = torch.compile(model_forward, backend="eager")
target, draft = LM(4, 16, 4), LM(2, 8, 2)
k = 5
for _step in range(6):
    model_forward(target, torch.randint(0, 50, (1, k + 1)))  # verify k+1 tokens
    model_forward(draft, torch.randint(0, 50, (1, 1)))  # feed the last token to the draft model
print("compiles for 12 calls alternating two model instances:", counters["stats"]["unique_graphs"])

torch._dynamo.reset()
counters.clear()
for _step in range(6):
    model_forward(target, torch.randint(0, 50, (1, k + 1)))
    model_forward(target, torch.randint(0, 50, (1, 1)))
print("same two input lengths, target model only:", counters["stats"]["unique_graphs"])


# Prefill-like helper compiled with dynamic=True, called with the same prompt for the target and the draft model.
def prefill(model, idx):
    return model(idx)[:, -1].argmax(-1)


torch._dynamo.reset()
counters.clear()
prefill_c = torch.compile(prefill, backend="eager", dynamic=True)
for sample in range(6):
    prompt = torch.randint(0, 50, (1, 7 + sample))
    prefill_c(target, prompt)
    prefill_c(draft, prompt)
print("dynamic=True prefill, target then draft, 6 prompts:", counters["stats"]["unique_graphs"])
torch._dynamo.reset()
counters.clear()
for sample in range(6):
    prefill_c(target, torch.randint(0, 50, (1, 7 + sample)))
print("dynamic=True prefill, target only, 6 prompts:", counters["stats"]["unique_graphs"])
