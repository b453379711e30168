"""A policy method, compiled with default options, runs a flow-matching Euler loop; each step goes through a guidance
helper object that, once a previous chunk exists, builds prefix weights from the Python int inference_delay
(min/linspace/ones of that length) and takes torch.autograd.grad under torch.enable_grad(). The caller passes a
delay measured from latency, so it changes between calls.
Expected (torch 2.13): autograd.grad breaks the graph at every guided step (trace_autograd_ops=False), and the
guidance frame recompiles once per new delay value; with more than 8 values it hits recompile_limit.
"""

import torch
from torch import nn
from torch._dynamo.utils import counters


class Guide:
    def step(self, x, prev, delay, t, base, horizon=10):
        if prev is None:
            return base(x)
        start = min(delay, horizon)
        lin = torch.linspace(1, 0, horizon - start + 2)[1:-1] if start < horizon else torch.tensor([])
        w = torch.cat([torch.ones(start), lin, torch.zeros(x.shape[1] - horizon)])[None, :, None]
        x = x.clone().detach()
        with torch.enable_grad():
            v = base(x)
            x.requires_grad_(True)
            x1 = x - t * v
            corr = torch.autograd.grad(x1, x, ((prev - x1) * w).detach())[0]
        return v - 2.0 * corr


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.net, self.guide = nn.Linear(6, 6), Guide()

    @torch.no_grad()
    def predict(self, x, **kw):
        for step in range(4):
            x = x - 0.25 * self.guide.step(x, kw.get("prev"), kw.get("inference_delay"), 1.0 - step / 4, self.net)
        return x


p = Policy()
p.predict = torch.compile(p.predict, backend="eager")
prev = None
for delay in [0, 3, 4, 4, 2, 5, 3, 6, 7, 1, 8, 9, 4]:
    out = p.predict(torch.randn(1, 50, 6), inference_delay=delay, prev=prev)
    prev = torch.nn.functional.pad(out[:, :10].detach(), (0, 0, 0, 40))
    breaks = sum(counters["graph_break"].values())
    print(f"delay {delay}: unique_graphs={counters['stats']['unique_graphs']} breaks={breaks}")
