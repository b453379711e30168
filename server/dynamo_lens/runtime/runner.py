"""Run a user's script (or ``-m module``) under the shim, in the user's interpreter, and collect its run report.

The runner owns the child process: it builds the command (never through a shell), starts it in its own session so
that its whole process group (Inductor's compile workers, anything the script forks) can be stopped at once, streams
its output through, enforces the timeout and cancellation, and finally loads the report the shim wrote.

Stopping a run: SIGTERM to the group (the shim catches it and writes its report), a grace period, then SIGKILL.
When the script exits on its own, whatever it left running in its group is stopped the same way, so that nothing
outlives a run and no orphan keeps our output pipes open.

Multi-process runs: every Python process the run starts loads the shim at start-up (a bootstrap ``sitecustomize``
on ``PYTHONPATH``, see ``worker_site/``) and records itself next to the report (``<report>.workers/<pid>.json``);
the runner merges those reports into the run's (``ranks``). ``torchrun`` starts each rank in a session of its own,
out of reach of the run's group: ranks still alive when the run ends are stopped one by one, found by their
recordings.

POSIX only (process groups, ``os.killpg``); the server and the CLI target Linux and macOS.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from dynamo_lens.model import Finding
from dynamo_lens.runtime.report import (
    EVENTS_SUFFIX,
    ReportError,
    RunReport,
    events_path,
    load_partial_report,
    load_report,
    write_report,
)
from dynamo_lens.torch_facts import Release, TorchTarget

SHIM_PATH = Path(__file__).with_name("shim.py")
WORKER_SITE = Path(__file__).with_name("worker_site")

OutputSink = Callable[[bytes], None]
"""Receives the child's output in chunks, as raw bytes (a chunk may end inside a multi-byte character)."""

Cancel = Callable[[], bool] | threading.Event
"""A cancellation request: an event that gets set, or a callable polled until it returns True."""

DEFAULT_GRACE_S = 3.0
"""Time between SIGTERM and SIGKILL, long enough for the shim to write its report."""
_POLL_S = 0.01
_READ_CHUNK = 1 << 16


@dataclass(frozen=True, slots=True)
class Target:
    """What to run: a script path or a module (``-m``), with its own arguments."""

    script: str | None = None
    module: str | None = None
    args: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if (self.script is None) == (self.module is None):
            raise ValueError("a run target is either a script or a module, not both or neither")

    @property
    def argv(self) -> list[str]:
        """The part of the command after ``--``."""
        head = [self.script] if self.script is not None else ["-m", str(self.module)]
        return [*head, *self.args]

    @property
    def display(self) -> str:
        return " ".join(self.argv)


@dataclass(frozen=True, slots=True)
class RunOutcome:
    """What happened to one run. ``report`` is None when the shim could not deliver one (see ``error``)."""

    report: RunReport | None
    exit_code: int | None
    """The script's exit code; negative for a signal (as ``subprocess``); None when it never started."""
    timed_out: bool
    cancelled: bool
    error: str | None
    """A one-paragraph explanation of what went wrong, for people; None for a clean run (any exit code)."""
    report_path: Path
    duration_s: float
    notes: tuple[str, ...] = field(default=())
    """Secondary facts worth showing (data the shim could not collect, leftovers that were killed)."""


def build_command(python: str, target: Target, report_path: Path, torch_trace_dir: Path | None = None) -> list[str]:
    """``[python, shim.py, --report OUT, (--torch-trace DIR)?, --, script | -m module, *args]``."""
    command = [python, str(SHIM_PATH), "--report", str(report_path)]
    if torch_trace_dir is not None:
        command += ["--torch-trace", str(torch_trace_dir)]
    return [*command, "--", *target.argv]


def child_environment(base: Mapping[str, str] | None = None, *, guard_cost: bool = False) -> dict[str, str]:
    """The environment of the user's run: ``base`` (default ``os.environ``) without our own libraries.

    The editor extension puts the server and its bundled libraries (pygls, lsprotocol, ...) on the server's path;
    none of that may reach the user's interpreter, where it could shadow the user's own packages. ``PYTHONPATH``
    entries that hold a copy of ``dynamo_lens``, or that are the directory this process loaded ``dynamo_lens``,
    pygls or lsprotocol from (unless that is an ordinary site-packages directory), are removed; the rest is kept.
    The guard-cost switch is set only when ``guard_cost`` asks for it, never inherited.
    """
    from dynamo_lens.runtime.shim import GUARD_COST_ENV

    env = dict(os.environ if base is None else base)
    env.pop(GUARD_COST_ENV, None)
    if guard_cost:
        env[GUARD_COST_ENV] = "1"
    entries = env.get("PYTHONPATH", "").split(os.pathsep)
    kept = [e for e in entries if e and not _is_our_library_dir(e)]
    if kept:
        env["PYTHONPATH"] = os.pathsep.join(kept)
    else:
        env.pop("PYTHONPATH", None)
    return env


