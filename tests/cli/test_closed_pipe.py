"""A reader that leaves early (``dynamo-lens explain | head``): no traceback, whatever the buffering.

The pipe's read end is closed before the command starts, so its first write fails with ``EPIPE`` every time (with
``head`` that depends on timing). ``PYTHONUNBUFFERED=1``, common in containers and CI, makes every ``print`` a
write of its own: the failure then comes from inside the command, not from the interpreter's final flush.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

DYNAMO_LENS = Path(sys.executable).parent / "dynamo-lens"


def _with_closed_stdout(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run(
            [str(DYNAMO_LENS), *args],
            cwd=cwd,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=300,
        )
    finally:
        os.close(write_end)


@pytest.mark.parametrize("args", [["explain"], ["explain", "DL101"], ["explain", "--format", "markdown"]])
def test_explain_into_a_closed_pipe_is_quiet(args: list[str], tmp_path: Path) -> None:
    result = _with_closed_stdout(args, tmp_path)
    assert "Traceback" not in result.stderr
    assert "BrokenPipeError" not in result.stderr
    assert result.returncode == 1


@pytest.mark.slow
def test_run_into_a_closed_pipe_keeps_the_scripts_exit_code(tmp_path: Path) -> None:
    (tmp_path / "fails.py").write_text("print('hello')\nraise SystemExit(3)\n", encoding="utf-8")
    result = _with_closed_stdout(["run", "fails.py"], tmp_path)
    assert "Traceback" not in result.stderr
    assert result.returncode == 3
