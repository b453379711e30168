"""A second, independent client: headless Neovim's built-in LSP client gets the diagnostics and a hover.

Skipped (loudly) where Neovim is not installed (Debian: ``apt-get install neovim``); the pytest-lsp tests and the
vscode-jsonrpc smoke test cover the same ground with the other two clients.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from lsp_samples import CLASS_LINE, COUNTER_LINE, RECOMPILING

CLIENT = Path(__file__).parent / "neovim" / "client.lua"


def test_neovim_gets_diagnostics_and_hover(tmp_path: Path) -> None:
    nvim = shutil.which("nvim")
    if nvim is None:
        pytest.skip("SKIPPED LOUDLY: nvim not installed; the Neovim client test cannot run")
    path = tmp_path / "model.py"
    path.write_text(RECOMPILING, encoding="utf-8")
    out = tmp_path / "result.json"
    env = {
        **os.environ,
        "DL_PYTHON": sys.executable,
        "DL_ROOT": str(tmp_path),
        "DL_FILE": str(path),
        "DL_OUT": str(out),
        "DL_HOVER_LINE": str(CLASS_LINE),
        "DL_HOVER_CHAR": "7",
    }
    subprocess.run(
        [nvim, "--headless", "-u", "NONE", "-i", "NONE", "-c", f"luafile {CLIENT}"],
        env=env,
        cwd=tmp_path,
        timeout=120,
        check=False,
        capture_output=True,
    )
    result = json.loads(out.read_text())
    assert result["errors"] == []
    assert {"code": "DL101", "line": COUNTER_LINE, "col": 8, "source": "dynamo-lens"} in result["diagnostics"]
    assert result["hover"].startswith("**Dynamo Lens** · `Counter` · no run yet")
