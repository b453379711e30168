"""torchchat idiom: a module-level `logger` that is a no-op object (its __getattr__ returns a
do-nothing method) unless an env var is set; a fullgraph-compiled decode step calls logger.debug."""

import logging

import torch
import torch._dynamo.utils


class QuietLogger:
    """Every attribute lookup yields a method that ignores its arguments."""

    def _ignore(self, *args, **kwargs):
        return None

    def __getattr__(self, attr):
        return self._ignore


class Gen:
    def sample(self, logits):
        logits = logits[0, -1]
        logger.debug("Logits: %s", logits)
        return torch.topk(logits, k=1, dim=-1)[1]

    def decode_one_token(self, x):
        return self.sample(x.view(1, 1, -1) * 2)


for name, chosen in [("no-op logger object", QuietLogger()), ("logging.Logger", logging.getLogger("x"))]:
    logger = chosen  # the module-level name that sample() looks up
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    g = Gen()
    step = torch.compile(g.decode_one_token, backend="eager", fullgraph=True)
    try:
        for _ in range(3):
            step(torch.randn(8))
        outcome = "ok"
    except Exception as e:  # fullgraph turns a graph break into an error
        outcome = f"error {type(e).__name__}"
    graphs = torch._dynamo.utils.counters["stats"]["unique_graphs"]
    print(f"{name}: {outcome}, unique_graphs={graphs}")
