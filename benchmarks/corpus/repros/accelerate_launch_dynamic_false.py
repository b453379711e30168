"""accelerate launch --dynamo_backend X passes dynamic=False to torch.compile (ACCELERATE_DYNAMO_USE_DYNAMIC=False).

Imitates the examples: padding="longest" batches (sequence length varies per batch) and a per-step Python int
num_items_in_batch kwarg. Compare dynamic=False with the torch default (dynamic=None).
"""

import torch
from torch._dynamo.utils import counters


class Classifier(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(100, 16)
        self.head = torch.nn.Linear(16, 2)

    def forward(self, input_ids, labels=None, num_items_in_batch=None):
        logits = self.head(self.emb(input_ids).mean(1))
        loss = torch.nn.functional.cross_entropy(logits, labels, reduction="sum")
        if num_items_in_batch is not None:
            loss = loss / num_items_in_batch
        return loss


def run(dynamic, vary):
    torch._dynamo.reset()
    counters.clear()
    model = torch.compile(Classifier(), backend="eager", dynamic=dynamic)
    for step in range(12):
        seq = 20 + step if vary == "seq_len" else 20
        n = 100 + 7 * step if vary == "num_items" else None
        model(torch.randint(0, 100, (4, seq)), torch.randint(0, 2, (4,)), num_items_in_batch=n)
    return counters["stats"]["unique_graphs"], counters["frames"]["ok"]


for vary in ("seq_len", "num_items"):
    for dynamic in (None, False):
        graphs, frames = run(dynamic, vary)
        print(f"vary {vary:9s} dynamic={dynamic!s:5s}: {graphs} graphs compiled over 12 calls")
