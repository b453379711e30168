"""ActivationMonitor-style callback: every `interval` training batches it registers a forward
hook on every submodule (fresh handles, the step bound with functools.partial), the hook turns
activation statistics into Python floats with .item() and hands a fresh dict to a logger
object, and the hooks are removed after the forward. The model's forward is compiled
(wrapped-forward idiom). Compare with the same run without hooks."""

import functools

import torch
from torch import nn
from torch._dynamo.utils import counters


class Sink:
    def __init__(self):
        self.records = []

    def log_metrics(self, metrics):
        self.records.append(metrics)


def hook(sink, step, module, inputs, output):
    metrics = {f"act/{type(module).__name__}": output.float().mean().item()}
    sink.log_metrics(metrics)


def run(interval):
    torch._dynamo.reset()
    counters.clear()
    sink = Sink()
    model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2))
    compiled = torch.compile(model, backend="eager")
    model.forward = compiled.dynamo_ctx(model.forward)
    for step in range(30):
        handles = []
        if interval and step % interval == 0:
            handles = [m.register_forward_hook(functools.partial(hook, sink, step)) for m in model]
        model(torch.randn(4, 8)).sum().backward()
        for h in handles:
            h.remove()
    reasons = sorted({r.splitlines()[0] for r in counters["graph_break"]})
    print(
        f"interval={interval}: graphs={counters['stats']['unique_graphs']} "
        f"frames={dict(counters['frames'])} records={len(sink.records)} breaks={reasons}"
    )


run(None)
run(3)
