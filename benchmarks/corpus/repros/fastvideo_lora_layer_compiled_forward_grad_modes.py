"""A LoRA wrapper whose forward method is decorated with @torch.compile() (one compiled
frame per wrapped linear call), trained with grad enabled and also run under no_grad
(KV-cache priming / validation) in the same process. Layers have different shapes, as
q/k/v/out and FFN projections do. Counts compiled entries of the shared forward."""

import torch
import torch._dynamo.utils as du


class LoRALinear(torch.nn.Module):
    def __init__(self, d_in, d_out, rank=4):
        super().__init__()
        self.base = torch.nn.Linear(d_in, d_out)
        self.base.requires_grad_(False)
        self.lora_A = torch.nn.Parameter(torch.randn(rank, d_in) * 0.01)
        self.lora_B = torch.nn.Parameter(torch.zeros(d_out, rank))
        self.merged = False

    @torch.compile(backend="eager")
    def forward(self, x):
        if not self.merged:
            return self.base(x) + x @ self.lora_A.T @ self.lora_B.T
        return self.base(x)


layers = [LoRALinear(16, 16), LoRALinear(16, 16), LoRALinear(16, 48), LoRALinear(48, 16)]


def model(x):
    for layer in layers:
        x = layer(x)
    return x


for _step in range(3):
    with torch.no_grad():
        model(torch.randn(2, 8, 16))
    model(torch.randn(2, 8, 16)).sum().backward()
print("frames compiled:", du.counters["frames"]["ok"])
print("unique graphs:", du.counters["stats"]["unique_graphs"])
du.counters.clear()
torch._dynamo.reset()
for _step in range(3):
    model(torch.randn(2, 8, 16)).sum().backward()
print("grad-only run, frames compiled:", du.counters["frames"]["ok"])
