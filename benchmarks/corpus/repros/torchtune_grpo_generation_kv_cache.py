# Imitates torchtune's GRPO recipe: per-layer compiled layers generate under local_kv_cache (cache enabled,
# prefill then decode shapes), then score without the cache, then take a grad step. Generation compiles entries of its
# own because of the cache, so its grad mode adds no compile: the count is the same with generation under no_grad or
# with grad enabled; only the scoring pass's no_grad adds one.
import torch
from torch import nn
from torch._dynamo.utils import counters


class Cache(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("k", torch.zeros(2, 16, 8))

    def update(self, k, pos):
        self.k[:, pos] = k
        return self.k


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.q = nn.Linear(8, 8)
        self.kv_cache = None
        self.cache_enabled = False

    def forward(self, x, pos):
        k = self.q(x)
        if self.kv_cache is not None and self.cache_enabled:
            k = self.kv_cache.update(k.detach(), pos)
        return x + nn.functional.dropout(k.mean(1, keepdim=True), 0.1 if self.training else 0.0)


def compiles(generate_with_grad: bool, score_with_grad: bool) -> int:
    torch._dynamo.reset()
    counters.clear()
    layer = Layer()
    layer.compile(backend="eager")
    for _ in range(3):
        layer.kv_cache, layer.cache_enabled = Cache(), True
        with torch.set_grad_enabled(generate_with_grad):
            layer(torch.randn(2, 4, 8), torch.arange(4))
            for t in range(4, 8):
                layer(torch.randn(2, 1, 8), torch.tensor([t]))
        layer.kv_cache, layer.cache_enabled = None, False
        with torch.set_grad_enabled(score_with_grad):
            layer(torch.randn(2, 8, 8), torch.arange(8))
        layer(torch.randn(2, 8, 8), torch.arange(8)).sum().backward()
    return counters["stats"]["unique_graphs"]


print("generation no_grad, scoring no_grad:", compiles(False, False))  # 4
print("generation grad,    scoring no_grad:", compiles(True, False))  # 4: generation's mode adds nothing
print("generation no_grad, scoring grad:   ", compiles(False, True))  # 3: the scoring pass's no_grad adds one
