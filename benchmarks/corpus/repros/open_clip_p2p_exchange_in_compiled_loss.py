# A contrastive loss that swaps features with the neighbouring rank through point-to-point ops wrapped in an
# autograd.Function, compiled as part of a training forward (two CPU ranks over gloo on the loopback address).
import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


class Swap(torch.autograd.Function):
    @staticmethod
    def forward(ctx, peer, t):
        ctx.peer = peer
        out = torch.zeros_like(t)
        ops = [dist.P2POp(dist.isend, t, peer), dist.P2POp(dist.irecv, out, peer)]
        for req in dist.batch_isend_irecv(ops):
            req.wait()
        return out

    @staticmethod
    def backward(ctx, g):
        return None, Swap.apply(ctx.peer, g)


def loss_fn(img, txt, rank):
    loss = -torch.nn.functional.logsigmoid(img @ txt.T).sum()
    other = Swap.apply(1 - rank, txt)
    return loss + torch.nn.functional.softplus(img @ other.T).sum()


def worker(rank):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="29517")
    dist.init_process_group("gloo", rank=rank, world_size=2)
    from torch._dynamo.utils import counters

    step = torch.compile(loss_fn, backend="eager")
    for _ in range(3):
        img = torch.randn(4, 8, requires_grad=True)
        txt = torch.randn(4, 8, requires_grad=True)
        step(img, txt, rank).backward()
    if rank == 0:
        print("graph breaks:", sum(counters["graph_break"].values()))
        for reason in counters["graph_break"]:
            print("  ", reason.splitlines()[0][:160])
        print("graphs:", counters["stats"]["unique_graphs"])
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(worker, nprocs=2)
