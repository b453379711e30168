"""Router module compiled in place that keeps per-expert count accumulators in plain wrapper
objects (not buffers). A lazy property getter would build the wrapper if it were None, but
reset_parameters(), called from the subclass __init__ and again at weight init, always builds
it first. forward adds to the accumulators through the property (getter, in-place add, setter
that wraps the same tensor in a new wrapper object).

Measures compiled graphs over 6 training calls and checks the counts accumulate.
"""

import torch
import torch.nn as nn
from torch._dynamo.utils import counters


class Hidden:
    def __init__(self, x):
        self.x = x

    @property
    def device(self):
        return self.x.device

    def to(self, device):
        return Hidden(self.x.to(device))


class Router(nn.Module):
    def __init__(self, n=4):
        super().__init__()
        self.n = n
        self.weight = nn.Parameter(torch.randn(n, 8))
        self._acc = None
        self.reset_parameters()

    def reset_parameters(self):
        self._acc = Hidden(torch.zeros(self.n, device=self.device))

    @property
    def device(self):
        return self.weight.device

    @property
    def acc(self):
        if self._acc is None:
            self._acc = Hidden(torch.zeros(self.n, device=self.device))
        elif self._acc.device != self.device:
            self._acc = self._acc.to(self.device)
        return self._acc.x

    @acc.setter
    def acc(self, value):
        self._acc = Hidden(value)

    def forward(self, x):
        logits = x @ self.weight.t()
        idx = logits.argmax(-1).flatten()
        with torch.no_grad():
            counts = torch.zeros(self.n).scatter_add_(0, idx, torch.ones(idx.numel()))
        if self.training and torch.is_grad_enabled():
            self.acc += counts
        return logits


router = Router()
router.reset_parameters()
router.compile(backend="eager")
for _ in range(6):
    router(torch.randn(2, 8))
print("unique graphs:", counters["stats"]["unique_graphs"])
print("tokens counted:", int(router.acc.sum()), "of", 6 * 2)
