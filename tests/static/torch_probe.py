"""Run scenario scripts under real ``torch.compile`` and print what Dynamo did, as JSON (used by test_torch_agreement).

Usage: ``python torch_probe.py SCRIPT [SCRIPT ...]``. Torch is imported once; each script then runs as ``__main__``
after ``torch._dynamo.reset()``, and its events are read from Dynamo's own log records (the ``recompiles`` and
``graph_breaks`` artifacts, the recompile-limit warning) and from the compilation metrics. One JSON object per script
goes to stdout, keyed by the script's path::

    {"compiles": {"f:12": 8}, "recompiles": [{"frame": "f", "guard": "G['SCALE'] == 2", "path": ..., "line": 12}],
     "graph_breaks": [{"path": ..., "line": 14, "gb_type": "...", "gb_id": "GB0124"}],
     "limit_hits": ["recompile_limit"], "error": null, "stale_results": null}

``stale_results`` is the script's own global ``STALE_RESULTS`` (how many compiled calls returned something else than
eager code would), for scripts that check it. Scripts must not depend on each other; their own stdout is discarded.
``torch._dynamo`` is imported only when the first script compiles, as in a fresh ``python script.py``: a script that
sets the environment variables Dynamo reads its settings from on that import (``TORCHDYNAMO_CAPTURE_SCALAR_OUTPUTS``)
must run first, alone in its probe.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import re
import runpy
import signal
import sys
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

SCENARIO_TIMEOUT_S = 120
RECOMPILE_HEADER = re.compile(r"Recompiling function (?P<frame>\S+) in (?P<path>.+):(?P<line>\d+)")
FAILED_GUARD = re.compile(r"^\s*- \d+/\d+: (?P<guard>.+?)(?:\s{2,}#.*)?$")
USER_FRAME = re.compile(r'File "(?P<path>[^"]+)", line (?P<line>\d+)')
GRAPH_BREAK_AT = re.compile(r"in user code at (?P<path>.+):(?P<line>\d+)")


class Recorder(logging.Handler):
    """Keeps every record Dynamo emits while a scenario runs."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def graph_break_ids() -> dict[str, str]:
    """``Gb_type`` → ``GBnnnn`` from the installed torch's graph-break registry (read without importing Dynamo);
    empty for a torch that ships none (before 2.8): its breaks then carry no id."""
    import torch

    registry = Path(torch.__file__).parent / "_dynamo" / "graph_break_registry.json"
    if not registry.is_file():
        return {}
    entries: dict[str, list[dict[str, Any]]] = json.loads(registry.read_text(encoding="utf-8"))
    return {entry[0]["Gb_type"]: gb_id for gb_id, entry in entries.items() if entry}


def parse_recompile(message: str) -> dict[str, Any]:
    header = RECOMPILE_HEADER.search(message)
    lines = message.splitlines()
    guard = next((m["guard"].strip() for m in map(FAILED_GUARD.match, lines) if m), None)
    # The user frame of the first failing guard: the innermost `File "...", line N` of its stack.
    first_stack: list[re.Match[str]] = []
    for text in lines[1:]:
        if FAILED_GUARD.match(text) and first_stack:
            break
        found = USER_FRAME.search(text)
        if found:
            first_stack.append(found)
    user = first_stack[-1] if first_stack else None
    return {
        "frame": header["frame"] if header else None,
        "guard": guard,
        "path": user["path"] if user else None,
        "line": int(user["line"]) if user else None,
    }


def parse_graph_break(message: str, scenario: str, ids: dict[str, str]) -> dict[str, Any]:
    """Where a graph break happened: the innermost frame in the scenario's directory (a break inside ``logging`` or
    ``copy`` is reported by Dynamo at the library's line), and its registry id."""
    lines = message.splitlines()
    where = GRAPH_BREAK_AT.search(lines[0])
    path, line = (where["path"], int(where["line"])) if where else (None, None)
    for frame in USER_FRAME.finditer(message):
        if Path(frame["path"]).parent == Path(scenario).parent:
            path, line = frame["path"], int(frame["line"])
    texts = (text.removeprefix("Graph Break Reason:").strip() for text in lines)
    gb_type = next((text for text in texts if text in ids), None)
    return {
        "path": path,
        "line": line,
        "gb_type": gb_type,
        "gb_id": ids.get(gb_type) if gb_type else None,
    }


@contextlib.contextmanager
def dynamo_config_restored() -> Iterator[None]:
    """Put back every ``torch._dynamo.config`` setting a scenario changed (``capture_scalar_outputs = True`` at module
    level must not leak into the next scenario of the same process). Before the first compile there is nothing to
    restore: the scenario imports Dynamo itself."""
    if "torch._dynamo" not in sys.modules:
        yield
        return
    import torch._dynamo

    saved = torch._dynamo.config.get_config_copy()
    try:
        yield
    finally:
        changed = {k: v for k, v in saved.items() if getattr(torch._dynamo.config, k) != v}
        torch._dynamo.config.load_config(changed)


