"""Compiles the Encoder of model.py and calls it like a training loop would.

Run it with `dynamo-lens run examples/recompiling_model/train.py` to watch the recompiles the static check predicted.
"""

import torch

from model import Encoder

encoder = Encoder()
compiled = torch.compile(encoder, backend="eager")

if __name__ == "__main__":
    for _ in range(12):
        compiled(torch.randn(4, 16))
    print(f"steps={encoder.steps}, recorded={len(encoder.losses)}")
