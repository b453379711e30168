"""Two ways a policy compiles its training computation: (a) a denoising sub-network compiled as a module and stored
on the model in __init__, (b) the inner model's bound forward replaced by its compiled version in __init__. Training
runs with grad in train mode; every few steps a validation pass runs the same loss under torch.no_grad() in eval mode,
and an environment evaluation samples with a denoising loop under no_grad (batch 3).
Expected for each way: one entry for training, one for no_grad (reused by later validations), one more for the
evaluation batch size: (a) 3 and (b) 2 compiles, nothing added after the first validation/evaluation round.
"""

import torch
from torch import nn
from torch._dynamo.utils import counters


class Model(nn.Module):
    def __init__(self, compile_forward):
        super().__init__()
        self.unet = nn.Linear(6, 6)
        if compile_forward:
            self.forward = torch.compile(self.forward, backend="eager")
        else:
            self.unet = torch.compile(self.unet, backend="eager")

    def forward(self, x):
        return ((self.unet(x) - x) ** 2).mean()

    @torch.no_grad()
    def sample(self, x):
        for _t in range(4):
            x = x - 0.1 * self.unet(x)
        return x


for compile_forward in (False, True):
    counters.clear()
    m = Model(compile_forward)
    for step in range(1, 9):
        m.train()
        m(torch.randn(8, 6)).backward()
        if step % 3 == 0:
            m.eval()
            with torch.no_grad():
                m(torch.randn(8, 6))  # validation loss
            if not compile_forward:
                m.sample(torch.randn(3, 6))  # environment evaluation
    print(f"compile_forward={compile_forward}: unique_graphs={counters['stats']['unique_graphs']}")
