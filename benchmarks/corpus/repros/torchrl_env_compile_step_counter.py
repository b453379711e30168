"""Imitates EnvBase.compile(): torch.compile of the bound _step_and_maybe_reset of an nn.Module env whose _step
bumps a Python int attribute. Variant A: pure-torch physics then the counter (MujocoEnv-like). Variant B: an opaque
simulator call inside a frame-skip loop that also bumps the counter (GenesisWrapper-like). Variant D: the loop with the
opaque call sits in a helper and the counter follows in _step (MujocoEnv with a native backend).
Variant C: the counter is a tensor buffer (what BranchlessAutoResetCountingEnv does)."""

import torch
import torch._dynamo.utils as du


def opaque_sim_step():  # stands in for a native simulator call Dynamo cannot trace
    torch._dynamo.graph_break()


class Env(torch.nn.Module):
    def __init__(self, variant):
        super().__init__()
        self.variant = variant
        self.counter = 0
        self.frame_skip = 2
        self.register_buffer("count", torch.zeros(4, 1))

    def _step(self, x):
        if self.variant == "A":
            x = x * 0.9 + 0.1
            self.counter += 1
        elif self.variant == "B":
            for _ in range(self.frame_skip):
                opaque_sim_step()
                self.counter += 1
            x = x + 1
        elif self.variant == "D":
            self.physics(x)
            self.counter += 1
            x = x * 0.9 + 0.1  # reward/obs math after the simulator call
        else:
            self.count.add_(1)
        return x

    def physics(self, x):  # frame-skip loop around the simulator, then the counter in _step
        for _ in range(self.frame_skip):
            opaque_sim_step()
        return x

    def step(self, x):
        return self._step(x)

    def _step_and_maybe_reset(self, x):
        out = self.step(x)
        return out, out.clone()


for variant in "ABDC":
    torch._dynamo.reset()
    du.counters.clear()
    env = Env(variant)
    compiled = torch.compile(env._step_and_maybe_reset, backend="eager")
    x = torch.ones(4, 1)
    for _ in range(12):
        x, _ = compiled(x)
    print(
        f"variant {variant}: frames compiled ok={du.counters['frames']['ok']}"
        f" unique_graphs={du.counters['stats']['unique_graphs']}"
        f" graph_breaks={sum(du.counters['graph_break'].values())}"
    )
