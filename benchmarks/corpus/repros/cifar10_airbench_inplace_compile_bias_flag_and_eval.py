# Imitates airbench94_muon.py: a CNN with BatchNorm compiled in place with module.compile(); its forward takes a bool
# keyword that stops the gradient of the first layer's bias after a few steps (computed as `step < n`), and every
# epoch ends with an evaluation helper that calls .eval() and runs the model under no_grad.
import torch
import torch.nn.functional as F
from torch import nn
from torch._dynamo.utils import counters


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.first = nn.Conv2d(3, 8, 2)
        self.norm = nn.BatchNorm2d(8)
        self.head = nn.Linear(8, 10)

    def forward(self, x, bias_grad=True):
        b = self.first.bias
        x = F.conv2d(x, self.first.weight, b if bias_grad else b.detach())
        return self.head(F.adaptive_max_pool2d(self.norm(x), 1).flatten(1))


def evaluate(model, test):
    model.eval()
    with torch.no_grad():
        return model(test)


model = Net()
model.compile(backend="eager")
test = torch.randn(10, 3, 16, 16)
for run in range(2):
    step = 0
    for _epoch in range(4):
        model.train()
        for _ in range(3):
            model(torch.randn(10, 3, 16, 16), bias_grad=(step < 6)).sum().backward()
            step += 1
        evaluate(model, test)
    print(f"run {run}: unique_graphs={counters['stats']['unique_graphs']}")
