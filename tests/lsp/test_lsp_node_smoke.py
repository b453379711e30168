"""One smoke test from Node with ``vscode-jsonrpc`` (VS Code's own transport): diagnostics and a hover arrive, the
server exits cleanly, and its stdout holds nothing but LSP messages (pygls' client would tolerate a stray line)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from lsp_samples import COUNTER_LINE, RECOMPILING

NODE_DIR = Path(__file__).parent / "node"


@pytest.fixture(scope="module")
def node() -> str:
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("SKIPPED LOUDLY: node/npm not installed; the vscode-jsonrpc smoke test cannot run")
    if not (NODE_DIR / "node_modules" / "vscode-jsonrpc").is_dir():
        # `make test` runs `npm ci` here first; this keeps a plain `pytest` on a fresh clone working too.
        subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=NODE_DIR, check=True, capture_output=True)
    return node


def test_vscode_jsonrpc_client_gets_diagnostics_and_hover(node: str, tmp_path: Path) -> None:
    path = tmp_path / "model.py"
    path.write_text(RECOMPILING, encoding="utf-8")
    done = subprocess.run(
        [node, str(NODE_DIR / "smoke.js"), sys.executable, str(tmp_path), str(path), str(COUNTER_LINE)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["protocolErrors"] == []
    assert {"code": "DL101", "line": COUNTER_LINE, "source": "dynamo-lens"} in seen["diagnostics"]
    assert seen["hover"].startswith("**Dynamo Lens** · `Counter`")
    assert seen["shutdown"] and seen["ok"], seen["why"]
    assert done.returncode == 0
