"""Imitates the DQN/IQL scripts: a nested update() closes over a plain-object target updater (HardUpdate-like: an
int counter compared to the update interval, reset or incremented on every step()) and is torch.compile'd."""

import torch
import torch._dynamo.utils as du


class Hard:  # plain object, not an nn.Module
    def __init__(self, src, tgt, interval):
        self.src, self.tgt = src, tgt
        self.interval = interval
        self.counter = 0

    def step(self):
        if self.counter == self.interval:
            self.tgt.data.copy_(self.src.data)
        if self.counter == self.interval:
            self.counter = 0
        else:
            self.counter += 1


def main(interval):
    torch._dynamo.reset()
    du.counters.clear()
    w = torch.nn.Parameter(torch.randn(4))
    w_target = torch.zeros(4)
    updater = Hard(w, w_target, interval)
    opt = torch.optim.SGD([w], lr=0.1)

    def update(x):
        loss = ((x * w) ** 2).sum()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        updater.step()
        return loss.detach()

    update = torch.compile(update, backend="eager")
    for _ in range(120):
        update(torch.randn(4))
    print(
        f"interval={interval}: frames ok={du.counters['frames']['ok']}"
        f" unique_graphs={du.counters['stats']['unique_graphs']}"
    )


main(50)
print("graph break reasons:", sorted({k.splitlines()[0][:60] for k in du.counters["graph_break"]}))
