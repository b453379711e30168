"""A hand-written "skip step" optimizer whose step() is replaced by torch.compile(step) at
build time. step() first asks a @torch._dynamo.disable'd helper for a step factor, then
creates each parameter's state lazily (if the state dict is empty) and updates it. The
learning rate is a tensor updated in place between steps.

Measures compiled graphs and the failing guard over 5 steps.
"""

import torch
from torch._dynamo.utils import counters


class SkipStepOpt(torch.optim.Optimizer):
    def __init__(self, params, lr):
        super().__init__(params, dict(lr=lr))

    @torch._dynamo.disable()
    def step_factor(self):
        return torch.tensor(1.0)

    @torch.no_grad()
    def step(self):
        factor = self.step_factor()
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = torch.zeros(())
                    state["avg"] = torch.zeros_like(p)
                state["avg"].lerp_(p.grad, 0.1 * factor)
                p.add_(-group["lr"] * state["avg"])
                state["step"].add_(factor)


params = [torch.nn.Parameter(torch.randn(4, 4)) for _ in range(3)]
opt = SkipStepOpt(params, lr=torch.tensor(0.01))
opt.step = torch.compile(opt.step, backend="eager")
for i in range(5):
    for p in params:
        p.grad = torch.randn(4, 4)
    opt.step()
    opt.param_groups[0]["lr"].fill_(0.01 / (i + 2))
print("unique graphs:", counters["stats"]["unique_graphs"])
