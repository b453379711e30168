"""The runner's process handling, with plain Python scripts.

These run the real shim, but with an interpreter that has no torch (a bare virtual environment), so each run costs
a Python start-up, not a torch import: the shim then runs the script exactly like ``python`` and writes a report
that says torch is missing. Runs that need torch are in ``test_attribution.py`` and the CLI tests.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from dynamo_lens.runtime.runner import RunOutcome, Target, child_environment, run, torch_of
from dynamo_lens.torch_facts import PINNED, TorchTarget


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory: pytest.TempPathFactory) -> str:
    """An interpreter without torch or anything else installed."""
    home = tmp_path_factory.mktemp("bare-venv")
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--without-pip", str(home)], check=True)
    return str(home / "bin" / "python")


class Captured:
    def __init__(self) -> None:
        self.out = bytearray()
        self.err = bytearray()

    def on_out(self, chunk: bytes) -> None:
        self.out += chunk

    def on_err(self, chunk: bytes) -> None:
        self.err += chunk


def _run(tmp_path: Path, python: str, source: str, *args: str, **options: object) -> tuple[RunOutcome, Captured]:
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(source))
    captured = Captured()
    outcome = run(
        Target(script=script.name, args=args),
        report_path=tmp_path / "out" / "report.json",
        python=python,
        cwd=tmp_path,
        on_stdout=captured.on_out,
        on_stderr=captured.on_err,
        **options,  # type: ignore[arg-type]
    )
    return outcome, captured


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] == "Z")


def _wait_for(predicate: Callable[[], bool], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def test_script_runs_like_python_with_argv_main_and_path(tmp_path: Path, bare_python: str) -> None:
    outcome, captured = _run(
        tmp_path,
        bare_python,
        """\
        import os, sys
        print(sys.argv, __name__, sys.path[0] == os.path.dirname(os.path.abspath(__file__)), os.getcwd())
        """,
        "--flag",
        "value with space",
    )
    assert outcome.exit_code == 0 and not outcome.timed_out and not outcome.cancelled
    assert captured.out.decode().strip() == f"['script.py', '--flag', 'value with space'] __main__ True {tmp_path}"
    assert outcome.report is not None and outcome.report.argv == ("script.py", "--flag", "value with space")


def test_torch_missing_is_explained_and_the_script_still_runs(tmp_path: Path, bare_python: str) -> None:
    outcome, captured = _run(tmp_path, bare_python, "print('ran')\n")
    assert captured.out == b"ran\n"
    assert outcome.report is not None and outcome.report.torch_version is None
    assert outcome.error is not None and f"torch is not importable in {bare_python}" in outcome.error
    assert any("torch could not be imported" in note for note in outcome.notes)
    assert outcome.report_path == tmp_path / "out" / "report.json" and outcome.report_path.is_file()


def test_script_not_found_never_starts(tmp_path: Path) -> None:
    started: list[bool] = []
    outcome = run(
        Target(script="nope.py"), report_path=tmp_path / "r.json", cwd=tmp_path, on_started=lambda: started.append(True)
    )
    assert outcome.exit_code is None and outcome.report is None and started == []
    assert outcome.error == f"script not found: nope.py (looked in {tmp_path})"


def test_on_started_is_called_once_while_the_script_runs(tmp_path: Path, bare_python: str) -> None:
    # The script waits for the file the callback writes: the callback must run while the child is alive.
    release = tmp_path / "release"
    seen: list[bool] = []

    def on_started() -> None:
        seen.append(True)
        release.write_text("go")

    source = f"""
        import os, time
        while not os.path.exists({str(release)!r}):
            time.sleep(0.01)
        print("released")
    """
    outcome, captured = _run(tmp_path, bare_python, source, timeout_s=30.0, on_started=on_started)
    assert (outcome.exit_code, captured.out, seen) == (0, b"released\n", [True]), outcome.error


def test_an_on_started_that_raises_stops_the_script_before_the_error_goes_up(tmp_path: Path, bare_python: str) -> None:
    alive = tmp_path / "alive"

    def on_started() -> None:
        deadline = time.monotonic() + 30
        while not alive.exists() and time.monotonic() < deadline:  # the script is running
            time.sleep(0.01)
        raise RuntimeError("caller failed")

    source = f"""
        import os, pathlib, time
        pathlib.Path({str(alive)!r}).write_text(str(os.getpid()))
        while True:
            print("x" * 1000, flush=True)
    """
    with pytest.raises(RuntimeError, match="caller failed"):
        _run(tmp_path, bare_python, source, timeout_s=60.0, on_started=on_started)
    pid = int(alive.read_text())
    assert not Path(f"/proc/{pid}").exists() or Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"


def test_a_relative_interpreter_path_is_relative_to_the_caller(
    tmp_path: Path, bare_python: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(Path(bare_python).parent.parent)
    (tmp_path / "s.py").write_text("print('ok')\n")
    captured = Captured()
    outcome = run(
        Target(script="s.py"),
        report_path=tmp_path / "r.json",
        python=os.path.join("bin", "python"),
        cwd=tmp_path,
        on_stdout=captured.on_out,
        on_stderr=captured.on_err,
    )
    assert (outcome.exit_code, captured.out) == (0, b"ok\n"), outcome.error


def test_missing_interpreter_is_named(tmp_path: Path) -> None:
    (tmp_path / "s.py").write_text("pass\n")
    missing = str(tmp_path / "no" / "python")
    outcome = run(Target(script="s.py"), report_path=tmp_path / "r.json", cwd=tmp_path, python=missing)
    assert outcome.exit_code is None
    assert outcome.error == f"Python interpreter not found or not executable: {missing}"


def test_a_directory_without_main_is_not_a_script(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    outcome = run(Target(script="pkg"), report_path=tmp_path / "r.json", cwd=tmp_path)
    assert outcome.exit_code is None
    assert outcome.error == "pkg is a directory without __main__.py, not a Python script"


def test_a_file_that_is_not_python_fails_like_python_does(tmp_path: Path, bare_python: str) -> None:
    (tmp_path / "data.bin").write_bytes(b"\x00\x01\x02binary\xff")
    captured = Captured()
    outcome = run(
        Target(script="data.bin"),
        report_path=tmp_path / "r.json",
        python=bare_python,
        cwd=tmp_path,
        on_stdout=captured.on_out,
        on_stderr=captured.on_err,
    )
    assert outcome.exit_code == 1
    assert b"SyntaxError" in captured.err and b"null bytes" in captured.err


def test_syntax_error_passes_the_traceback_and_exit_code_through(tmp_path: Path, bare_python: str) -> None:
    outcome, captured = _run(tmp_path, bare_python, "def broken(:\n    pass\n")
    assert outcome.exit_code == 1
    assert b"SyntaxError" in captured.err
    assert outcome.report is not None and outcome.report.error is not None
    assert outcome.report.error.type == "SyntaxError"


def test_a_raising_script_keeps_its_traceback_and_report(tmp_path: Path, bare_python: str) -> None:
    outcome, captured = _run(tmp_path, bare_python, "def f():\n    raise ValueError('boom')\n\nf()\n")
    assert outcome.exit_code == 1
    assert b"ValueError: boom" in captured.err and b"line 2, in f" in captured.err
    assert outcome.report is not None and outcome.report.error is not None
    assert (outcome.report.error.type, outcome.report.error.line) == ("ValueError", 2)


def test_sys_exit_code_is_the_outcome(tmp_path: Path, bare_python: str) -> None:
    outcome, _ = _run(tmp_path, bare_python, "import sys\nsys.exit(3)\n")
    assert outcome.exit_code == 3
    assert outcome.report is not None and outcome.report.ended_by == "sys_exit"


def test_megabytes_of_output_on_both_streams_do_not_deadlock(tmp_path: Path, bare_python: str) -> None:
    outcome, captured = _run(
        tmp_path,
        bare_python,
        """\
        import sys
        line = "x" * 1023 + "\\n"
        for _ in range(4096):
            sys.stdout.write(line)
            sys.stderr.write(line)
        """,
        timeout_s=60,
    )
    assert outcome.exit_code == 0 and not outcome.timed_out
    assert len(captured.out) == 4 * 1024 * 1024
    assert captured.err.count(b"x" * 1023 + b"\n") == 4096


HANG_WITH_CHILD = """\
import os, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
with open("pids", "w") as f:
    f.write(f"{os.getpid()} {child.pid}")
