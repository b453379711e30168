# Imitates a KV-cached decoder whose compiled next-token helper receives the model, a position tensor and a Python
# int "max position + 1" that the generation loop increments after every token; the int slices the mask and the
# cache. A second model variant uses a ring-buffer (sliding window) cache that reads the largest position with
# .item() to trim the cache.
import torch
import torch.nn as nn
from torch._dynamo.utils import counters

L = 64


class Cache(nn.Module):
    def __init__(self, window):
        super().__init__()
        self.register_buffer("k", torch.zeros(1, L if window is None else window, 8))
        self.window = window

    def forward(self, pos, k):
        if self.window is None:
            return self.k.index_copy_(1, pos, k)
        out = self.k.index_copy_(1, pos % self.window, k)
        top = pos.max().item()
        if top < self.window:
            out = out[:, : top + 1]
        return out


class Net(nn.Module):
    def __init__(self, window=None):
        super().__init__()
        self.q = nn.Linear(8, 8)
        self.cache = Cache(window)
        self.register_buffer("mask", torch.tril(torch.ones(L, L, dtype=torch.bool)))

    def forward(self, x, pos, maxp1=None):
        keys = self.cache(pos, self.q(x))
        mask = self.mask[pos]
        if maxp1 is not None:
            mask, keys = mask[:, :maxp1], keys[:, :maxp1]
        if mask.size(-1) != keys.size(1):
            mask = mask[:, : keys.size(1)]
        att = (x @ keys.transpose(1, 2)).masked_fill(~mask, -1e4)
        return att.softmax(-1) @ keys


def next_token(model, pos, x, maxp1=None):
    return model(x, pos, maxp1)[:, -1:].sum(-1, keepdim=True)


@torch.inference_mode()
def generate(step_fn, model, prompt_len=5, new=20):
    x = torch.randn(1, prompt_len, 8)
    pos, maxp1 = torch.arange(prompt_len), prompt_len
    for i in range(new):
        y = step_fn(model, pos, x, maxp1)
        x = y.expand(1, 1, 8)
        pos = torch.tensor([prompt_len]) if i == 0 else pos + 1
        maxp1 += 1


torch._dynamo.config.automatic_dynamic_shapes = True
step = torch.compile(next_token, backend="eager")
generate(step, Net())
print(
    "global cache, 20 tokens: compiles",
    counters["stats"]["unique_graphs"],
    "graph breaks",
    sum(counters["graph_break"].values()),
)

torch._dynamo.reset()
counters.clear()
generate(step, Net(window=16))
print(
    "sliding-window cache, 20 tokens: compiles",
    counters["stats"]["unique_graphs"],
    "graph breaks",
    {k.splitlines()[0][:60]: v for k, v in counters["graph_break"].items()},
)

# Control: the same loop without the int (maxp1=None every call) compiles the same prefill + decode entries.
torch._dynamo.reset()
counters.clear()


@torch.inference_mode()
def generate_no_int(step_fn, model, prompt_len=5, new=20):
    x = torch.randn(1, prompt_len, 8)
    pos = torch.arange(prompt_len)
    for i in range(new):
        x = step_fn(model, pos, x, None).expand(1, 1, 8)
        pos = torch.tensor([prompt_len]) if i == 0 else pos + 1


generate_no_int(step, Net())
print("global cache without the int argument: compiles", counters["stats"]["unique_graphs"])

torch._dynamo.reset()
counters.clear()
generate(step, Net(window=16), new=60)
print(
    "sliding-window cache, 60 tokens: compiles",
    counters["stats"]["unique_graphs"],
    "graph breaks",
    sum(counters["graph_break"].values()),
)
