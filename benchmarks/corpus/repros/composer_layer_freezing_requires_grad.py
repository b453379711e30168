"""LayerFreezing-style algorithm: at every epoch end after the freeze start it sets
requires_grad=False on the parameters of one more leading layer of a model whose forward is
compiled (wrapped-forward idiom). Count compiles over the epochs."""

import torch
from torch import nn
from torch._dynamo.utils import counters

torch._dynamo.reset()
counters.clear()
model = nn.Sequential(*[nn.Linear(8, 8) for _ in range(12)])
compiled = torch.compile(model, backend="eager")
model.forward = compiled.dynamo_ctx(model.forward)
per_epoch = []
for epoch in range(12):
    for _ in range(3):  # batches
        model(torch.randn(4, 8)).sum().backward()
    per_epoch.append(counters["stats"]["unique_graphs"])
    for p in model[epoch].parameters():  # epoch end: freeze one more layer
        p.requires_grad = False
print("cumulative graphs after each epoch:", per_epoch)
print("frames:", dict(counters["frames"]))
