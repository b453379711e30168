"""A compiled MoE-style layer calls an autograd.Function whose forward launches
dist.all_to_all_single(..., async_op=True) and returns the work handle, which the caller
waits on (single-rank gloo group, CPU).

Measures compiled graphs and frames over 3 calls; run with TORCH_LOGS=graph_breaks to see
the break at the collective ("async_op=True for distributed collectives", GB0172) and the
one at handle.wait().
"""

import os
import socket

import torch
import torch.distributed as dist
from torch._dynamo.utils import counters

with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
os.environ["MASTER_ADDR"] = "127.0.0.1"
os.environ["MASTER_PORT"] = str(port)
dist.init_process_group("gloo", rank=0, world_size=1)


class AllToAll(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, async_op):
        out = torch.empty_like(x)
        handle = dist.all_to_all_single(out, x, async_op=async_op)
        return out, handle

    @staticmethod
    def backward(ctx, grad, _):
        return grad, None


def layer(x, w):
    y, handle = AllToAll.apply(x @ w, True)
    handle.wait()
    return y.relu()


compiled = torch.compile(layer, backend="eager")
w = torch.randn(4, 4, requires_grad=True)
for _ in range(3):
    compiled(torch.randn(8, 4), w)
print("unique graphs:", counters["stats"]["unique_graphs"])
print("frames compiled (total/ok):", counters["frames"]["total"], counters["frames"]["ok"])
dist.destroy_process_group()
