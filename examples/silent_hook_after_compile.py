"""A forward hook registered after the compiled model already ran: the compiled calls silently skip it.

What it demonstrates (DL401): a monitoring hook is attached to ``model.encoder`` after a warm-up step. Dynamo
compiled the warm-up call while the encoder had no hooks, and on torch 2.13 it does not guard empty hook dicts
(``skip_nnmodule_hook_guards``), so nothing recompiles and the hook never fires: no error, no warning, the
activation statistics are just missing. The script prints how often the hook fired, compiled vs eager.

How to fix it: register hooks before the first call of the compiled module, or call ``torch._dynamo.reset()`` after
registering them (one new compile).

    dynamo-lens check examples/silent_hook_after_compile.py
    dynamo-lens run examples/silent_hook_after_compile.py
"""

import torch
from torch import nn


class Classifier(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(16, 32), nn.ReLU())
        self.head = nn.Linear(32, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(x))


def main() -> None:
    torch.manual_seed(0)
    model = Classifier()
    compiled = torch.compile(model, backend="eager")
    inputs = torch.randn(8, 16)
    compiled(inputs)  # warm-up: Dynamo compiles forward while model.encoder has no hooks

    activations = []
    model.encoder.register_forward_hook(lambda module, args, output: activations.append(output.mean().item()))
    for _ in range(5):
        compiled(inputs)
    print(f"compiled: the encoder hook fired {len(activations)} times in 5 calls")

    activations.clear()
    for _ in range(5):
        model(inputs)
    print(f"eager:    the encoder hook fired {len(activations)} times in 5 calls")


if __name__ == "__main__":
    main()
