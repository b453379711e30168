# Regional compilation: every instance of a repeated block class is compiled in place with .compile(), so all
# instances share one code object (and one recompile limit). Instances that differ in a Python flag, or in whether
# an optional submodule exists, or that see a different sequence length, each need their own cache entry.
import torch
import torch._dynamo.eval_frame as ef
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, dim, modulated=True, with_in_proj=False):
        super().__init__()
        self.modulated = modulated
        self.proj_in = nn.Linear(dim, dim) if with_in_proj else None
        self.mod = nn.Linear(dim, dim)
        self.ff = nn.Linear(dim, dim)

    def forward(self, x, c):
        if self.proj_in is not None:
            x = self.proj_in(x)
        if self.modulated:
            x = x * (1 + self.mod(c))
        return x + self.ff(x)


class Model(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.refiner = nn.ModuleList([Block(dim, modulated=False) for _ in range(2)])
        self.layers = nn.ModuleList([Block(dim, with_in_proj=(i == 0)) for i in range(4)])

    def forward(self, x, ctx, c):
        for b in self.refiner:
            ctx = b(ctx, c)
        x = torch.cat([x, ctx], dim=1)
        for b in self.layers:
            x = b(x, c)
        return x


def entries():
    return len(ef._debug_get_cache_entry_list(Block.forward.__code__))


model = Model().eval()
for m in model.modules():
    if isinstance(m, Block):
        m.compile(backend="eager", fullgraph=True)
with torch.no_grad(), torch._dynamo.config.patch(recompile_limit=64):
    for _ in range(3):
        model(torch.randn(1, 6, 8), torch.randn(1, 4, 8), torch.randn(1, 1, 8))
print("cache entries of Block.forward after 3 calls:", entries())  # unmodulated / first layer with proj_in / rest

torch._dynamo.reset()
with torch.no_grad(), torch._dynamo.config.patch(recompile_limit=1):
    try:
        model(torch.randn(1, 6, 8), torch.randn(1, 4, 8), torch.randn(1, 1, 8))
        print("recompile_limit=1: ran")
    except Exception as e:
        print("recompile_limit=1 with fullgraph=True:", type(e).__name__)

# Control: the same blocks with identical flags and no optional submodule compile once.
torch._dynamo.reset()
uniform = nn.ModuleList([Block(8) for _ in range(6)]).eval()
for b in uniform:
    b.compile(backend="eager", fullgraph=True)
with torch.no_grad():
    for _ in range(3):
        x = torch.randn(1, 6, 8)
        for b in uniform:
            x = b(x, torch.randn(1, 1, 8))
print("uniform blocks, cache entries:", entries())
