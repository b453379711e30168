"""A model replaces its own @torch.no_grad() method with torch.compile(bound method) at
setup; the first call comes from a weight-init method that is itself under torch.no_grad(),
every later call from the post-optimizer-step hook with grad enabled.

Measures compiled graphs and recompiles over the init call plus 5 step calls.
"""

import torch
import torch.nn as nn
from torch._dynamo.utils import counters


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList(nn.Linear(8, 8) for _ in range(3))

    @torch.no_grad()
    def normalize(self):
        for b in self.blocks:
            b.weight.copy_(b.weight / b.weight.norm(dim=-1, keepdim=True))

    def apply_compile(self):
        self.normalize = torch.compile(self.normalize, backend="eager")

    @torch.no_grad()
    def init_weights(self):
        self.normalize()

    def post_optim_step(self):
        self.normalize()


m = Model()
m.apply_compile()
m.init_weights()
for _ in range(5):
    m.post_optim_step()
print("unique graphs:", counters["stats"]["unique_graphs"])
