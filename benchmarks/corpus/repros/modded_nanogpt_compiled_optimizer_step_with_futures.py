# Imitates a distributed Adam whose whole step() method is decorated with torch.compile: it loops over the
# parameters, waits on the futures that gradient hooks stored in a dict, bumps a Python int step counter kept in
# the per-parameter state dict, uses it in the bias correction, and launches async all_gathers.
# Run on one process with the gloo backend.
import os

import torch
import torch.distributed as dist
from torch._dynamo.utils import counters

os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
os.environ.setdefault("MASTER_PORT", "29533")
dist.init_process_group("gloo", rank=0, world_size=1)
torch._dynamo.config.recompile_limit = 64  # the project raises the limit like this


class TinyDistAdam(torch.optim.Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.95)):
        super().__init__(params, dict(lr=lr, betas=betas))
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p] = dict(step=0, m=torch.zeros_like(p), v=torch.zeros_like(p))
        self.futures = {}

    @torch.compile(backend="eager")
    @torch.no_grad()
    def step(self):
        gathers = []
        for group in self.param_groups:
            b1, b2 = group["betas"]
            for p in group["params"]:
                if p not in self.futures:
                    continue
                fut, g = self.futures[p]
                fut.wait()
                st = self.state[p]
                st["step"] += 1
                t = st["step"]
                st["m"].mul_(b1).add_(g, alpha=1 - b1)
                st["v"].mul_(b2).addcmul_(g, g, value=1 - b2)
                upd = st["m"] / (st["v"].sqrt() + 1e-8) * (group["lr"] * (1 - b2**t) ** 0.5 / (1 - b1**t))
                p.add_(upd, alpha=-1.0)
                gathers.append(dist.all_gather_into_tensor(torch.empty_like(p), p, async_op=True).get_future())
        self.futures.clear()
        torch.futures.collect_all(gathers).wait()


params = [torch.nn.Parameter(torch.randn(4, 4)), torch.nn.Parameter(torch.randn(8))]
opt = TinyDistAdam(params)
for step in range(12):
    for p in params:
        g = torch.randn_like(p)
        opt.futures[p] = (dist.all_reduce(g, async_op=True).get_future(), g)
    for group in opt.param_groups:
        group["lr"] = 1e-3 * (1 - step / 12)  # the trainer rewrites the lr every step
    opt.step()
print("unique graphs:", counters["stats"]["unique_graphs"])
print("frames skipped or compiled:", dict(counters["frames"]))
print("graph breaks:", {k.splitlines()[0][:70]: v for k, v in counters["graph_break"].items()})
dist.destroy_process_group()
