"""A whole model compiled with dynamic=False, trained with grad and evaluated by a @torch.no_grad() helper.

The evaluation passes a different reduction string and toggles .eval()/.train() on a model that never reads
`training`. Expected: 2 compiles in all (one entry for training, one for evaluation), reused afterwards.
"""

import torch
import torch.nn.functional as F
from torch import nn
from torch._dynamo.utils import counters


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(32, 16)
        self.head = nn.Linear(16, 32, bias=False)

    def forward(self, idx, targets=None, reduction="mean"):
        logits = self.head(F.rms_norm(self.emb(idx), (16,))).float()
        return F.cross_entropy(logits.view(-1, 32), targets.view(-1), ignore_index=-1, reduction=reduction)


@torch.no_grad()
def eval_loss(model, batches):
    return sum(model(x, y, reduction="none").sum() for x, y in batches)


raw = TinyLM()
model = torch.compile(raw, backend="eager", dynamic=False)
batch = lambda: (torch.randint(0, 32, (4, 8)), torch.randint(0, 32, (4, 8)))  # noqa: E731
for step in range(6):
    if step % 2 == 0:
        model.eval()
        eval_loss(model, [batch() for _ in range(3)])
        model.train()
    model(*batch()).backward()
    print(f"step {step}: unique_graphs={counters['stats']['unique_graphs']}")