def _is_our_library_dir(entry: str) -> bool:
    path = Path(entry)
    try:
        return path.resolve() in _our_library_dirs() or (path / "dynamo_lens" / "__init__.py").is_file()
    except OSError:
        return False


@functools.cache
def _our_library_dirs() -> frozenset[Path]:
    dirs = {Path(__file__).resolve().parents[2]}
    for name in ("pygls", "lsprotocol"):
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.origin is not None:
            home = Path(spec.origin).resolve().parents[1]
            if home.name not in ("site-packages", "dist-packages"):
                dirs.add(home)
    return frozenset(dirs)


def console_script(target: Target, python: str, cwd: Path) -> Target:
    """A target named like a command (``torchrun``, ``pytest``) and not a file in ``cwd``: the Python console script
    of that name next to the interpreter, else on ``PATH`` (a file whose first line runs a Python), as a script."""
    name = target.script
    if name is None or os.sep in name or (cwd / name).exists():
        return target
    interpreter = _resolve_executable(python)
    search = os.pathsep.join([str(Path(interpreter).parent)] if interpreter else []) + os.pathsep
    found = shutil.which(name, path=search + os.environ.get("PATH", ""))
    if found is None:
        return target
    try:
        with open(found, "rb") as handle:
            first = handle.readline(256)
    except OSError:
        return target
    return replace(target, script=found) if first.startswith(b"#!") and b"python" in first else target


def preflight(python: str, target: Target, cwd: Path) -> str | None:
    """A clear message for a run that cannot start (missing interpreter or script), else None."""
    if _resolve_executable(python) is None:
        return f"Python interpreter not found or not executable: {python}"
    if target.script is not None:
        script = cwd / target.script
        if not script.exists():
            return f"script not found: {target.script} (looked in {cwd})"
        if script.is_dir() and not (script / "__main__.py").is_file():
            return f"{target.script} is a directory without __main__.py, not a Python script"
    return None


def _resolve_executable(python: str) -> str | None:
    if os.sep in python or (os.altsep and os.altsep in python):
        return python if os.path.isfile(python) and os.access(python, os.X_OK) else None
    return shutil.which(python)


