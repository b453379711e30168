"""`dynamo-lens run` on the oracle's torch agrees with `TORCH_LOGS=recompiles,graph_breaks` of the same torch.

By default the pinned torch; `make oracle TORCH=2.14.1` (part of `make test`) and `make oracle TORCH=2.4.1` run it
on another release: the shim reads each release's own records (the structured trace from 2.6, the `graph_breaks`
log and the recompile-reason hook before), and what it cannot read is listed in the report's `missing`.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "static"))
from oracle import ORACLE_PYTHON

SCRIPT = Path(__file__).resolve().parents[1] / "fixtures" / "runtime" / "recompiles_and_breaks.py"
DYNAMO_LENS = Path(sys.executable).parent / "dynamo-lens"
pytestmark = pytest.mark.oracle

RECOMPILING = re.compile(r"Recompiling function (?P<name>\w+) in ")


def torch_logs() -> tuple[dict[str, int], set[int]]:
    """Recompiles per function and the script's graph-break lines, as torch's own logs report them."""
    env = {**os.environ, "TORCH_LOGS": "recompiles,graph_breaks"}
    done = subprocess.run(
        [ORACLE_PYTHON, str(SCRIPT)], env=env, capture_output=True, text=True, timeout=300, check=True
    )
    recompiles: dict[str, int] = {}
    for found in RECOMPILING.finditer(done.stderr):
        recompiles[found["name"]] = recompiles.get(found["name"], 0) + 1
    logged = [line for line in done.stderr.splitlines() if "__graph_breaks" in line]
    script = re.escape(str(SCRIPT))
    # 2.6 and later: "Graph break in user code at <path>:<line>"; before: "from user code at:" and a stack
    breaks = {int(m[1]) for line in logged for m in re.finditer(rf"user code at {script}:(\d+)", line)}
    if not breaks:
        breaks = {int(m[1]) for line in logged for m in re.finditer(rf'File "{script}", line (\d+)', line)}
    return recompiles, breaks


@pytest.mark.slow
def test_run_agrees_with_torch_logs(tmp_path: Path) -> None:
    report_path = tmp_path / "report.json"
    done = subprocess.run(
        [str(DYNAMO_LENS), "run", "--python", ORACLE_PYTHON, "--report", str(report_path), str(SCRIPT)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(report_path.read_text(encoding="utf-8"))
    recompiles, breaks = torch_logs()
    assert recompiles == {"sized": 2}
    assert breaks == {14}
    ours: dict[str, int] = {}
    for recompile in report["recompiles"]:
        ours[recompile["frame"]["name"]] = ours.get(recompile["frame"]["name"], 0) + 1
    assert ours == recompiles
    assert {b["line"] for b in report["graph_breaks"] if b["path"] == str(SCRIPT)} == breaks
    assert all("graph break" not in m for m in report["missing"]), report["missing"]
    # the calls that ran each frame's compiled code, where this torch has the guard-complete hook (2.8 and later)
    calls = {frame["name"]: frame.get("compiled_calls") for frame in report["frames"]}
    if report["sources_ok"]["guard_complete_hook"]:
        assert calls == {"sized": 3, "logged": 2, "torch_dynamo_resume_in_logged_at_14": 2}
    else:
        assert set(calls.values()) == {None}
