"""A compile-heavy training script for the run-overhead benchmark: a small transformer LM under torch.compile.

It compiles several times for realistic reasons, as training code does:

* sequence lengths change between batches (16, 32, 48, then a ragged last batch): one recompile, then the length is
  dynamic (automatic dynamic shapes);
* the model keeps its first losses in a Python list read by ``forward`` (``len(self.loss_log) < 3``): a recompile
  per length until the list is full;
* ``loss.item()`` inside the compiled step logs the loss: a graph break;
* evaluation under ``torch.no_grad()`` changes the grad mode: a recompile.

Prints one JSON line with the loop's wall and CPU time and the median step of its second half (no compiles left),
wall and CPU: ``{"loop_s", "loop_cpu_s", "steady_step_ms", "steady_step_cpu_ms", "steps"}`` (the benchmark reads it).
Environment: ``BACKEND`` (default ``eager``), ``STEPS`` (default 60).
"""

import json
import os
import time

import torch
from torch import nn

BACKEND = os.environ.get("BACKEND", "eager")
STEPS = int(os.environ.get("STEPS", "60"))
VOCAB, DIM, HEADS, LAYERS = 256, 64, 4, 2


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(DIM)
        self.attn = nn.MultiheadAttention(DIM, HEADS, batch_first=True)
        self.norm2 = nn.LayerNorm(DIM)
        self.mlp = nn.Sequential(nn.Linear(DIM, 4 * DIM), nn.GELU(), nn.Linear(4 * DIM, DIM))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.norm1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


class TinyLM(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, DIM)
        self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
        self.head = nn.Linear(DIM, VOCAB)
        self.loss_log: list[float] = []

    def forward(self, tokens: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x)
        logits = self.head(x)
        loss = nn.functional.cross_entropy(logits.reshape(-1, VOCAB), targets.reshape(-1))
        if len(self.loss_log) < 3:
            self.loss_log.append(loss.item())
        return loss


def batch(step: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    seq = (16, 32, 48)[step % 3] if step < STEPS - 1 else 40
    tokens = torch.randint(0, VOCAB, (8, seq + 1), generator=generator)
    return tokens[:, :-1], tokens[:, 1:]


def main() -> None:
    torch.manual_seed(0)
    generator = torch.Generator().manual_seed(0)
    model = TinyLM()
    step_fn = torch.compile(model, backend=BACKEND)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    durations = []
    cpu_durations = []
    started, started_cpu = time.perf_counter(), time.process_time()
    for step in range(STEPS):
        tick, tick_cpu = time.perf_counter(), time.process_time()
        tokens, targets = batch(step, generator)
        optimizer.zero_grad()
        loss = step_fn(tokens, targets)
        loss.backward()
        optimizer.step()
        if step % 20 == 19:
            model.eval()
            with torch.no_grad():
                step_fn(*batch(step, generator))
            model.train()
        durations.append(time.perf_counter() - tick)
        cpu_durations.append(time.process_time() - tick_cpu)
    figures = {
        "loop_s": time.perf_counter() - started,
        "loop_cpu_s": time.process_time() - started_cpu,
        "steady_step_ms": 1000 * median(durations[STEPS // 2 :]),
        "steady_step_cpu_ms": 1000 * median(cpu_durations[STEPS // 2 :]),
        "steps": STEPS,
    }
    print(json.dumps(figures))


def median(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


if __name__ == "__main__":
    main()
