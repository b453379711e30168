"""torchchat idiom: a compiled decode-one-token step is fed the sampled token (shape [1]) on every
step, then once at the end of generation a freshly built EOS token reshaped to [1, 1]; the step
flattens its input with view(1, -1), so only the input's rank differs."""

import torch
import torch._dynamo.utils


class Gen:
    def __init__(self):
        self.emb = torch.nn.Embedding(16, 8)
        self.out = torch.nn.Linear(8, 16)

    def decode_one_token(self, x, input_pos):
        x = x.view(1, -1)
        logits = self.out(self.emb(x) + input_pos)
        return torch.topk(logits[0, -1], k=1, dim=-1)[1]


g = Gen()
g.decode_one_token = torch.compile(g.decode_one_token, backend="eager", fullgraph=True)
with torch.no_grad():
    cur, pos = torch.tensor([3]), torch.tensor([5])
    for _step in range(6):
        cur = g.decode_one_token(cur.clone(), pos)
        pos += 1
    print("after 6 decode steps, unique_graphs =", torch._dynamo.utils.counters["stats"]["unique_graphs"])
    eos = torch.tensor([2], dtype=cur.dtype)
    g.decode_one_token(eos.view(1, -1), pos)
    print("after the final EOS call, unique_graphs =", torch._dynamo.utils.counters["stats"]["unique_graphs"])
    g.decode_one_token(eos.view(1, -1), pos)
    print("second generation's EOS call, unique_graphs =", torch._dynamo.utils.counters["stats"]["unique_graphs"])
