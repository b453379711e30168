# A whole training step (forward, loss.backward(), optimizer.step()) compiled as one closure, with zero_grad kept
# outside; counts the graph breaks Dynamo reports.
import torch
import torch.nn as nn
from torch._dynamo.utils import counters

model = nn.Linear(3, 2)
opt = torch.optim.SGD(model.parameters(), lr=torch.tensor(0.1))


def make_step():
    def step(x, y):
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return step


step = torch.compile(make_step(), backend="eager")
for _ in range(4):
    opt.zero_grad()
    step(torch.randn(4, 3), torch.tensor([0, 1, 0, 1]))
for reason, n in counters["graph_break"].items():
    print(n, "x", reason.splitlines()[0])
