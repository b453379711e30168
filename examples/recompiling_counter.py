"""A small training loop whose compiled model recompiles on every step, then silently falls back to eager.

Run it under Dynamo Lens to see why, at your own lines:

    dynamo-lens run examples/recompiling_counter.py

Two hazards hide in ``TinyClassifier.forward``:

* ``self.steps += 1`` keeps a Python int on the module. Dynamo guards its value (``self.steps == 3``), so every step
  compiles a new graph until the recompile limit (8) is reached; after that the model runs eagerly.
* ``logits.abs().mean().item()`` turns a tensor into a Python float inside the compiled region: a graph break.
"""

import torch
from torch import nn


class TinyClassifier(nn.Module):
    def __init__(self, features: int = 16, classes: int = 4) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(features, 32), nn.ReLU(), nn.Linear(32, classes))
        self.steps = 0
        self.last_scale = 0.0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.steps += 1
        logits = self.body(x)
        self.last_scale = logits.abs().mean().item()
        return logits / (1.0 + self.steps * 1e-3)


def main() -> None:
    torch.manual_seed(0)
    model = TinyClassifier()
    compiled = torch.compile(model, backend="eager")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    inputs = torch.randn(8, 16)
    targets = torch.randint(0, 4, (8,))
    for step in range(12):
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(compiled(inputs), targets)
        loss.backward()
        optimizer.step()
        print(f"step {step:2d}  loss {loss.item():.4f}  scale {model.last_scale:.3f}")


if __name__ == "__main__":
    main()