def run(
    target: Target,
    *,
    report_path: Path,
    python: str = sys.executable,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    timeout_s: float | None = None,
    cancel: Cancel | None = None,
    on_stdout: OutputSink | None = None,
    on_stderr: OutputSink | None = None,
    torch_trace_dir: Path | None = None,
    guard_cost: bool = False,
    grace_s: float = DEFAULT_GRACE_S,
    on_started: Callable[[], None] | None = None,
) -> RunOutcome:
    """Run ``target`` under the shim and return what happened; never raises for problems of the user's program.

    Output goes to ``on_stdout``/``on_stderr`` (default: our own stdout/stderr) as it is produced. The child's stdin
    is ``/dev/null``: the language server's stdin is the protocol stream and must never be read by a user script.
    Ctrl-C (KeyboardInterrupt) in the caller stops the run like a cancellation. ``guard_cost`` runs every process
    under ``torch.profiler`` to measure the guard checks per call (slower; see the shim). ``on_started`` is called
    once the child is started, for work that should not delay its start.
    """
    started = time.monotonic()
    work_dir = (cwd or Path.cwd()).resolve()
    report_path = (work_dir / report_path).resolve()

    def outcome(**kwargs: object) -> RunOutcome:
        defaults: dict[str, object] = {
            "report": None,
            "exit_code": None,
            "timed_out": False,
            "cancelled": False,
            "error": None,
            "report_path": report_path,
            "duration_s": time.monotonic() - started,
        }
        defaults.update(kwargs)
        return RunOutcome(**defaults)  # type: ignore[arg-type]

    target = console_script(target, python, work_dir)
    problem = preflight(python, target, work_dir)
    if problem is not None:
        return outcome(error=problem)
    if os.sep in python:  # a relative interpreter path means ours, not one relative to the run's directory
        python = os.path.abspath(python)
    workers = workers_dir(report_path)
    try:
        report_path.parent.mkdir(parents=True, exist_ok=True)
        for stale in (report_path, events_path(report_path)):  # never mistake a previous run's data for this one's
            stale.unlink(missing_ok=True)
        shutil.rmtree(workers, ignore_errors=True)
        workers.mkdir()
    except OSError as exc:
        return outcome(error=f"cannot write the report to {report_path}: {exc}")
    if torch_trace_dir is not None:
        torch_trace_dir = (work_dir / torch_trace_dir).resolve()

    command = build_command(python, target, report_path, torch_trace_dir)
    try:
        process = subprocess.Popen(
            command,
            cwd=work_dir,
            env=recording_workers(child_environment(env, guard_cost=guard_cost), workers),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as exc:
        return outcome(error=f"cannot start {python}: {exc.strerror or exc}")

    assert process.stdout is not None and process.stderr is not None
    pumps = [
        _Pump(process.stdout, on_stdout or passthrough(sys.stdout)),
        _Pump(process.stderr, on_stderr or passthrough(sys.stderr)),
    ]
    if on_started is not None:
        try:
            on_started()
        except BaseException:  # the caller's failure: stop what was started before it is raised
            _signal_group(process.pid, signal.SIGKILL)
            process.wait()
            for pump in pumps:
                pump.join(timeout=grace_s)
            raise
    is_cancelled = _as_predicate(cancel)
    timed_out = cancelled = False
    early: _Attributed | None = None
    try:
        while not _has_exited(process):
            if timeout_s is not None and time.monotonic() - started > timeout_s:
                timed_out = True
                break
            if is_cancelled():
                cancelled = True
                break
            if early is None:  # the report is written at once (a rename) as the script ends: read it while
                early = _Attributed.early(report_path)  # the interpreter shuts down (torch's teardown: ~0.7 s)
            time.sleep(_POLL_S)
    except KeyboardInterrupt:
        cancelled = True
    try:
        leftovers = _stop_group(process.pid, grace_s, process_alive=timed_out or cancelled)
    except KeyboardInterrupt:  # a second Ctrl-C: no more grace
        _signal_group(process.pid, signal.SIGKILL)
        leftovers, cancelled = False, True
    exit_code = process.wait()
    try:
        stray_workers = _stop_workers(workers, grace_s)
    except KeyboardInterrupt:  # a second Ctrl-C: no more grace
        stray_workers, cancelled = _stop_workers(workers, 0.0), True
    for pump in pumps:
        pump.join(timeout=grace_s)

    notes: list[str] = []
    if leftovers or stray_workers:
        notes.append("the script left processes running; they were stopped with the run")
    attributed = early if early is not None else _Attributed.of(report_path)
    report, report_problem = attributed.report, attributed.problem
    if report is not None:
        ranks, unreadable = _worker_reports(workers)
        notes.extend(unreadable)
        notes.extend(f"not collected: {m}" for m in report.missing)
        notes.extend(f"not collected on {r.rank_label}: {m}" for r in ranks for m in r.missing)
        report = attributed.with_ranks(ranks)
        try:
            write_report(report, report_path)
        except OSError as exc:
            notes.append(f"could not add the findings to {report_path}: {exc}")
        else:
            shutil.rmtree(workers, ignore_errors=True)  # merged into the report
    error = _explain(
        target,
        python=python,
        exit_code=exit_code,
        timeout_s=timeout_s if timed_out else None,
        cancelled=cancelled,
        report=report,
        report_problem=report_problem,
    )
    return outcome(
        report=report,
        exit_code=exit_code,
        timed_out=timed_out,
        cancelled=cancelled,
        error=error,
        notes=tuple(notes),
    )


def workers_dir(report_path: Path) -> Path:
    """Where the other processes of a run record themselves: ``OUT.json`` → ``OUT.json.workers/``."""
    return Path(f"{report_path}.workers")


def recording_workers(env: dict[str, str], workers: Path) -> dict[str, str]:
    """``env`` with what makes every Python process started under it record itself into ``workers``: the bootstrap
    directory first on ``PYTHONPATH``, the shim's path and the directory (``python -I`` and ``-S`` ignore them)."""
    from dynamo_lens.runtime.shim import SHIM_ENV, WORKERS_ENV  # the shim's names; it is loaded only for runs

    entries = [str(WORKER_SITE), *(e for e in env.get("PYTHONPATH", "").split(os.pathsep) if e)]
    return {**env, "PYTHONPATH": os.pathsep.join(entries), WORKERS_ENV: str(workers), SHIM_ENV: str(SHIM_PATH)}


def _worker_reports(workers: Path) -> tuple[tuple[RunReport, ...], list[str]]:
    """The reports of the run's other processes that are ranks or compiled something, ordered by rank then pid
    (a process killed before it could write one is rebuilt from its event stream), and a note for each unreadable
    one. Processes with neither (a data loader's workers) are left out."""
    reports: list[RunReport] = []
    notes: list[str] = []
    for stream in sorted(workers.glob(f"*{EVENTS_SUFFIX}")):
        report, problem = _read_report(stream.with_name(stream.name.removesuffix(EVENTS_SUFFIX)))
        if report is None:
            notes.append(f"worker process {stream.name.split('.')[0]}: {problem}")
        elif (report.process is not None and report.process.rank is not None) or report.frames:
            reports.append(report)

    def order(report: RunReport) -> tuple[bool, int, int]:
        process = report.process
        rank = process.rank if process is not None else None
        return (rank is None, rank or 0, process.pid if process is not None else 0)

    return tuple(sorted(reports, key=order)), notes


def _stop_workers(workers: Path, grace_s: float) -> bool:
    """Stop the run's worker processes that are still alive (each with its own group, as ``torchrun`` starts
    them): SIGTERM, ``grace_s``, then SIGKILL. A pid counts only while its environment names ``workers``, so a
    recycled pid is never signalled (Linux's /proc; elsewhere nothing is signalled). True if any was."""
    alive = [pid for pid in _worker_pids(workers) if _is_our_worker(pid, workers)]
    for pid in alive:
        _signal_worker(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and any(_is_our_worker(pid, workers) for pid in alive):
        time.sleep(_POLL_S)
    for pid in alive:
        if _is_our_worker(pid, workers):
            _signal_worker(pid, signal.SIGKILL)
    return bool(alive)


def _worker_pids(workers: Path) -> list[int]:
    return [int(name) for p in workers.glob(f"*{EVENTS_SUFFIX}") if (name := p.name.split(".")[0]).isdigit()]


def _is_our_worker(pid: int, workers: Path) -> bool:
    from dynamo_lens.runtime.shim import WORKERS_ENV

    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes()
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z" and f"{WORKERS_ENV}={workers}".encode() in environ.split(b"\0")


def _signal_worker(pid: int, sig: signal.Signals) -> None:
    """The worker's whole group when it leads one (its own compile workers and data loaders), else the worker."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if os.getpgid(pid) == pid:
            os.killpg(pid, sig)
        else:
            os.kill(pid, sig)


@dataclass(frozen=True, slots=True)
class _Attributed:
    """The shim's report (see :func:`_read_report`) with the runtime findings of its main process."""

    report: RunReport | None
    problem: str | None
    findings: tuple[Finding, ...] = ()

    @classmethod
    def of(cls, path: Path) -> _Attributed:
        report, problem = _read_report(path)
        return cls(report, problem, _findings(report) if report is not None else ())

    @classmethod
    def early(cls, path: Path) -> _Attributed | None:
        """:meth:`of` once the report exists, while the child may still run (None before). A failure here is left
        for the same call after the child ended, so that the run is stopped and cleaned up before anything is
        raised."""
        try:
            return cls.of(path) if path.is_file() else None
        except Exception:
            return None

    def with_ranks(self, ranks: tuple[RunReport, ...]) -> RunReport:
        """The report with the other processes' reports merged in, and the findings of them all."""
        assert self.report is not None
        if not ranks:
            return replace(self.report, findings=self.findings)
        report = replace(self.report, ranks=ranks)
        return replace(report, findings=_findings(report))


def _findings(report: RunReport) -> tuple[Finding, ...]:
    from dynamo_lens.runtime.attribution import findings_from_report  # (the CLI imports it while the script runs)

    return tuple(findings_from_report(report))


def _read_report(path: Path) -> tuple[RunReport | None, str | None]:
    """The shim's report; failing that (the run was killed, or died mid-write), the report rebuilt from the event
    stream the shim appends to as it goes (``complete`` False); failing both, why not."""
    problem = "the shim wrote no report"
    if path.exists():
        try:
            return load_report(path), None
        except ReportError as exc:
            problem = f"the report is unusable ({exc})"
    if not events_path(path).is_file():
        return None, problem
    try:
        return load_partial_report(path), None
    except (ReportError, OSError, ValueError) as exc:
        return None, f"{problem}, and its event stream could not be read ({exc})"


def _explain(
    target: Target,
    *,
    python: str,
    exit_code: int,
    timeout_s: float | None,
    cancelled: bool,
    report: RunReport | None,
    report_problem: str | None,
) -> str | None:
    parts: list[str] = []
    if timeout_s is not None:
        parts.append(f"timed out after {timeout_s:g} s; the run's process group was stopped")
    elif cancelled:
        parts.append("cancelled; the run's process group was stopped")
    elif exit_code < 0:
        parts.append(f"{target.display} was killed by {_signal_name(-exit_code)}")
    if report is not None and report.torch_version is None:
        parts.append(f"torch is not importable in {python}: install torch there or choose another interpreter")
    if report is None:
        parts.append(f"{report_problem}; no runtime findings for this run")
    return "; ".join(parts) if parts else None


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _has_exited(process: subprocess.Popen[bytes]) -> bool:
    """True once the child exited, without reaping it: its pid (= our group id) stays reserved until we stop the
    group, so the group cannot be confused with an unrelated process that got the recycled number."""
    waitid = getattr(os, "waitid", None)
    if waitid is None:  # macOS before Python 3.13 lacks waitid; reaping early is the best it can do
        return process.poll() is not None
    try:
        return waitid(os.P_PID, process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def _stop_group(pgid: int, grace_s: float, *, process_alive: bool) -> bool:
    """SIGTERM the group, wait up to ``grace_s`` for it to empty, then SIGKILL. True if anything was signalled
    besides a still-running main process (i.e. the script left something behind)."""
    if not _group_has_members(pgid, exclude_zombie_leader=not process_alive):
        return False
    _signal_group(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        if not _group_has_members(pgid, exclude_zombie_leader=True):
            return not process_alive
        time.sleep(_POLL_S)
    _signal_group(pgid, signal.SIGKILL)
    return not process_alive


def _group_has_members(pgid: int, *, exclude_zombie_leader: bool) -> bool:
    """Whether any live process is in group ``pgid``. The leader may be an unreaped zombie (we hold it on purpose),
    which still counts for ``killpg``; Linux's /proc tells live members apart."""
    proc = Path("/proc")
    if exclude_zombie_leader and proc.is_dir():
        for entry in proc.iterdir():
            if not entry.name.isdigit():
                continue
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            state, group = fields[0], int(fields[2])
            if group == pgid and state != "Z":
                return True
        return False
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _as_predicate(cancel: Cancel | None) -> Callable[[], bool]:
    if cancel is None:
        return lambda: False
    if isinstance(cancel, threading.Event):
        return cancel.is_set
    return cancel


def passthrough(stream: object) -> OutputSink:
    """A sink that writes the child's bytes to a text stream (through its binary buffer when it has one)."""

    def write(chunk: bytes) -> None:
        buffer = getattr(stream, "buffer", None)
        if buffer is not None:
            buffer.write(chunk)
            buffer.flush()
        else:
            stream.write(chunk.decode(errors="replace"))  # type: ignore[attr-defined]
            stream.flush()  # type: ignore[attr-defined]

    return write


class _Pump:
    """Copies one pipe to a sink on a daemon thread, so neither pipe can fill up and block the child."""

    def __init__(self, pipe: object, sink: OutputSink) -> None:
        self._fd: int = pipe.fileno()  # type: ignore[attr-defined]
        self._pipe = pipe
        self._sink = sink
        self._thread = threading.Thread(target=self._copy, daemon=True)
        self._thread.start()

    def _copy(self) -> None:
        try:
            while chunk := os.read(self._fd, _READ_CHUNK):
                try:
                    self._sink(chunk)
                except Exception:  # a broken sink must not stall the child; keep draining
                    continue
        except OSError:
            pass

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)
        if not self._thread.is_alive():
            self._pipe.close()  # type: ignore[attr-defined]


def torch_of(python: str) -> TorchTarget:
    """The torch installed for ``python``: its release and directory, read from its package metadata without
    importing torch (``TorchTarget(None)`` when there is none, or the interpreter cannot tell).

    Cached per interpreter path for the life of the process (the language server asks once per interpreter).
    """
    return _torch_of(python)


@functools.cache
def _torch_of(python: str) -> TorchTarget:
    probe = (
        "import importlib.metadata as m\n"
        "try:\n    d = m.distribution('torch')\n"
        "except m.PackageNotFoundError:\n    pass\n"
        "else:\n    print(d.version)\n    print(d.locate_file('torch'))\n"
    )
    try:
        done = subprocess.run(
            [python, "-c", probe],
            env=child_environment(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return TorchTarget(None)
    version, _, torch_dir = done.stdout.strip().partition("\n")
    if done.returncode != 0:
        return TorchTarget(None)
    return TorchTarget(Release.parse(version), torch_dir.strip() or None)
