"""Python sources for the property tests to cut up and edit: every static fixture, and real modules of the
installed torch (located, never imported)."""

from __future__ import annotations

import importlib.util
import random
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "static"
FIXTURE_TEXTS = [p.read_text(encoding="utf-8") for p in sorted(FIXTURES.rglob("*.py"))]
TORCH_SPEC = importlib.util.find_spec("torch")  # located, never imported: real-world sources to cut up
assert TORCH_SPEC is not None and TORCH_SPEC.origin is not None
TORCH_ROOT = Path(TORCH_SPEC.origin).parent
TORCH_TEXTS = [
    (TORCH_ROOT / name).read_text(encoding="utf-8")
    for name in (
        "nn/modules/linear.py",
        "nn/modules/module.py",
        "_dynamo/eval_frame.py",
        "_dynamo/guards.py",
        "optim/adam.py",
        "nn/functional.py",
    )
]
CORPUS = FIXTURE_TEXTS + TORCH_TEXTS

TOKENS = (
    "import torch", "import torch as T", "from torch import compile as tc", "from torch import nn", "@torch.compile",
    "@torch.compile(backend='eager')", "torch.compile(", "model.compile()", "torch._dynamo.optimize('eager')(",
    "functools.partial(torch.compile,", "def", "class", "nn.Module", "self", "forward", "global", "nonlocal",
    "lambda", "async", "await", "yield", "return", "if", "elif", "else", "while", "for", "in", "range(", "not",
    "and", "or", "is", "None", "print(", "x.item()", ".tolist()", "logging.info(", "logger.debug(", "y.sum()", ">",
    "+=", "=", "==", ":", ",", "(", ")", "[", "]", "{", "}", "*", "**", ".", "x", "y", "SCALE", "scale", "0", "1.5",
    "'s'", 'f"{x}"', "\n", "\n    ", "\n        ", "\t", " ", "#", "# DL204", "\\", "match", "case", "try:",
    "except", "finally:", "with", "as", "del", "@", "->", ";", "...", "\r\n", "\x0c", "é", "\U0001d518", "\ufeff",
)  # fmt: skip


def edit_a_line(lines: list[str], rng: random.Random) -> None:
    """One half-typed edit of a random line of ``lines`` (not empty), in place: the line deleted, another one
    copied above it, the line re-indented, or a token typed into it."""
    i = rng.randrange(len(lines))
    action = rng.randrange(4)
    if action == 0:
        del lines[i]
    elif action == 1:
        lines.insert(i, lines[rng.randrange(len(lines))])
    elif action == 2:
        lines[i] = " " * rng.randrange(9) + lines[i].lstrip()
    else:
        cut = rng.randrange(len(lines[i]) + 1)
        lines[i] = lines[i][:cut] + rng.choice(TOKENS) + lines[i][cut:]
