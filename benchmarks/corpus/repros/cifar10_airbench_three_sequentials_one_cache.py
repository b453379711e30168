# Imitates airbench96_faster.py: three nn.Sequential CNNs (a small proxy and two main nets that differ only in a
# frozen first-layer bias) are each wrapped with torch.compile(net). A proxy is trained with grad on every 4th step
# and run under no_grad on the others; the main nets train, then get evaluated by a helper that calls .eval() and
# runs them under no_grad, with a final test-time-augmentation pass on translated (strided) crops.
# TORCH_LOGS=recompiles shows all entries on one code object (torch's wrap_inline `inner`), counted together.
import torch
import torch.nn.functional as F
from torch import nn
from torch._dynamo.utils import counters


def net(width, frozen_bias=False):
    seq = nn.Sequential(nn.Conv2d(3, 12, 2), nn.GELU(), nn.Conv2d(12, width, 3, padding=1), nn.MaxPool2d(2))
    seq.append(nn.BatchNorm2d(width)).append(nn.AdaptiveMaxPool2d(1)).append(nn.Flatten()).append(nn.Linear(width, 10))
    seq[0].bias.requires_grad = not frozen_bias
    return torch.compile(seq.to(memory_format=torch.channels_last), backend="eager")


def images(n):
    return torch.randn(n, 3, 32, 32).to(memory_format=torch.channels_last)


def evaluate(model, test, translate=False):
    model.eval()
    with torch.no_grad():
        if translate:
            return model(F.pad(test, (1,) * 4, "reflect")[:, :, 0:32, 0:32])
        return model(test)


def graphs():
    return counters["stats"]["unique_graphs"]


proxy, trainbias, freezebias = net(8), net(16), net(16, frozen_bias=True)
test = images(20)
for run in range(2):
    for step in range(8):
        if step % 4 == 0:
            proxy(images(16)).sum().backward()
        else:
            with torch.no_grad():
                proxy(images(16))
    print(f"run {run} after proxy: {graphs()} graphs")
    for model in (trainbias, freezebias):
        for _ in range(2):
            model.train()
            model(images(16)[torch.arange(16) % 2 == 0]).sum().backward()
            evaluate(model, test)
        print(f"run {run} after a main net (train + eval): {graphs()} graphs")
    evaluate(freezebias, test, translate=True)
    print(f"run {run} after translated TTA: {graphs()} graphs")
