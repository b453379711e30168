# Imitates a speedrun trainer: the model is compiled with dynamic=False, fullgraph=True; each forward receives a
# small dataclass with the current window sizes (ints), and a rotary submodule keeps a float attention scale
# that a schedule multiplies between calls whenever the window grows.
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
from torch._dynamo.utils import counters


@dataclass
class Sched:
    short: int
    long: int


class Rope(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = 0.1

    def grow(self, old, new):
        self.scale *= 0.2 * math.log(new / old) + 1


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.rope = Rope()

    def forward(self, x, cfg):
        sizes = [cfg.short, cfg.long]
        return self.lin(x)[:, : sizes[0]].sum() * self.rope.scale + sizes[1]


def run(dynamic, change_ints, change_float):
    torch._dynamo.reset()
    counters.clear()
    net = Net()
    model = torch.compile(net, backend="eager", dynamic=dynamic, fullgraph=True)
    x = torch.randn(2, 8)
    windows = [1, 3, 5, 6]
    for step in range(12):
        stage = min(step // 3, 3)
        if change_float and step % 3 == 0 and step:
            net.rope.grow(windows[stage - 1], windows[stage])
        cfg = Sched(short=windows[stage] if change_ints else 1, long=2 * windows[stage] if change_ints else 2)
        model(x, cfg)
    return counters["stats"]["unique_graphs"]


print("dynamic=False, 4 schedule stages, ints only :", run(False, True, False))
print("dynamic=False, 4 schedule stages, float only:", run(False, False, True))
print("dynamic=None,  4 schedule stages, float only:", run(None, False, True))
print("dynamic=None,  4 schedule stages, ints only :", run(None, True, False))
