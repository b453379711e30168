# Imitates a kernel wrapper called from a model compiled with dynamic=False, fullgraph=True: it reads
# `lens[0].item()` only when the cumulative-length tensor has a single element, but the caller always passes a
# padded boundary tensor of fixed length (> 1). The static shape decides the branch, so .item() is never traced.
import torch
from torch._dynamo.utils import counters


def wrapper(y, lens):
    b = y.shape[0]
    if lens.numel() == b and b == 1:
        lens = torch.tensor([0, int(lens[0].item())], dtype=torch.int32)
    return y * lens.float().sum()


@torch.compile(backend="eager", dynamic=False, fullgraph=True)
def model(y, lens):
    return wrapper(y, lens) + 1


for i in range(6):
    lens = torch.full((128,), 64, dtype=torch.int32)
    lens[0] = 0
    lens[1] = 10 + i
    model(torch.randn(1, 8), lens)
print("graphs:", counters["stats"]["unique_graphs"], "graph breaks:", sum(counters["graph_break"].values()))