print("started", flush=True)
time.sleep(600)
"""


def _pids(tmp_path: Path) -> list[int]:
    assert _wait_for(lambda: (tmp_path / "pids").exists() and bool((tmp_path / "pids").read_text()))
    return [int(p) for p in (tmp_path / "pids").read_text().split()]


def test_timeout_stops_the_whole_process_group(tmp_path: Path, bare_python: str) -> None:
    started = time.monotonic()
    outcome, captured = _run(tmp_path, bare_python, HANG_WITH_CHILD, timeout_s=2.0, grace_s=1.0)
    elapsed = time.monotonic() - started
    assert outcome.timed_out and not outcome.cancelled
    assert elapsed < 10
    assert captured.out == b"started\n"
    assert outcome.error is not None and outcome.error.startswith("timed out after 2 s")
    assert not any(_wait_for(lambda pid=pid: not _alive(pid)) is False for pid in _pids(tmp_path))
    assert outcome.report is not None and outcome.report.ended_by == "signal"


def test_a_report_directory_that_cannot_be_read_mid_run_still_times_out_and_stops(
    tmp_path: Path, bare_python: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The runner looks for the report while the script runs (to read it as the interpreter shuts down); an error
    there must not leave the run unstopped. Here looking raises, as it does when the directory loses its
    permissions mid-run."""
    report = tmp_path / "out" / "report.json"
    is_file = Path.is_file

    def is_file_denied(self: Path) -> bool:
        if self == report:
            raise PermissionError(13, "Permission denied", str(self))
        return is_file(self)

    monkeypatch.setattr(Path, "is_file", is_file_denied)
    outcome, _ = _run(tmp_path, bare_python, HANG_WITH_CHILD, timeout_s=1.0, grace_s=1.0)
    assert outcome.timed_out
    assert all(_wait_for(lambda pid=pid: not _alive(pid)) for pid in _pids(tmp_path))


