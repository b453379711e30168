"""Source texts the language-server tests open (0-based line numbers, as LSP counts them)."""

from __future__ import annotations

RECOMPILING = """\
import torch


class Counter(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.steps = 0

    def forward(self, x):
        self.steps += 1
        return x * self.steps


model = torch.compile(Counter(), backend="eager")

if __name__ == "__main__":
    for _ in range(12):
        model(torch.ones(2))
"""
CLASS_LINE = 3
INIT_ATTR_LINE = 6
FORWARD_LINE = 8
COUNTER_LINE = 9  # `self.steps += 1`: DL101
COMPILE_LINE = 13
MAIN_LINE = 15

TEST_FILE = """\
import torch


def test_plain():
    assert torch.compile(lambda x: x + 1, backend="eager")(torch.ones(1)).item() == 2


class TestGroup:
    def test_method(self):
        pass

    def helper(self):
        pass
"""

SLEEPER = """\
import time

import torch

print("sleeping", flush=True)
time.sleep(120)
"""

CRASHER = """\
import torch


@torch.compile(backend="eager")
def double(x):
    return x * 2


double(torch.ones(2))
raise RuntimeError("boom from the user's script")
"""

# The same module after the "Keep the counter in a tensor buffer" fix: compiles once.
FIXED = RECOMPILING.replace(
    "self.steps = 0", 'self.register_buffer("steps", torch.zeros((), dtype=torch.long))'
).replace("self.steps += 1", "self.steps.add_(1)")

# RECOMPILING that waits at the start, so that a test can edit or start a second run while it is going.
SLOW_RECOMPILING = RECOMPILING.replace("import torch\n", "import time\n\nimport torch\n\ntime.sleep(4)\n", 1)
SLOW_SHIFT = 4  # lines SLOW_RECOMPILING adds above the class

SHAPES = """\
import torch


class Scale(torch.nn.Module):
    def forward(self, x):
        return (x * 2).sum()


model = torch.compile(Scale(), backend="eager", dynamic=False)
for n in range(2, 12):
    batch = torch.randn(n, 3)
    model(batch)
"""
SHAPES_CALL_LINE = 11  # `model(batch)`: DL501 (a size recompile), with the mark_dynamic fix

LOOP_BREAK = """\
import torch


def body(x):
    for i in range(3):
        print("step", i)
        x = x + 1
    return x


compiled = torch.compile(body, backend="eager")
for _ in range(4):
    compiled(torch.ones(2))
"""
LOOP_BREAK_COMPILE_LINE = 10  # Dynamo gives up on `body` (a graph break inside its loop): it runs eagerly
