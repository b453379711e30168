"""A small model with the two most common recompile traps: a step counter and a growing list.

`dynamo-lens check examples/recompiling_model` finds both here, as warnings, because train.py compiles the model.
"""

import torch
from torch import nn


class Encoder(nn.Module):
    def __init__(self, width: int = 16) -> None:
        super().__init__()
        self.proj = nn.Linear(width, width)
        self.steps = 0
        self.losses = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.steps += 1  # an int attribute read and changed every call: recompiles, then eager after 8
        y = torch.relu(self.proj(x))
        self._record(y)
        return y

    def _record(self, y: torch.Tensor) -> None:
        self.losses.append(y.mean().detach())  # a list that grows every call: recompiles, then eager after 8
