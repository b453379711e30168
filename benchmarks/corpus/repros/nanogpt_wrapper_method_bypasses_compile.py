# Imitates a sampling script that wraps a model with torch.compile and then calls a custom method of the model
# (a generation loop that calls self(...) itself) through the compiled wrapper.
import torch
import torch.nn as nn
from torch._dynamo.utils import counters


class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return self.lin(x)

    @torch.no_grad()
    def sample(self, x, steps):
        for _ in range(steps):
            x = torch.cat([x, self(x)[:, -1:]], dim=1)  # growing sequence
        return x


compiled = torch.compile(LM(), backend="eager")
compiled.sample(torch.randn(1, 3, 4), 5)
print("frames compiled when calling the method through the wrapper:", counters["stats"]["unique_graphs"])
compiled(torch.randn(1, 3, 4))
print("after one direct call of the wrapper:", counters["stats"]["unique_graphs"])
