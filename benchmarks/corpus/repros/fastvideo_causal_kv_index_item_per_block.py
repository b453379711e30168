"""Per-block compile (submodule.forward = torch.compile(submodule.forward)) of a causal
block whose self-attention keeps its KV-cache write position in 1-element tensors and
reads them back with .item() before slicing the cache; the driver passes a Python int
start offset that grows per chunk. Measures graph breaks and compiled frames."""

import torch
import torch._dynamo.utils as du


class Attn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.q = torch.nn.Linear(8, 8)

    def forward(self, x, kv_cache, current_start):
        q = self.q(x)
        cur_end = current_start + x.shape[1]
        g = int(kv_cache["global_end_index"].item())
        loc = int(kv_cache["local_end_index"].item())
        loc_end = loc + cur_end - g
        kv_cache["k"][:, loc_end - x.shape[1] : loc_end] = q
        window = kv_cache["k"][:, max(0, loc_end - 32) : loc_end]
        kv_cache["global_end_index"].fill_(cur_end)
        kv_cache["local_end_index"].fill_(loc_end)
        return q + window.mean(1, keepdim=True)


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = Attn()
        self.ff = torch.nn.Linear(8, 8)

    def forward(self, x, kv_cache, current_start):
        return self.ff(self.attn(x, kv_cache, current_start))


blocks = torch.nn.ModuleList(Block() for _ in range(4))
for b in blocks:
    b.forward = torch.compile(b.forward, backend="eager")
caches = [
    {
        "k": torch.zeros(1, 64, 8),
        "global_end_index": torch.tensor([0]),
        "local_end_index": torch.tensor([0]),
    }
    for _ in blocks
]
with torch.no_grad():
    for chunk in range(6):
        x = torch.randn(1, 4, 8)
        for b, c in zip(blocks, caches, strict=True):
            x = b(x, c, current_start=chunk * 4)
print("block calls:", 6 * len(blocks))
print("graph breaks:", sum(du.counters["graph_break"].values()))
print("break reasons:", list(du.counters["graph_break"].keys())[:2])
print("unique graphs:", du.counters["stats"]["unique_graphs"])
print("frames compiled ok:", du.counters["frames"]["ok"])
