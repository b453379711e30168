"""``%load_ext dynamo_lens`` in a real ipykernel, driven by nbclient as Jupyter runs a notebook."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import nbformat
import pytest
from nbclient import NotebookClient

from dynamo_lens.runtime import shim

pytestmark = pytest.mark.slow

SCHEMA = json.loads((Path(shim.__file__).parent / "run_report.schema.json").read_text(encoding="utf-8"))

MODULE = """\
import torch
from torch import nn


class Counter(nn.Module):
    def __init__(self):
        super().__init__()
        self.steps = 0

    def forward(self, x):
        self.steps += 1
        return x * self.steps
"""
COUNTER_LINE = 11
"""The line of `self.steps += 1` in its cell."""
RUN = 'model = torch.compile(Counter(), backend="eager")\nfor _ in range(4):\n    model(torch.ones(2))\n'


def run_notebook(directory: Path, *sources: str) -> list[str]:
    """Runs the cells in a fresh kernel started in ``directory``; each cell's standard output."""
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in sources])
    NotebookClient(
        notebook, timeout=240, kernel_name="python3", resources={"metadata": {"path": str(directory)}}
    ).execute()
    return ["".join(o.get("text", "") for o in cell.outputs if o.get("name") == "stdout") for cell in notebook.cells]


def test_recompiles_are_attributed_to_the_run_of_the_cell_and_its_line(tmp_path: Path) -> None:
    outputs = run_notebook(
        tmp_path, "%load_ext dynamo_lens", MODULE, RUN, "%dynamo_lens --json", "%dynamo_lens", "%unload_ext dynamo_lens"
    )
    assert outputs[0].startswith("dynamo-lens: recording")
    report = json.loads(outputs[3])
    jsonschema.validate(report, SCHEMA)
    assert report["summary"]["recompiles"] == 3
    recompiled = [f for f in report["findings"] if f["code"] == "DL501"]
    assert [(f["line"], f["cell"]["execution_count"]) for f in recompiled] == [(COUNTER_LINE, 2)]
    forward = next(frame for frame in report["frames"] if frame["name"] == "forward")
    assert forward["cell"] == {"index": None, "execution_count": 2, "id": None}
    assert f"In [2]:{COUNTER_LINE}:9: DL501 recompiled 3\N{MULTIPLICATION SIGN}" in outputs[4]
    assert "forward  In [2]:10" in outputs[4]
    assert outputs[5].startswith("dynamo-lens: stopped recording; report in")
    assert report["complete"] and not report["missing"]  # a live report is no killed run
    (written,) = (tmp_path / ".dynamo-lens").glob("kernel-*.json")
    assert json.loads(written.read_text(encoding="utf-8"))["summary"]["recompiles"] == 3
