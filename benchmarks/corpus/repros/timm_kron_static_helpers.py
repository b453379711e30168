# Imitates an optimizer that compiles its einsum helpers once with fullgraph=True, dynamic=False and then calls
# them once per parameter, each parameter bringing its own einsum string and its own shapes.
import torch
from torch._dynamo.utils import counters


def _helper(expr, g, qs):
    return torch.einsum(expr, *qs, g)


helper = torch.compile(_helper, fullgraph=True, dynamic=False, backend="eager")

# 12 parameters of distinct shapes, as in any real model; 2-D ones get two triangular factors,
# 1-D ones a diagonal factor (a different einsum string).
params = []
for n in range(2, 8):
    params.append(("ab,cd,bd->ac", torch.randn(n, n + 1), [torch.eye(n), torch.eye(n + 1)]))
    params.append(("i,i->i", torch.randn(n + 10), [torch.ones(n + 10)]))

try:
    for _step in range(2):
        for expr, g, qs in params:
            helper(expr, g, qs)
    print("finished without error")
except Exception as e:
    print("raised", type(e).__name__, "-", str(e).splitlines()[0][:120])
print("graphs compiled before the failure:", counters["stats"]["unique_graphs"])

# The optimizer module also raises the limit at import time (the legacy alias); then every parameter shape
# simply costs one more compile and nothing fails.
torch._dynamo.reset()
counters.clear()
torch._dynamo.config.cache_size_limit = 1_000_000
for _step in range(2):
    for expr, g, qs in params:
        helper(expr, g, qs)
print("with cache_size_limit=1e6: graphs compiled for 12 parameters over 2 steps:", counters["stats"]["unique_graphs"])
print("recompile_limit now:", torch._dynamo.config.recompile_limit)
