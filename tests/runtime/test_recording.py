"""``dynamo_lens.record()`` for real: a block of a running program under ``torch.compile(backend="eager")``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).resolve().parent.parent / "fixtures" / "runtime" / "recorded_blocks.py"


def counter_line() -> int:
    lines = SCRIPT.read_text(encoding="utf-8").splitlines()
    return next(number for number, text in enumerate(lines, start=1) if text.endswith("# @counter"))


def test_a_block_is_recorded_then_torch_is_left_as_it_was() -> None:
    """A counter compiled before the block recompiles 4 times inside it: DL501 at the counter; a block that raises
    is reported as ended by that exception, which goes on; afterwards torch has its own ``optimize``, ``reset``
    and trace handlers back, and nothing imported pygls."""
    done = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen == {
        "recompiles": 4,
        "ended_by": ["returned", "exception"],
        "error": "the block's own error",
        "propagated": "the block's own error",
        "findings": [["DL501", counter_line()]],
        "restored": True,
        "pygls": False,
    }
