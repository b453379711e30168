"""Imitates GPT2RewardModel: a compiled module whose forward runs a backbone and then a helper that loops over the
batch, finds the first pad position with nonzero() and picks that step's score."""

import torch
import torch._dynamo.utils as du


class RewardModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(10, 8)
        self.head = torch.nn.Linear(8, 1)
        self.pad_id = 0

    def forward(self, ids):
        rewards = self.head(self.emb(ids)).squeeze(-1)
        return rewards, self._end_scores(rewards, ids)

    def _end_scores(self, rewards, ids):
        out = []
        for i in range(ids.shape[0]):
            pads = (ids[i] == self.pad_id).nonzero()
            first = pads[0].item() if len(pads) > 0 else ids.shape[1]
            out.append(rewards[i, first - 1])
        return torch.stack(out)


model = torch.compile(RewardModel(), backend="eager")
ids = torch.randint(1, 10, (3, 6))
ids[:, 4:] = 0
for _ in range(3):
    model(ids)
print("unique_graphs", du.counters["stats"]["unique_graphs"])
print("graph_breaks", dict(du.counters["graph_break"]))