def test_cancellation_by_event_stops_the_run(tmp_path: Path, bare_python: str) -> None:
    cancel = threading.Event()
    threading.Timer(1.0, cancel.set).start()
    outcome, _ = _run(tmp_path, bare_python, HANG_WITH_CHILD, cancel=cancel, grace_s=1.0)
    assert outcome.cancelled and not outcome.timed_out
    assert outcome.error is not None and outcome.error.startswith("cancelled")
    assert all(_wait_for(lambda pid=pid: not _alive(pid)) for pid in _pids(tmp_path))


def test_cancellation_by_callable(tmp_path: Path, bare_python: str) -> None:
    deadline = time.monotonic() + 1.0
    outcome, _ = _run(tmp_path, bare_python, HANG_WITH_CHILD, cancel=lambda: time.monotonic() > deadline)
    assert outcome.cancelled


def test_a_forked_child_left_behind_is_stopped_and_does_not_hold_the_run(tmp_path: Path, bare_python: str) -> None:
    started = time.monotonic()
    outcome, captured = _run(
        tmp_path,
        bare_python,
        """\
        import os, time
        pid = os.fork()
        if pid == 0:
            time.sleep(600)
            os._exit(0)
        with open("pids", "w") as f:
            f.write(str(pid))
        print("parent done")
        """,
        grace_s=1.0,
    )
    assert time.monotonic() - started < 10
    assert outcome.exit_code == 0 and captured.out == b"parent done\n"
    assert "the script left processes running; they were stopped with the run" in outcome.notes
    (child,) = _pids(tmp_path)
    assert _wait_for(lambda: not _alive(child))


def test_a_killed_script_reports_the_signal(tmp_path: Path, bare_python: str) -> None:
    outcome, _ = _run(tmp_path, bare_python, "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n")
    assert outcome.exit_code == -9
    assert outcome.error is not None and "was killed by SIGKILL" in outcome.error


def test_module_target_runs_with_dash_m(tmp_path: Path, bare_python: str) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "tool.py").write_text("import sys\nprint(__name__, sys.argv[1:])\n")
    captured = Captured()
    outcome = run(
        Target(module="pkg.tool", args=("-x", "--y")),
        report_path=tmp_path / "r.json",
        python=bare_python,
        cwd=tmp_path,
        on_stdout=captured.on_out,
        on_stderr=captured.on_err,
    )
    assert outcome.exit_code == 0, captured.err
    assert captured.out == b"__main__ ['-x', '--y']\n"


