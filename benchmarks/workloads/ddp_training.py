"""A data-parallel training script for the rank-overhead benchmark: each of the torchrun ranks trains a small MLP
wrapped in DistributedDataParallel (gloo, CPU) under torch.compile, and writes ``$RESULTS/rank-<rank>.json`` with
the wall time of its whole run and of its training loop: ``{"rank", "process_s", "loop_s", "steps"}`` (a file per
rank: the ranks' output lines interleave).

Environment: ``RESULTS`` (a directory), ``BACKEND`` (default ``eager``), ``STEPS`` (default 200).
"""

import json
import os
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

BACKEND = os.environ.get("BACKEND", "eager")
STEPS = int(os.environ.get("STEPS", "200"))
STARTED = time.perf_counter()

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = DistributedDataParallel(nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 64)))
compiled = torch.compile(model, backend=BACKEND)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
loop_started = time.perf_counter()
for step in range(STEPS):
    batch = torch.randn(32 if step % 10 else 24, 64)  # a ragged batch now and then: one recompile, then dynamic
    loss = compiled(batch).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
loop_s = time.perf_counter() - loop_started
dist.barrier()
dist.destroy_process_group()
figures = {"rank": rank, "process_s": time.perf_counter() - STARTED, "loop_s": loop_s, "steps": STEPS}
with open(os.path.join(os.environ["RESULTS"], f"rank-{rank}.json"), "w", encoding="utf-8") as out:
    json.dump(figures, out)
