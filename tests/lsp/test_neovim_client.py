"""Headless Neovim (its built-in LSP client, tests/lsp/neovim/client.lua) on the bundled multi-file example.

The cross-file link seen through a second, independent client: opened in examples/training_project, model.py's
``forward`` hovers with the predicted guards because train.py compiles ``TinyLM``; the same model.py without
train.py gets its diagnostics (as hints) but no hover, since nothing compiles it. Skipped where Neovim is not
installed (Debian: ``apt-get install neovim``, 0.7+).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

CLIENT = Path(__file__).parent / "neovim" / "client.lua"
PROJECT = Path(__file__).resolve().parents[2] / "examples" / "training_project"
NVIM = shutil.which("nvim")
WAIT_FOR_WORKSPACE_SCAN = """
-- Runs client.lua, but lets its requests wait until the server's workspace scan (a $/progress) has ended:
-- the scan is what finds train.py's compile site, and it runs in the background after the first diagnostics.
local request = vim.lsp.buf_request_sync
vim.lsp.buf_request_sync = function(...)
  vim.wait(30000, function()
    for _, client in pairs(vim.lsp.get_active_clients()) do
      for _, progress in pairs(client.messages.progress) do
        if progress.title and progress.title:find("scanning the workspace", 1, true) then
          return progress.done == true
        end
      end
    end
    return false
  end, 50)
  return request(...)
end
dofile(vim.env.DL_CLIENT)
"""

pytestmark = pytest.mark.skipif(NVIM is None, reason="Neovim (nvim) is not installed: apt-get install neovim")


def code_line(path: Path, statement: str) -> int:
    """The 0-based line whose code is exactly ``statement`` (docstrings may mention it too, inside other text)."""
    (line,) = [n for n, text in enumerate(path.read_text(encoding="utf-8").splitlines()) if text.strip() == statement]
    return line


def open_in_neovim(root: Path, hover_line: int, hover_character: int) -> dict[str, Any]:
    """Opens ``root/model.py`` in headless Neovim with ``dynamo-lens serve`` on ``root``; diagnostics and a hover."""
    out = root / "result.json"
    wrapper = root / "wait_for_scan.lua"
    wrapper.write_text(WAIT_FOR_WORKSPACE_SCAN, encoding="utf-8")
    env = {
        **os.environ,
        "DL_CLIENT": str(CLIENT),
        "DL_PYTHON": sys.executable,
        "DL_ROOT": str(root),
        "DL_FILE": str(root / "model.py"),
        "DL_OUT": str(out),
        "DL_HOVER_LINE": str(hover_line),
        "DL_HOVER_CHAR": str(hover_character),
    }
    assert NVIM is not None
    argv = [NVIM, "--headless", "-u", "NONE", "-i", "NONE", "-c", f"luafile {wrapper}"]
    subprocess.run(argv, env=env, cwd=root, timeout=120, check=False, capture_output=True)
    result: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    assert result["errors"] == []
    return result


def test_model_hovers_with_predicted_guards_because_train_py_compiles_it(tmp_path: Path) -> None:
    root = tmp_path / "training_project"
    shutil.copytree(PROJECT, root, ignore=shutil.ignore_patterns("__pycache__"))
    model = root / "model.py"
    forward = code_line(model, "def forward(self, tokens: torch.Tensor) -> torch.Tensor:")
    result = open_in_neovim(root, forward, len("    def "))
    assert {(d["code"], d["line"], d["col"], d["source"]) for d in result["diagnostics"]} == {
        ("DL101", code_line(model, "self.step += 1"), 8, "dynamo-lens"),
        ("DL102", code_line(model, "self.history.append(scaled.detach().amax())"), 8, "dynamo-lens"),
    }
    hover = result["hover"]
    assert hover.startswith("**Dynamo Lens** · `TinyLM.forward` · no run yet")
    counter = code_line(model, "self.step += 1") + 1
    assert f"line {counter} · **DL101**: will guard `self.step == <value>`" in hover


def test_model_without_its_compile_site_has_no_guard_hover(tmp_path: Path) -> None:
    root = tmp_path / "model_only"
    root.mkdir()
    shutil.copy(PROJECT / "model.py", root / "model.py")
    model = root / "model.py"
    forward = code_line(model, "def forward(self, tokens: torch.Tensor) -> torch.Tensor:")
    result = open_in_neovim(root, forward, len("    def "))
    assert {(d["code"], d["line"]) for d in result["diagnostics"]} == {
        ("DL101", code_line(model, "self.step += 1")),
        ("DL102", code_line(model, "self.history.append(scaled.detach().amax())")),
    }
    assert result["hover"] is None
