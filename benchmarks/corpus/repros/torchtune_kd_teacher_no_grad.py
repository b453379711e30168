# Imitates a distillation recipe that compiles every transformer layer in place (one shared forward code object):
# a small student (with an adapter, trained with grad) and a larger frozen teacher of the same layer class, called
# only under torch.no_grad(). Counts compiles of the shared layer forward with the teacher under no_grad and, for
# comparison, with grad enabled: the teacher's different sizes already need their own entry.
import torch
import torch.nn as nn
from torch._dynamo.utils import counters


class Layer(nn.Module):
    def __init__(self, dim, adapter=False):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.adapter = nn.Linear(dim, dim, bias=False) if adapter else None
        self.drop = nn.Dropout(0.0)

    def forward(self, x):
        y = self.proj(x)
        if self.adapter is not None:
            y = y + self.adapter(x)
        return x + self.drop(y)


def run(teacher_no_grad):
    torch._dynamo.reset()
    counters.clear()
    student = nn.Sequential(*[Layer(8, adapter=True) for _ in range(2)])
    teacher = nn.Sequential(*[Layer(16) for _ in range(2)]).eval().requires_grad_(False)
    for m in list(student) + list(teacher):
        m.compile(backend="eager")
    for _ in range(6):
        student(torch.randn(4, 8)).sum().backward()
        if teacher_no_grad:
            with torch.no_grad():
                teacher(torch.randn(4, 16))
        else:
            teacher(torch.randn(4, 16))
    return counters["stats"]["unique_graphs"]


print("teacher under no_grad:", run(True), "compiles; teacher with grad enabled:", run(False), "compiles")
