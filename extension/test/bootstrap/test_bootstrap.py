"""The extension's bootstrap: bundled folders first on the server's path, PYTHONPATH kept out of the server only.

Run with ``.venv/bin/pytest extension/test/bootstrap`` (``make test-extension``).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

BOOTSTRAP = Path(__file__).resolve().parents[2] / "bootstrap" / "bootstrap.py"


def load_bootstrap() -> ModuleType:
    spec = importlib.util.spec_from_file_location("dynamo_lens_bootstrap", BOOTSTRAP)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bootstrap = load_bootstrap()


def test_bundled_folders_follow_path0_and_pythonpath_entries_leave() -> None:
    path = ["/ext/bootstrap", "/user/src", "/user/rel", "/usr/lib/python3.11", "/venv/site-packages"]
    environ = {"PYTHONPATH": os.pathsep.join(["/user/src", "/user/rel", ""])}
    first = ["/ext/bundled/server", "/ext/bundled/libs"]
    assert bootstrap.server_sys_path(path, environ, first) == [
        "/ext/bootstrap",
        "/ext/bundled/server",
        "/ext/bundled/libs",
        "/usr/lib/python3.11",
        "/venv/site-packages",
    ]


def test_relative_pythonpath_entries_are_matched_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    path = ["/ext/bootstrap", str(tmp_path / "src"), "/venv/site-packages"]
    assert bootstrap.server_sys_path(path, {"PYTHONPATH": "src"}, ["/b"]) == [
        "/ext/bootstrap",
        "/b",
        "/venv/site-packages",
    ]


def test_no_pythonpath_and_no_duplicates() -> None:
    path = ["/ext/bootstrap", "/b", "/venv/site-packages"]
    assert bootstrap.server_sys_path(path, {}, ["/b"]) == ["/ext/bootstrap", "/b", "/venv/site-packages"]


def test_bundle_is_preferred_and_a_checkout_is_the_fallback(tmp_path: Path) -> None:
    assert bootstrap.server_paths(str(tmp_path / "bundled"), "/repo/server") == ["/repo/server"]
    (tmp_path / "bundled" / "server" / "dynamo_lens").mkdir(parents=True)
    assert bootstrap.server_paths(str(tmp_path / "bundled"), "/repo/server") == [
        str(tmp_path / "bundled" / "server"),
        str(tmp_path / "bundled" / "libs"),
    ]


def _initialize(process: subprocess.Popen[bytes]) -> dict[str, object]:
    assert process.stdin is not None and process.stdout is not None
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"processId": None, "rootUri": None, "capabilities": {}},
        }
    ).encode()
    process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    process.stdin.flush()
    length = 0
    while (line := process.stdout.readline().strip()) != b"":
        name, _, value = line.partition(b":")
        if name.lower() == b"content-length":
            length = int(value)
    answer: dict[str, object] = json.loads(process.stdout.read(length))
    return answer


def test_a_shadowing_pythonpath_cannot_break_the_server_and_stays_in_its_environment(tmp_path: Path) -> None:
    shadow = tmp_path / "shadow"
    (shadow / "dynamo_lens").mkdir(parents=True)
    (shadow / "dynamo_lens" / "__init__.py").write_text("raise SystemExit('the user PYTHONPATH shadowed the server')\n")
    (shadow / "pygls").mkdir()
    (shadow / "pygls" / "__init__.py").write_text("raise SystemExit('the user PYTHONPATH shadowed pygls')\n")
    env = {**os.environ, "PYTHONPATH": str(shadow)}
    process = subprocess.Popen(
        [sys.executable, str(BOOTSTRAP)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    try:
        answer = _initialize(process)
    finally:
        process.kill()
        _, stderr = process.communicate(timeout=10)
    result = answer.get("result")
    assert isinstance(result, dict), stderr.decode()
    assert result["serverInfo"] == {"name": "dynamo-lens", "version": "0.1.0"}


def test_the_server_process_keeps_the_users_environment_for_its_runs(tmp_path: Path) -> None:
    """What the runner copies into the instrumented run (os.environ) names no bundled folder."""
    bundled = tmp_path / "bundled"
    (bundled / "server" / "dynamo_lens").mkdir(parents=True)
    script = (
        "import os, sys, runpy; "
        f"mod = runpy.run_path({str(BOOTSTRAP)!r}, run_name='not_main'); "
        f"sys.path[:] = mod['server_sys_path'](sys.path, os.environ, mod['server_paths']({str(bundled)!r})); "
        "print(os.environ.get('PYTHONPATH')); print(any('bundled' in v for v in os.environ.values())); "
        f"print(sys.path[1] == {str(bundled / 'server')!r})"
    )
    env = {**os.environ, "PYTHONPATH": "/user/src"}
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True).stdout
    assert out.split() == ["/user/src", "False", "True"]
