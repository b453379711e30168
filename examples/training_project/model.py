"""A small language-model head whose forward carries Python state from one call to the next.

What it demonstrates (compiled from train.py, so these are warnings here, with train.py's compile site as related
information):

* DL101 ``self.step += 1`` in ``forward``: an int attribute read and changed every call. Dynamo guards its value
  (``self.step == 3``) and recompiles on every call until the recompile limit (8); then the model runs eagerly.
* DL102 ``self.history.append(...)`` in ``_sharpen``, a helper that ``forward`` calls: a list that grows every call.
  Dynamo guards its length, so it recompiles for the same reason. The run names the counter as the culprit (its
  guard is checked first); the list's length shows in the guard diff of every recompile, and takes over once the
  counter is fixed.
* ``self.temperature``, a float that train.py changes between epochs (DL111 there): one extra compile, then Dynamo
  makes it dynamic.

How to fix it: keep counters and logs in tensor buffers updated in place (``self.step.add_(1)``), or out of
``forward``; keep Python floats that change out of the compiled code (pass them as tensors).
"""

import torch
from torch import nn


class TinyLM(nn.Module):
    def __init__(self, vocab: int = 32, width: int = 16) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.drop = nn.Dropout(0.1)
        self.head = nn.Linear(width, vocab)
        self.step = 0
        self.temperature = 1.0
        self.history = []

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        self.step += 1
        hidden = torch.tanh(self.embed(tokens)).mean(dim=1)
        return self._sharpen(self.head(self.drop(hidden)))

    def _sharpen(self, logits: torch.Tensor) -> torch.Tensor:
        scaled = logits / self.temperature
        self.history.append(scaled.detach().amax())
        return scaled