def forget_global_module_hooks() -> None:
    """Remove the hooks a scenario registered for every module (``register_module_forward_hook`` and the like):
    they outlive it and would run inside the next scenarios' compiled code."""
    import torch.nn.modules.module as module_module

    for name, table in vars(module_module).items():
        if name.startswith("_global_") and name.endswith(("hooks", "called", "kwargs")) and isinstance(table, dict):
            table.clear()


def run_scenario(path: str, recorder: Recorder, ids: dict[str, str]) -> dict[str, Any]:
    if "torch._dynamo" in sys.modules:  # an earlier scenario compiled: forget what it left
        import torch._dynamo
        import torch._dynamo.utils as dynamo_utils

        torch._dynamo.reset()
        if hasattr(torch.compiler, "set_stance"):  # added in torch 2.6
            torch.compiler.set_stance("default")  # a scenario's stance outlives it like its config
        dynamo_utils.counters.clear()
        dynamo_utils.clear_compilation_metrics()
    forget_global_module_hooks()
    recorder.records.clear()
    error = None
    scope: dict[str, Any] = {}
    # Like `python path`: the script's directory first on sys.path, so a multi-file case imports its siblings;
    # the modules it imported are forgotten afterwards so the next case gets fresh ones.
    modules_before = set(sys.modules)
    sys.path.insert(0, str(Path(path).parent))
    with contextlib.redirect_stdout(io.StringIO()), dynamo_config_restored():
        try:
            signal.alarm(SCENARIO_TIMEOUT_S)  # a hanging scenario fails alone instead of stalling the batch
            scope = runpy.run_path(path, run_name="__main__")
        except BaseException as exc:  # the scenario's own failure is data (e.g. FailOnRecompileLimitHit)
            error = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        finally:
            signal.alarm(0)
            sys.path.remove(str(Path(path).parent))
            for name in set(sys.modules) - modules_before:
                if (
                    getattr(sys.modules[name], "__file__", None)
                    and Path(path).parent in Path(str(sys.modules[name].__file__)).parents
                ):
                    del sys.modules[name]
    import torch._dynamo.utils as dynamo_utils

    compiles: dict[str, int] = {}
    for metric in dynamo_utils.get_compilation_metrics():
        if metric.fail_type is None and metric.co_filename and Path(metric.co_filename).parent == Path(path).parent:
            key = f"{metric.co_name}:{metric.co_firstlineno}"
            compiles[key] = compiles.get(key, 0) + 1
    recompiles, graph_breaks, limit_hits = [], [], []
    for record in recorder.records:
        message = record.getMessage()
        if record.name.endswith("__recompiles") and message.startswith("Recompiling function"):
            recompiles.append(parse_recompile(message))
        elif record.name.endswith("__graph_breaks") and "in user code at" in message:
            graph_breaks.append(parse_graph_break(message, path, ids))
        elif message.startswith("torch._dynamo hit config."):
            limit_hits.append(str(record.args[0]) if isinstance(record.args, tuple) else message)
    return {
        "compiles": compiles,
        "recompiles": recompiles,
        "graph_breaks": graph_breaks,
        "limit_hits": limit_hits,
        "error": error,
        "stale_results": scope.get("STALE_RESULTS"),
    }


@contextlib.contextmanager
def native_stdout_silenced() -> Iterator[None]:
    """Send file descriptor 1 to /dev/null while scenarios run: torch's C++ side writes there directly (gloo announces
    its ranks), past ``redirect_stdout``, and only the report may reach the reader."""
    sys.stdout.flush()
    saved = os.dup(1)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.close(null)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def _timed_out(signum: int, frame: object) -> None:
    raise TimeoutError(f"scenario still running after {SCENARIO_TIMEOUT_S} s")


def main(paths: list[str]) -> int:
    import torch

    signal.signal(signal.SIGALRM, _timed_out)
    torch._logging.set_logs(recompiles=True, graph_breaks=True)
    recorder = Recorder()
    dynamo_logger = logging.getLogger("torch._dynamo")
    dynamo_logger.addHandler(recorder)
    for handler in list(dynamo_logger.handlers):  # keep stderr quiet; the records are what we need
        if handler is not recorder:
            dynamo_logger.removeHandler(handler)
    ids = graph_break_ids()
    with native_stdout_silenced():
        results = {path: run_scenario(str(Path(path).resolve()), recorder, ids) for path in paths}
    json.dump(results, sys.stdout, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
