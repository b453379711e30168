# Imitates a trainer that compiles its model with dynamic=False, fullgraph=True, validates it periodically with
# .eval() + torch.no_grad() (same input shape as training here, to isolate the mode switch), and finally runs an
# extra benchmark under torch.inference_mode() with tensors created inside that mode.
import torch
import torch.nn as nn
from torch._dynamo.utils import counters


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        y = self.lin(x)
        if self.training:  # the model picks its loss path on self.training
            return y.square().sum()
        return y.abs().mean()


model = torch.compile(Net(), backend="eager", dynamic=False, fullgraph=True)
x = torch.randn(4, 8)
for step in range(8):
    if step % 4 == 0:
        model.eval()
        with torch.no_grad():
            model(x)
        model.train()
    model(x).backward()
print("train + periodic eval/no_grad validation:", counters["stats"]["unique_graphs"])

model.eval()
with torch.inference_mode():
    for _ in range(3):
        model(torch.randn(4, 8))
print("after a final benchmark under inference_mode:", counters["stats"]["unique_graphs"])
