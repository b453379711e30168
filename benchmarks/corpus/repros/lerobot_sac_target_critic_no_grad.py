"""Two instances of one critic-ensemble class (online and target, sharing an encoder), each wrapped by
torch.compile (backend="eager" here; the project uses the defaults). The target is only ever called under
torch.no_grad() (TD targets); the online critic is called with grad enabled, once with replay-buffer actions and once
with actor actions that require grad.
Expected: 3 compiles in all (TORCH_LOGS=recompiles names grad_mode for the target's entry), none added later.
"""

import torch
from torch import nn
from torch._dynamo.utils import counters


class Ensemble(nn.Module):
    def __init__(self, enc, n):
        super().__init__()
        self.enc = enc
        self.heads = nn.ModuleList(nn.Linear(12, 1) for _ in range(n))

    def forward(self, obs, act, feats=None):
        dev = next(iter(self.parameters())).device
        obs = {k: v.to(dev) for k, v in obs.items()}
        x = torch.cat([self.enc(obs["s"]), act], -1)
        return torch.stack([h(x).squeeze(-1) for h in self.heads])


enc = nn.Linear(4, 8)
online, target = torch.compile(Ensemble(enc, 2), backend="eager"), torch.compile(Ensemble(enc, 2), backend="eager")
actor = nn.Linear(4, 4)
for step in range(4):
    o = {"s": torch.randn(16, 4)}
    with torch.no_grad():
        q_target = target(o, actor(o["s"]))
    ((online(o, torch.randn(16, 4)) - q_target) ** 2).mean().backward()
    online(o, actor(o["s"])).mean().backward()
    print(f"step {step}: unique_graphs={counters['stats']['unique_graphs']}")