def test_a_stale_report_is_never_mistaken_for_this_runs(tmp_path: Path, bare_python: str) -> None:
    stale = '{"schema": "dynamo-lens.run", "version": 1, "python": "3", "argv": ["stale.py"], "exit_code": 0}'
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "report.json").write_text(stale)
    outcome, _ = _run(tmp_path, bare_python, "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n")
    assert outcome.exit_code == -9
    assert outcome.report is not None and outcome.report.argv == ("script.py",)
    assert not outcome.report.complete  # rebuilt from the event stream: the shim never got to write its report


def test_stale_events_of_a_previous_run_are_not_rebuilt_into_this_ones_report(tmp_path: Path) -> None:
    interpreter = tmp_path / "broken-python"
    interpreter.write_text("#!/bin/sh\necho 'fatal: cannot start' >&2\nexit 7\n")
    interpreter.chmod(0o755)
    (tmp_path / "s.py").write_text("pass\n")
    (tmp_path / "r.json.events.jsonl").write_text('{"ev": "start", "epoch": 0, "argv": ["stale.py"]}\n')
    captured = Captured()
    outcome = run(
        Target(script="s.py"),
        report_path=tmp_path / "r.json",
        python=str(interpreter),
        cwd=tmp_path,
        on_stdout=captured.on_out,
        on_stderr=captured.on_err,
    )
    assert (outcome.exit_code, outcome.report) == (7, None)
    assert captured.err == b"fatal: cannot start\n"
    assert outcome.error == "the shim wrote no report; no runtime findings for this run"


def test_a_script_that_ignores_sigterm_is_killed_and_its_events_kept(tmp_path: Path, bare_python: str) -> None:
    started = time.monotonic()
    outcome, _ = _run(
        tmp_path,
        bare_python,
        """        import signal, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        print("stubborn", flush=True)
        time.sleep(600)
        """,
        timeout_s=1.0,
        grace_s=1.0,
    )
    assert outcome.timed_out and outcome.exit_code == -9
    assert time.monotonic() - started < 10
    assert outcome.report is not None and not outcome.report.complete


def test_child_environment_drops_our_libraries_from_pythonpath(tmp_path: Path) -> None:
    import dynamo_lens

    ours = str(Path(dynamo_lens.__file__).parent.parent)
    bundled_copy = tmp_path / "bundled"
    (bundled_copy / "dynamo_lens").mkdir(parents=True)
    (bundled_copy / "dynamo_lens" / "__init__.py").write_text("")
    user = str(tmp_path / "user_libs")
    env = child_environment({"PYTHONPATH": os.pathsep.join([ours, user, str(bundled_copy), ""]), "KEEP": "1"})
    assert env == {"PYTHONPATH": user, "KEEP": "1"}
    assert "PYTHONPATH" not in child_environment({"PYTHONPATH": ours})


def test_torch_is_found_without_importing_torch(bare_python: str, tmp_path: Path) -> None:
    found = torch_of(sys.executable)
    assert found.release == PINNED and found.torch_dir is not None
    assert (Path(found.torch_dir) / "_dynamo" / "graph_break_registry.json").is_file()
    assert torch_of(bare_python) == TorchTarget(None)
    assert torch_of(str(tmp_path / "missing-python")) == TorchTarget(None)


def test_a_command_name_runs_the_console_script_next_to_the_interpreter(tmp_path: Path, bare_python: str) -> None:
    """``dynamo-lens run torchrun …``: not a file here, but the interpreter's environment has that console script."""
    tool = Path(bare_python).parent / "greet-tool"
    tool.write_text(f"#!{bare_python}\nimport sys\nprint('console script', sys.argv[1:])\n")
    tool.chmod(0o755)
    captured = Captured()
    outcome = run(
        Target(script="greet-tool", args=("a",)),
        report_path=tmp_path / "report.json",
        python=bare_python,
        cwd=tmp_path,
        on_stdout=captured.on_out,
        on_stderr=captured.on_err,
    )
    assert outcome.exit_code == 0, captured.err
    assert captured.out.decode().strip() == "console script ['a']"
    assert outcome.report is not None and outcome.report.argv[0] == str(tool)
    missing = run(Target(script="no-such-tool"), report_path=tmp_path / "r2.json", python=bare_python, cwd=tmp_path)
    assert missing.error is not None and missing.error.startswith("script not found: no-such-tool")
