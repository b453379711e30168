"""Trains model.py's TinyLM with a compiled forward: the compile site that makes model.py's hazards warnings.

What it demonstrates, besides model.py's counter and list: the loop changes the float ``model.temperature`` between
epochs (DL111: one extra compile), switches the model between ``train()`` and ``eval()`` (DL112: its Dropout reads
``self.training``, one compile per mode) and evaluates under ``torch.no_grad()`` (DL208: grad mode is guarded too).
With the counter, every call compiles: the ninth hits the recompile limit and the rest run eagerly.

Run it under Dynamo Lens to see each recompile at the line that caused it:

    dynamo-lens run examples/training_project/train.py

How to fix it: see model.py for the counter and the list; pass the temperature as a tensor; evaluate with the
uncompiled ``model`` (a second ``torch.compile`` of it shares the cache of the same ``forward``), or accept the one
extra compile per mode.
"""

import torch
from torch import nn

from model import TinyLM


def train(epochs: int = 3, steps: int = 3) -> None:
    torch.manual_seed(0)
    model = TinyLM()
    compiled = torch.compile(model, backend="eager")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    tokens = torch.randint(0, 32, (4, 8))
    targets = torch.randint(0, 32, (4,))
    for epoch in range(epochs):
        model.train()
        model.temperature = 1.0 / (epoch + 1)
        for _ in range(steps):
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(compiled(tokens), targets)
            loss.backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            val = nn.functional.cross_entropy(compiled(tokens), targets)
        print(f"epoch {epoch}  loss {loss.item():.4f}  val {val.item():.4f}  steps {model.step}")


if __name__ == "__main__":
    train()
