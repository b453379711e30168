"""A compiled block that Dynamo has to split into several graphs: two graph breaks in forward.

What it demonstrates:

* DL302: ``if scores.abs().amax() > self.clip:`` branches on a tensor's *value*. Dynamo cannot know which way it goes
  while tracing, so it stops the graph there, runs the comparison eagerly and resumes in a new frame.
* DL301: ``print(...)`` of a tensor statistic inside forward: Dynamo cannot trace ``print``, so the graph breaks
  again. Every break costs a return to Python, and the pieces are optimised separately.

How to fix it: make the branch a tensor operation (``torch.where(...)``, ``torch.clamp``) or ``torch.cond``; log
outside the compiled function (return the statistic as a tensor).

    dynamo-lens run examples/split_graph_breaks.py
"""

import torch
from torch import nn


class GatedBlock(nn.Module):
    def __init__(self, width: int = 16, clip: float = 3.0) -> None:
        super().__init__()
        self.proj = nn.Linear(width, width)
        self.gate = nn.Linear(width, width)
        self.clip = clip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scores = self.proj(x)
        if scores.abs().amax() > self.clip:
            scores = scores * (self.clip / scores.abs().amax())
        gated = scores * torch.sigmoid(self.gate(x))
        print(f"gate mean {gated.mean():.3f}")
        return x + gated


def main() -> None:
    torch.manual_seed(0)
    block = torch.compile(GatedBlock(), backend="eager")
    for step in range(3):
        block(torch.randn(4, 16) * (step + 1))


if __name__ == "__main__":
    main()
