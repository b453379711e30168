"""Composer-style compile: the trainer compiles the wrapper, keeps the original module and
replaces only its bound forward by the compiled one. Training runs with grad in train mode,
the eval loop reaches the compiled forward through an eval_forward method under no_grad and
eval mode, predict calls the module under no_grad and eval mode, and a generate-style helper
calls the inner network directly in eval mode."""

import torch
from torch import nn
from torch._dynamo.utils import counters


class Wrapper(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.1), nn.Linear(8, 2))

    def forward(self, batch):
        x, _ = batch
        return self.net(x)

    def eval_forward(self, batch):
        return self.forward(batch)


def run(with_eval_loop):
    torch._dynamo.reset()
    counters.clear()
    m = Wrapper()
    opt = torch.compile(m, backend="eager")
    m.forward = opt.dynamo_ctx(m.forward)
    batch = (torch.randn(4, 8), torch.zeros(4))
    seen = {}
    for _ in range(3):
        m(batch).sum().backward()
    seen["train"] = counters["stats"]["unique_graphs"]
    if with_eval_loop:
        with torch.no_grad():
            m.eval()
            for _ in range(2):
                m.eval_forward(batch)
            m.train()
        seen["after eval loop"] = counters["stats"]["unique_graphs"]
    m.eval()
    with torch.no_grad():
        m.net(batch[0])  # generate-style: inner network called directly
    m.train()
    seen["after generate-style eval call"] = counters["stats"]["unique_graphs"]
    with torch.no_grad():
        m.eval()
        for _ in range(2):
            m(batch)
        m.train()
    seen["after predict"] = counters["stats"]["unique_graphs"]
    print(f"eval loop={with_eval_loop}: {seen}")


run(with_eval_loop=True)
run(with_eval_loop=False)
