# Imitates a gradient-sharing helper decorated with @torch.compile (default dynamic): it gathers the rows named by
# an index tensor, turns per-rank row counts (Python int lists that change every step) into split sizes, and
# launches an async all_to_all_single whose future it returns. One gloo process stands in for the ranks.
import os

import torch
import torch.distributed as dist
from torch._dynamo.utils import counters

os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
os.environ.setdefault("MASTER_PORT", "29534")
dist.init_process_group("gloo", rank=0, world_size=1)


@torch.compile(backend="eager")
@torch.no_grad
def share(grad, idx, send_counts, recv_counts):
    vals = grad[idx]
    d = grad.shape[1]
    send_sizes = [c * d for c in send_counts]
    recv_sizes = [c * d for c in recv_counts]
    out = torch.empty(sum(recv_sizes), dtype=grad.dtype)
    fut = dist.all_to_all_single(
        out, vals.view(-1), output_split_sizes=recv_sizes, input_split_sizes=send_sizes, async_op=True
    ).get_future()
    return out, fut


grad = torch.randn(64, 4)
for step in range(12):
    n = 3 + (step * 7) % 11  # rows to send changes every step
    idx = torch.randint(0, 64, (n,), dtype=torch.int32)
    out, fut = share(grad, idx, [n], [n])
    fut.wait()
print("unique graphs:", counters["stats"]["unique_graphs"], "frames:", dict(counters["frames"]))
print("graph breaks:", {k.splitlines()[0][:80]: v for k, v in counters["graph_break"].items()})
dist.destroy_process_group()
