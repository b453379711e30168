# Two idioms reached by a compiled task training step: an audio encoder whose fusion flag is combined with a test on a
# bool tensor of the batch dict (then a one-argument where on it), and a packed-sequence helper that reads the packed
# length back with .item(). Prints the graph-break reasons of each (also visible with TORCH_LOGS=graph_breaks).
import torch
import torch.nn as nn
from torch._dynamo.utils import counters


class Encoder(nn.Module):
    def __init__(self, fuse):
        super().__init__()
        self.fuse = fuse
        self.lin = nn.Linear(4, 4)

    def forward(self, batch):
        if self.fuse and batch["long"].sum() == 0:
            batch["long"][0] = True
        idx = torch.where(batch["long"])[0]
        return self.lin(batch["mel"]).sum(-1) + idx.numel()


def packed_len(a_valid, b_valid):
    n = int((a_valid.sum(1) + b_valid.sum(1)).amax().item())
    return torch.zeros(a_valid.shape[0], n)


for name, fn, args in (
    ("fusion encoder", Encoder(True), ({"long": torch.zeros(3, dtype=torch.bool), "mel": torch.randn(3, 4)},)),
    ("packed length", packed_len, (torch.ones(2, 5, dtype=torch.bool), torch.ones(2, 3, dtype=torch.bool))),
):
    counters.clear()
    torch._dynamo.reset()
    compiled = torch.compile(fn, backend="eager")
    for _ in range(3):
        compiled(*args)
    # data-dependent branching is counted under "unimplemented" on torch 2.13, the other breaks under "graph_break"
    reasons = {r.splitlines()[0] for kind in ("graph_break", "unimplemented") for r in counters[kind]}
    print(name, "graph-break reasons:", sorted(reasons))
