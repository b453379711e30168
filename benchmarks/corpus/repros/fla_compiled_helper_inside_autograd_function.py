"""A library picks its activation from a name->function table; one entry is an autograd.Function whose forward
calls a @torch.compile'd helper. A layer built with another name ("silu") never reaches the helper. A layer built
with the squared-ReLU name calls it from Function.forward, which autograd always runs with grad disabled, so the
caller's grad mode never reaches the helper's GLOBAL_STATE guard; what differs between a training call and a
no_grad call is the input's requires_grad flag, a tensor guard.

Expected (TORCH_LOGS=recompiles): 0 compiles for the "silu" layer; 2 for the squared-ReLU layer, the second
triggered by "requires_grad mismatch" on the input, not by grad mode.
"""

import torch
import torch.nn.functional as F
from torch._dynamo.utils import counters


@torch.compile(backend="eager")
def sq_relu_fwd(x):
    r = F.relu(x.float())
    return (r * r).to(x.dtype)


class SqReLU(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return sq_relu_fwd(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2.0 * g * F.relu(x)


TABLE = {"silu": F.silu, "sqrelu": SqReLU.apply}
lin = torch.nn.Linear(8, 8)
for name in ("silu", "sqrelu"):
    act = TABLE[name]
    act(lin(torch.randn(4, 8))).sum().backward()  # training call, grad enabled
    with torch.no_grad():
        for _ in range(3):
            act(lin(torch.randn(4, 8)))  # step-by-step decoding under no_grad
    print(f"{name}: unique_graphs={counters['stats']['unique_graphs']}")
