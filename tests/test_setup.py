"""Set-up on a fresh machine: `make test` right after `make demo` reuses the .vsix (a changed source builds it again),
and the long silent steps say that they still run.

The Makefile is exercised by dry runs (``make -n``) in a copy of the files it reads, with the install stamps and the
.vsix made newer than every source, as after a ``make demo``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE_STEP = "npm run package"


def _tracked_files() -> list[str]:
    listed = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True)
    return [line for line in listed.stdout.splitlines() if not line.startswith(("tests/", "benchmarks/", "examples/"))]


@pytest.fixture
def built(tmp_path: Path) -> Path:
    if shutil.which("make") is None or shutil.which("git") is None:
        pytest.skip("needs make and git")
    for name in _tracked_files():
        target = tmp_path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, target)
    later = time.time() + 60
    version = json.loads((REPO / "package.json").read_text(encoding="utf-8"))["version"]
    for made in (".venv/.installed", "node_modules/.package-lock.json", f"dynamo-lens-{version}.vsix"):
        path = tmp_path / made
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()
        os.utime(path, (later, later))
    return tmp_path


def _dry_run(root: Path, target: str) -> str:
    done = subprocess.run(["make", "-n", target], cwd=root, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_an_up_to_date_vsix_is_not_built_again(built: Path) -> None:
    assert PACKAGE_STEP not in _dry_run(built, "extension")
    assert PACKAGE_STEP not in _dry_run(built, "test-extension")


@pytest.mark.parametrize(
    "changed", ["server/dynamo_lens/cli/__init__.py", "extension/src/status.ts", "package.json", "README.md"]
)
def test_a_changed_source_builds_the_vsix_again(built: Path, changed: str) -> None:
    much_later = time.time() + 120
    os.utime(built / changed, (much_later, much_later))
    assert PACKAGE_STEP in _dry_run(built, "extension")


INSTALL_CODE_SERVER = REPO / "extension" / "scripts" / "install-code-server.sh"


@pytest.mark.parametrize(("command", "status"), [("sleep 2.5", 0), ("sh -c 'sleep 1.5; exit 3'", 3)])
def test_a_long_install_step_says_it_still_runs(command: str, status: int) -> None:
    """code-server's postinstall prints "Installing Code dependencies..." and then nothing for minutes."""
    script = f'source "{INSTALL_CODE_SERVER}"; with_heartbeat "installing it" {command} || exit $?'
    done = subprocess.run(
        ["bash", "-c", script], env={**os.environ, "HEARTBEAT_SECONDS": "1"}, capture_output=True, text=True, timeout=30
    )
    assert done.returncode == status
    assert "[install-code-server] still installing it (1 s)" in done.stderr.splitlines()
    assert done.stdout == ""  # sourcing the script installs nothing


def test_the_oracle_of_another_torch_pins_it_and_runs_the_probes_there(built: Path) -> None:
    """`make oracle TORCH=X` installs exactly that torch (never an unpinned multi-GB wheel) in its own environment
    and points the oracle tests' probes at it."""
    home = built / "home"  # no environment made yet
    commands = _dry_run_with(built, home, "oracle", "TORCH=2.14.1")
    env = f"{home}/.cache/dynamo-lens/envs/torch-2.14.1"
    assert (
        f"{env}/bin/python -m pip install --disable-pip-version-check --progress-bar on torch==2.14.1 numpy" in commands
    )
    assert f"DYNAMO_LENS_ORACLE_PYTHON={env}/bin/python .venv/bin/pytest -m 'oracle and slow' -q" in commands


def test_make_test_runs_the_oracle_on_the_newest_torch_too(built: Path) -> None:
    commands = _dry_run_with(built, built / "home", "oracle-newest")
    assert "oracle TORCH=2.14.1" in commands


def _dry_run_with(root: Path, home: Path, target: str, *assignments: str) -> str:
    done = subprocess.run(
        ["make", "-n", target, *assignments],
        cwd=root,
        env={**os.environ, "HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout
