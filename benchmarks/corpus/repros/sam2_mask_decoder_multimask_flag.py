"""A decoder submodule whose bound forward is compiled (fullgraph=True, dynamic=False) and called with a Python bool
that picks the output slice: False on mask-prompted conditioning frames, True on every tracked frame, with the same
tensor shapes. Three "videos" of one conditioning frame and four tracked frames each.
Expected: 2 compiles in all (one per bool value), none added after the first video.
"""

import torch
from torch import nn
from torch._dynamo.utils import counters


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(8, 4)

    def forward(self, emb, dense, multimask: bool, repeat: bool):
        masks = self.head(emb + dense)
        return masks[:, 1:] if multimask else masks[:, 0:1]


dec = Decoder().eval()
dec.forward = torch.compile(dec.forward, backend="eager", fullgraph=True, dynamic=False)
with torch.inference_mode():
    for video in range(3):
        for frame in range(5):
            dec(torch.randn(1, 4, 8), torch.randn(1, 4, 8), multimask=frame > 0, repeat=False)
        print(f"video {video}: unique_graphs={counters['stats']['unique_graphs']}")
