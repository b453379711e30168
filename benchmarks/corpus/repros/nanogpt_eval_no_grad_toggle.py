# Imitates a training script that compiles a whole GPT-like model whose attention reads self.training and that
# evaluates it periodically inside a @torch.no_grad() helper which flips .eval()/.train() on the compiled wrapper.
import torch
import torch.nn as nn
from torch._dynamo.utils import counters


class Attn(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)
        self.drop = nn.Dropout(0.0)
        self.p = 0.0

    def forward(self, x):
        p = self.p if self.training else 0
        return self.drop(self.proj(x)) * (1 - p)


model = torch.compile(Attn(), backend="eager")
x = torch.randn(2, 8)


@torch.no_grad()
def evaluate():
    model.eval()
    model(x)
    model.train()


for it in range(12):
    if it % 4 == 0:
        evaluate()  # eval mode + no_grad
    model(x).sum().backward()
print("compiles (eval+no_grad entry and train+grad entry):", counters["stats"]["unique_graphs"])

# Same schedule, but evaluating under no_grad without switching to eval mode: the grad-mode guard alone
torch._dynamo.reset()
counters.clear()
model = torch.compile(Attn(), backend="eager")
for it in range(12):
    if it % 4 == 0:
        with torch.no_grad():
            model(x)
    model(x).sum().backward()
print("compiles, no_grad only:", counters["stats"]["unique_graphs"])
