# A plain helper object (not an nn.Module) held by a compiled module builds its lookup table lazily on the first
# call, inside the compiled forward, under a `with torch.device("cpu")` block, and keeps it in an attribute that
# starts as None.
import torch
import torch.nn as nn
from torch._dynamo.utils import counters


class Table:
    def __init__(self, n, d):
        self.n, self.d = n, d
        self.table = None

    def build(self):
        with torch.device("cpu"):
            return torch.polar(torch.ones(self.n, self.d), torch.randn(self.n, self.d))

    def __call__(self, idx):
        if self.table is None:
            self.table = self.build()
        return self.table[idx]


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.rope = Table(16, 4)

    def forward(self, x, idx):
        return self.lin(x) * self.rope(idx).real


net = torch.compile(Net().eval(), backend="eager")
with torch.no_grad():
    for _ in range(4):
        net(torch.randn(3, 4), torch.tensor([1, 2, 3]))
for reason, _n in counters["graph_break"].items():
    print("graph break:", reason.splitlines()[0])
print("graphs:", counters["stats"]["unique_graphs"], "frames compiled:", counters["frames"]["total"])

torch._dynamo.reset()
try:
    torch.compile(Net().eval(), backend="eager", fullgraph=True)(torch.randn(3, 4), torch.tensor([1]))
except Exception as e:
    print("fullgraph=True:", type(e).__name__, str(e).splitlines()[0])
