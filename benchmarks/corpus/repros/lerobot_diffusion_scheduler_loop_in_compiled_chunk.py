"""A policy's chunk-prediction method is compiled whole (default options); it runs a DDPM-style sampling loop over
the scheduler's timesteps tensor, and the scheduler's step (imitating the usual DDPM step) indexes its alpha table
with the 0-d timestep tensor and branches on `prev_t >= 0` / `t > 0`.
Expected (torch 2.13): the tensor index is a data-dependent operator and breaks the graph inside the loop, so the
compiled method is skipped; the step frame then breaks on the tensor branch and recompiles per timestep value until
recompile_limit (8).
"""

import torch
from torch import nn
from torch._dynamo.utils import counters


class Scheduler:
    def __init__(self, n=100):
        self.alphas_cumprod, self.one, self.n = torch.linspace(0.99, 0.01, n), torch.tensor(1.0), n

    def step(self, out, t, sample):
        prev_t = t - self.n // len(self.timesteps)
        a_t = self.alphas_cumprod[t]
        a_prev = self.alphas_cumprod[prev_t] if prev_t >= 0 else self.one
        prev = a_prev.sqrt() * (sample - (1 - a_t).sqrt() * out) / a_t.sqrt()
        return prev + 0.01 * torch.randn_like(prev) if t > 0 else prev


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.unet, self.scheduler = nn.Linear(5, 4), Scheduler()

    @torch.no_grad()
    def predict_chunk(self, cond):
        x = torch.randn(cond.shape[0], 4)
        self.scheduler.timesteps = torch.arange(0, 100, 10).flip(0)
        for t in self.scheduler.timesteps:
            out = self.unet(torch.cat([x, torch.full(x.shape[:1], t, dtype=torch.long)[:, None].float()], -1))
            x = self.scheduler.step(out, t, x)
        return x


p = Policy()
p.predict_chunk = torch.compile(p.predict_chunk, backend="eager")
for i in range(3):
    p.predict_chunk(torch.randn(2, 3))
    breaks = sorted(k.splitlines()[0] for k in counters["graph_break"])
    print(f"call {i}: unique_graphs={counters['stats']['unique_graphs']} breaks={breaks}")
