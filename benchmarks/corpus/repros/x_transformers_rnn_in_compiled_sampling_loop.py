# A token generator's sampling method is compiled (inside inference mode) and calls its own forward in a Python loop;
# forward runs a recurrent core (LSTM, or GRU) or, for comparison, a feed-forward one. Measured on 2.13: linear 1
# graph; lstm/gru 0 graphs: Dynamo refuses the RNN module inside the loop and skips the whole frame (runs eagerly).
import torch
import torch.nn as nn
from torch._dynamo.utils import counters


class Gen(nn.Module):
    def __init__(self, core):
        super().__init__()
        self.emb, self.core, self.head = nn.Embedding(16, 8), core, nn.Linear(8, 16)

    @torch.inference_mode()
    @torch.compile(backend="eager")
    def sample(self, steps, start):
        tok, state, out = start, None, start
        for _ in range(steps):
            logits, state = self.forward(tok, state)
            tok = torch.multinomial(logits[:, -1].softmax(-1), 1)
            out = torch.cat((out, tok), dim=-1)
        return out

    def forward(self, tok, state=None):
        h = self.emb(tok)
        h, state = (self.core(h), None) if isinstance(self.core, nn.Linear) else self.core(h, state)
        return self.head(h), state


for name, core in [
    ("linear", nn.Linear(8, 8)),
    ("lstm", nn.LSTM(8, 8, batch_first=True)),
    ("gru", nn.GRU(8, 8, batch_first=True)),
]:
    torch._dynamo.reset()
    counters.clear()
    gen = Gen(core)
    for _ in range(3):
        gen.sample(6, torch.randint(0, 16, (2, 3)))
    why = sorted(
        {ln for r in counters["unimplemented"] for ln in r.splitlines() if ln.startswith(("Attempt", "graph break"))}
    )
    print(name, "graphs:", counters["stats"]["unique_graphs"], why)
