"""The shim's command line in cases that never import torch (fast): bad usage, a missing script, no torch."""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path

from dynamo_lens.runtime import shim
from dynamo_lens.runtime.report import events_path, load_partial_report, load_report

SHIM = str(Path(shim.__file__).resolve())


def _run(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("TORCH_", "DYNAMO_LENS"))}
    return subprocess.run(
        [sys.executable, SHIM, *args], cwd=cwd, env={**clean, **env}, capture_output=True, text=True, timeout=60
    )


def test_usage_errors_exit_2_without_running_anything(tmp_path: Path) -> None:
    done = _run(tmp_path, "--report", "r.json")
    assert done.returncode == 2 and "usage: shim.py --report OUT.json" in done.stderr
    assert not (tmp_path / "r.json").exists()


def test_a_missing_script_fails_like_python_and_still_reports(tmp_path: Path) -> None:
    done = _run(tmp_path, "--report", "r.json", "--", "absent.py", "--flag")
    assert done.returncode == 2
    assert f"can't open file '{tmp_path / 'absent.py'}'" in done.stderr
    report = load_report(tmp_path / "r.json")
    assert report.error is not None and report.error.type == "FileNotFoundError"
    assert (report.exit_code, report.argv) == (2, ("absent.py", "--flag"))


def test_a_missing_module_fails_like_python_and_still_reports(tmp_path: Path) -> None:
    done = _run(tmp_path, "--report", "r.json", "--", "-m", "no_such_module_here")
    assert (done.returncode, done.stderr) == (1, f"{sys.executable}: No module named no_such_module_here\n")
    report = load_report(tmp_path / "r.json")
    assert report.error is not None and report.error.type == "ModuleNotFoundError"
    assert (report.exit_code, report.argv) == (1, ("-m", "no_such_module_here"))
    # the module is what is missing, not torch: the report still says which torch is there
    assert report.torch_version == importlib.metadata.version("torch")


def test_a_python_without_torch_still_runs_the_script(tmp_path: Path) -> None:
    fake = tmp_path / "fake" / "torch"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('no torch here')\n", encoding="utf-8")
    (tmp_path / "plain.py").write_text("import sys\nprint('plain', sys.argv[1:])\nsys.exit(4)\n", encoding="utf-8")
    done = _run(tmp_path, "--report", "r.json", "--", "plain.py", "x", PYTHONPATH=str(tmp_path / "fake"))
    assert (done.returncode, done.stdout) == (4, "plain ['x']\n")
    report = load_report(tmp_path / "r.json")
    assert (report.torch_version, report.frames, report.exit_code) == (None, (), 4)
    assert report.missing == ("torch could not be imported in this interpreter (ImportError: no torch here)",)


def test_rebuild_writes_the_report_from_the_event_stream(tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    start = {"ev": "start", "epoch": 0, "python": "3.11.7", "argv": ["t.py"], "sources_ok": {"trace": True}}
    events_path(report).write_text(json.dumps(start) + "\n", encoding="utf-8")
    done = _run(tmp_path, "--rebuild", str(report))
    assert done.returncode == 0, done.stderr
    rebuilt = load_report(report)
    assert rebuilt == load_partial_report(report)
    assert (rebuilt.complete, rebuilt.argv, rebuilt.sources_ok) == (False, ("t.py",), {"trace": True})
