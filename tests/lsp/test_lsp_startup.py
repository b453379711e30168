"""Startup: the server answers ``initialize`` without importing torch, and stdout carries nothing but LSP frames.

This test speaks the wire format by hand (no client library) so that whatever the server writes to stdout is seen
byte for byte, and runs the server under ``-X importtime`` so every module it imports is listed on stderr.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from pygls.uris import from_fs_path


def frame(message: dict[str, Any]) -> bytes:
    body = json.dumps(message).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def read_frames(stdout: bytes) -> list[dict[str, Any]]:
    """Split stdout into LSP messages; fails on anything that is not a well-formed frame."""
    messages = []
    rest = stdout
    while rest:
        header, separator, rest = rest.partition(b"\r\n\r\n")
        assert separator, f"stdout has bytes outside an LSP frame: {header[:200]!r}"
        fields = dict(line.split(b": ", 1) for line in header.split(b"\r\n"))
        length = int(fields[b"Content-Length"])
        body, rest = rest[:length], rest[length:]
        messages.append(json.loads(body))
    return messages


def serve(messages: list[dict[str, Any]]) -> tuple[dict[int, dict[str, Any]], list[str]]:
    """Run ``dynamo-lens serve`` on ``messages`` under ``-X importtime``: its replies by id, and the modules it
    imported, in order."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "dynamo_lens", "serve"],
        input=b"".join(frame(m) for m in messages),
        capture_output=True,
        timeout=60,
        check=False,
    )
    replies = {m["id"]: m for m in read_frames(done.stdout) if "id" in m and "method" not in m}
    imported = [line.rsplit("|", 1)[-1].strip() for line in done.stderr.decode().splitlines() if "import time:" in line]
    return replies, imported


def test_initialize_without_torch_and_only_protocol_on_stdout(tmp_path: Path) -> None:
    source = tmp_path / "model.py"
    source.write_text("import torch\n\nclass M(torch.nn.Module):\n    def forward(self, x):\n        return x\n")
    root_uri = from_fs_path(str(tmp_path))
    doc_uri = from_fs_path(str(source))
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"processId": None, "rootUri": root_uri,
                                                                       "capabilities": {}}},
        {"jsonrpc": "2.0", "method": "initialized", "params": {}},
        {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": doc_uri, "languageId": "python", "version": 1, "text": source.read_text()}}},
        {"jsonrpc": "2.0", "id": 2, "method": "textDocument/hover", "params": {
            "textDocument": {"uri": doc_uri}, "position": {"line": 3, "character": 8}}},
        {"jsonrpc": "2.0", "id": 3, "method": "shutdown", "params": None},
        {"jsonrpc": "2.0", "method": "exit", "params": None},
    ]  # fmt: skip
    replies, imported = serve(messages)
    assert replies[1]["result"]["serverInfo"]["name"] == "dynamo-lens"
    assert "error" not in replies[2] and "error" not in replies[3]
    assert "dynamo_lens.lsp.server" in imported
    assert not [name for name in imported if name.split(".")[0] == "torch"]


def test_initialize_is_answered_before_the_analyzer_loads(tmp_path: Path) -> None:
    """What ``initialize`` waits for is what the editor waits for: the analyzer, the cache and the run machinery
    (with ``importlib.metadata``) load on the first document or run, not before the answer (measured by
    ``benchmarks/lsp_latency.py --start-only``: 184 ms over a bare pygls server with them, 77-86 ms without)."""
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"processId": None,
                                                                       "rootUri": from_fs_path(str(tmp_path)),
                                                                       "capabilities": {}}},
        {"jsonrpc": "2.0", "id": 2, "method": "shutdown", "params": None},
        {"jsonrpc": "2.0", "method": "exit", "params": None},
    ]  # fmt: skip
    replies, imported = serve(messages)
    assert replies[1]["result"]["serverInfo"]["name"] == "dynamo-lens"
    heavy = ("dynamo_lens.static", "dynamo_lens.cache", "dynamo_lens.runtime", "dynamo_lens.scan", "importlib.metadata")
    assert [name for name in imported if name.startswith(heavy)] == []
