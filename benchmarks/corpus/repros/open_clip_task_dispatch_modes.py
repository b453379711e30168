# A task module that compiles its train and eval entry points separately (bound methods) and dispatches on
# self.training in its own, uncompiled forward; the eval entry point is also called with batches of different keys.
import torch
import torch.nn as nn
from torch._dynamo.utils import counters


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 2)

    def forward(self, x=None, text=None, image=None):
        src = x if x is not None else (text if text is not None else image)
        return {"out": self.lin(src)}


class Task(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = Net()
        self.train_fn = torch.compile(self.train_forward, backend="eager")
        self.eval_fn = torch.compile(self.eval_forward, backend="eager")

    def train_forward(self, batch):
        return self.net(**batch)["out"].sum()

    def eval_forward(self, batch):
        return self.net(**batch)

    def forward(self, **batch):
        return self.train_fn(batch) if self.training else self.eval_fn(batch)


task = Task()
for _epoch in range(3):
    task.train()
    task(x=torch.randn(4, 3))
    task.eval()
    task(x=torch.randn(4, 3))
print("after 3 train/eval toggles, graphs:", counters["stats"]["unique_graphs"])  # 2: one per entry point
task(text=torch.randn(4, 3))
task(image=torch.randn(4, 3))
print("after text-only and image-only eval batches, graphs:", counters["stats"]["unique_graphs"])  # 4
