"""The shim, run for real: ``torch.compile(backend="eager")`` in subprocesses on the scripts in fixtures/runtime.

Every line asserted is found through a ``# @marker`` comment in the fixture, so the assertions are exact user lines.
The independent runs start together (two at a time) on first use, which keeps the module at about half a minute.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from dynamo_lens.runtime import shim
from dynamo_lens.runtime.attribution import findings_from_report
from dynamo_lens.runtime.report import (
    CacheEntry,
    Frame,
    RunReport,
    events_path,
    load_partial_report,
    load_report,
)

pytestmark = pytest.mark.slow

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "runtime"
SHIM = Path(shim.__file__).resolve()
SCHEMA = json.loads((SHIM.parent / "run_report.schema.json").read_text(encoding="utf-8"))


@dataclass(frozen=True)
class Run:
    returncode: int
    stdout: str
    stderr: str
    document: dict[str, Any]
    report: RunReport
    report_path: Path


def line_of(fixture: Path, marker: str) -> int:
    """The 1-based line of the fixture that carries ``# @marker``."""
    for number, text in enumerate(fixture.read_text(encoding="utf-8").splitlines(), start=1):
        if text.rstrip().endswith(f"# @{marker}"):
            return number
    raise AssertionError(f"no line marked @{marker} in {fixture}")


def shim_command(report: Path, *target: str) -> list[str]:
    return [sys.executable, str(SHIM), "--report", str(report), "--", *target]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TORCH_LOGS", "TORCH_TRACE", "DYNAMO_LENS"))}
    env.update(extra)
    return env


def run_shim(tmp: Path, *target: str, cwd: Path = FIXTURES, **env: str) -> Run:
    report_path = tmp / "report.json"
    command = shim_command(report_path, *target)
    trace_dir = env.pop("TRACE_DIR", None)
    if trace_dir is not None:
        command[2:2] = ["--torch-trace", trace_dir]
    done = subprocess.run(command, cwd=cwd, env=_env(**env), capture_output=True, text=True, timeout=180)
    document = json.loads(report_path.read_text(encoding="utf-8"))
    return Run(done.returncode, done.stdout, done.stderr, document, load_report(report_path), report_path)


@dataclass(frozen=True)
class Hanging:
    process: subprocess.Popen[str]
    report_path: Path


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start_hanging(tmp: Path) -> Hanging:
    """``hangs.py`` under the shim, returned once it has compiled and sleeps (it printed ``ready``)."""
    report = tmp / "report.json"
    process = subprocess.Popen(
        shim_command(report, str(FIXTURES / "hangs.py")),
        cwd=FIXTURES,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        # A shell that starts the test run in the background ignores SIGINT, and children inherit that; Python then
        # never raises KeyboardInterrupt. Give the run the default handler, as an interactive terminal would.
        preexec_fn=_default_sigint,
    )
    assert process.stdout is not None
    assert process.stdout.readline() == "ready\n"
    return Hanging(process, report)


@dataclass(frozen=True)
class Jobs:
    runs: dict[str, Future[Run]]
    hanging: dict[str, Future[Hanging]]


@pytest.fixture(scope="module")
def jobs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Jobs]:
    """Every subprocess of this module, started together on first use, two at a time."""
    tmp = tmp_path_factory.mktemp("shim-runs")
    behaviours = str(FIXTURES / "behaviours.py")
    scripts: dict[str, tuple[tuple[str, ...], Path, dict[str, str]]] = {
        "behaviours": ((behaviours, "first", "--second"), FIXTURES, {}),
        "call-counts": ((str(FIXTURES / "call_counts.py"),), FIXTURES, {}),
        "call-counts-unattributed": ((str(FIXTURES / "call_counts_unattributed.py"),), FIXTURES, {}),
        "crash": ((str(FIXTURES / "crash.py"),), FIXTURES, {}),
        "exits": (("exits.py",), FIXTURES, {"TRACE_DIR": str(tmp / "trace")}),
        "forks": (("forks.py",), FIXTURES, {}),
        "no-compile": (("no_compile.py",), FIXTURES, {}),
        "pytest": (("-m", "pytest", "check_compiled.py::test_counter_recompiles", "-q"), FIXTURES / "pkg", {}),
        "resets": ((str(FIXTURES / "resets.py"),), FIXTURES, {}),
        "disabled": (
            (str(FIXTURES / "resets.py"),),
            FIXTURES,
            {"DYNAMO_LENS_SHIM_DISABLE": "cache_entries,guard_export,guard_complete_hook"},
        ),
        "no-trace": ((str(FIXTURES / "resets.py"),), FIXTURES, {"DYNAMO_LENS_SHIM_DISABLE": "trace"}),
    }
    signals = ("sigterm", "sigint", "sigkill")
    for name in (*scripts, *signals):
        (tmp / name).mkdir()
    with ThreadPoolExecutor(max_workers=2) as pool:
        runs = {
            name: pool.submit(run_shim, tmp / name, *target, cwd=cwd, **env)
            for name, (target, cwd, env) in scripts.items()
        }
        hanging = {name: pool.submit(start_hanging, tmp / name) for name in signals}
        yield Jobs(runs, hanging)
        for future in hanging.values():
            if future.done() and future.exception() is None and future.result().process.poll() is None:
                future.result().process.kill()
                future.result().process.wait()


@pytest.fixture(scope="module")
def runs(jobs: Jobs) -> dict[str, Future[Run]]:
    return jobs.runs


@pytest.fixture(scope="module")
def hanging(jobs: Jobs) -> dict[str, Future[Hanging]]:
    return jobs.hanging


def frame_named(report: RunReport, name: str, fixture: Path, epoch: int = 0) -> Frame:
    matches = [f for f in report.frames if f.name == name and f.path == str(fixture) and f.reset_epoch == epoch]
    assert len(matches) == 1, [(f.name, f.path, f.reset_epoch) for f in report.frames]
    return matches[0]


def frame_at(report: RunReport, fixture: Path, def_line: int) -> Frame:
    matches = [f for f in report.frames if f.path == str(fixture) and f.line == def_line]
    assert len(matches) == 1, [(f.name, f.path, f.line) for f in report.frames]
    return matches[0]


def def_line(fixture: Path, signature: str) -> int:
    for number, text in enumerate(fixture.read_text(encoding="utf-8").splitlines(), start=1):
        if text.strip().startswith(signature):
            return number
    raise AssertionError(signature)


def recompiles_of(report: RunReport, frame: Frame) -> list[Any]:
    return [r for r in report.recompiles if report.frame(r.frame) is frame]


# --------------------------------------------------------------------------------------------------------------------
# One run, many behaviours

BEHAVIOURS = FIXTURES / "behaviours.py"


@pytest.fixture(scope="module")
def behaviours(runs: dict[str, Future[Run]]) -> Run:
    return runs["behaviours"].result()


def test_the_script_runs_as_python_would_and_the_report_is_valid(behaviours: Run) -> None:
    assert behaviours.returncode == 0, behaviours.stderr
    assert behaviours.stdout.splitlines() == [
        "graph break ahead",
        "graph break ahead",
        "graph break ahead",
        "in loop",
        "in loop",
        "foreign modules: []",
        "argv: ['first', '--second']",
        f"main: __main__ path0: {FIXTURES}",
    ]
    jsonschema.validate(behaviours.document, SCHEMA)
    report = behaviours.report
    assert (report.exit_code, report.ended_by, report.complete, report.error) == (0, "returned", True, None)
    assert report.argv == (str(BEHAVIOURS), "first", "--second")
    assert report.torch_version is not None and report.torch_version.startswith("2.")
    assert report.config["recompile_limit"] == 8
    assert report.missing == ()
    assert report.sources_ok == dict.fromkeys(shim.SOURCES, True)


def test_the_warnings_shown_are_kept_with_the_line_they_name(behaviours: Run) -> None:
    [copied] = [w for w in behaviours.report.warnings if w.message.startswith("To copy construct from a tensor")]
    assert (copied.category, copied.path, copied.line) == (
        "UserWarning",
        str(BEHAVIOURS),
        line_of(BEHAVIOURS, "torch-warning"),
    )
    assert "To copy construct from a tensor" in behaviours.stderr  # still shown, as Python would


def test_the_event_stream_rebuilds_the_same_report(behaviours: Run) -> None:
    assert shim.rebuild_report(str(events_path(behaviours.report_path))) == behaviours.document


def test_int_counter_recompiles_eight_times_then_hits_the_limit(behaviours: Run) -> None:
    report = behaviours.report
    frame = frame_at(report, BEHAVIOURS, def_line(BEHAVIOURS, "def forward(self, x):"))
    assert [e.status for e in frame.cache_entries] == ["ok"] * 8 + ["recompile_limit"]
    assert [e.compile_id for e in frame.cache_entries] == [f"{frame.frame_id}/{i}" for i in range(9)]
    counter_line = line_of(BEHAVIOURS, "counter")
    recompiles = recompiles_of(report, frame)
    assert len(recompiles) == 8
    for index, recompile in enumerate(recompiles):
        culprit = recompile.failed_guards[0]
        assert (culprit.kind, culprit.text, culprit.source) == (
            "EQUALS_MATCH",
            f"self.steps == {index}",
            "L['self'].steps",
        )
        assert (culprit.path, culprit.line, culprit.attributed_to) == (str(BEHAVIOURS), counter_line, "guard")
        assert "allow_unspec_int_on_nn_module" in (culprit.hint or "")
        assert recompile.call_site is not None and recompile.call_site.line == line_of(BEHAVIOURS, "counter-call")
        assert [g.entry for g in recompile.failed_guards] == [f"{frame.frame_id}/{i}" for i in range(index, -1, -1)]
    (hit,) = report.limit_hits
    assert (hit.limit, hit.value, hit.compile_id) == ("recompile_limit", 8, f"{frame.frame_id}/8")
    assert report.frame(hit.frame) is frame if hit.frame else False
    assert hit.last_reason == f"{frame.frame_id}/7: self.steps == 7"
    assert report.summary.eager_fallback_calls == 4  # calls 9-12 ran eagerly, silently
    assert hit.call_site is not None and hit.call_site.line == line_of(BEHAVIOURS, "counter-call")
    assert hit.eager_calls == 4


def test_each_frame_counts_the_calls_that_ran_its_compiled_code(behaviours: Run) -> None:
    """Every call either ran one of the frame's entries (a hit, or the compile it triggered) or, past the limit, ran
    eagerly; the four module classes share `nn.Module._call_impl`'s call of `forward`, the resume functions are called
    from their parent's compiled code (again from a new instruction once the parent recompiled for a new shape)."""
    report = behaviours.report
    calls = {(f.name, f.line): f.compiled_calls for f in report.frames}
    expected = {
        ("forward", _forward_of(BEHAVIOURS, "Counter")): 8,  # 12 calls: 8 compiled, 4 eager past the limit
        ("forward", _forward_of(BEHAVIOURS, "Scaled")): 4,
        ("forward", _forward_of(BEHAVIOURS, "Flagged")): 4,
        ("forward", _forward_of(BEHAVIOURS, "Block")): 4,
        ("shaped", def_line(BEHAVIOURS, "def shaped(")): 4,
        ("with_int", def_line(BEHAVIOURS, "def with_int(")): 4,
        ("with_global", def_line(BEHAVIOURS, "def with_global(")): 3,
        ("with_breaks", def_line(BEHAVIOURS, "def with_breaks(")): 3,
        (f"torch_dynamo_resume_in_with_breaks_at_{line_of(BEHAVIOURS, 'print')}", line_of(BEHAVIOURS, "print")): 3,
        (f"torch_dynamo_resume_in_with_breaks_at_{line_of(BEHAVIOURS, 'item')}", line_of(BEHAVIOURS, "item")): 3,
        ("grad_sensitive", def_line(BEHAVIOURS, "def grad_sensitive(")): 3,
        ("call_module", def_line(BEHAVIOURS, "def call_module(")): 3,
        ("nothing_to_compile", def_line(BEHAVIOURS, "def nothing_to_compile(")): 0,
        ("break_in_loop", def_line(BEHAVIOURS, "def break_in_loop(")): 0,
    }
    assert calls == expected
    hits = report.summary.cache_hits
    assert hits is not None and sum(expected.values()) == hits + report.summary.compiles_ok  # none unattributed
    counter = frame_at(report, BEHAVIOURS, _forward_of(BEHAVIOURS, "Counter"))
    assert report.counts(counter).calls_text() == "8 calls ran compiled code, 4 eagerly"


def test_calls_are_counted_for_the_frame_they_ran(runs: dict[str, Future[Run]]) -> None:
    """Frames that share a name and a line (two resume functions of one line, two lambdas), a frame Dynamo skips
    that calls a different compiled function from one instruction, and a frame past the limit called eagerly from
    two lines (call_counts.py says where each count comes from)."""
    report = runs["call-counts"].result().report
    fixture = FIXTURES / "call_counts.py"
    one_line, lambdas = line_of(fixture, "one-line"), line_of(fixture, "lambdas")
    resume = f"torch_dynamo_resume_in_two_breaks_on_one_line_at_{one_line}"

    def decorated(name: str) -> int:  # a decorated function's code starts at its decorator
        return def_line(fixture, f"def {name}(") - 1

    assert sorted((f.name, f.line, f.compiled_calls) for f in report.frames) == sorted(
        [
            ("two_breaks_on_one_line", decorated("two_breaks_on_one_line"), 6),
            (resume, one_line, 6),
            (resume, one_line, 2),
            ("<lambda>", lambdas, 3),
            ("<lambda>", lambdas, 7),
            ("pipeline", decorated("pipeline"), 0),  # skipped: a graph break in a loop
            ("scale", def_line(fixture, "def scale("), 1),
            ("norm", def_line(fixture, "def norm("), 5),
            ("limited", decorated("limited"), 7),
        ]
    )
    assert (report.summary.unattributed_calls, report.missing) == (0, ())
    (hit,) = report.limit_hits
    assert hit.eager_calls == report.summary.eager_fallback_calls == 5  # the frame's own misses, from both lines
    limited = frame_named(report, "limited", fixture)
    assert report.counts(limited).calls_text() == "7 calls ran compiled code, 5 eagerly"


def test_calls_no_frame_is_found_for_make_the_counts_lower_bounds(runs: dict[str, Future[Run]]) -> None:
    report = runs["call-counts-unattributed"].result().report
    fixture = FIXTURES / "call_counts_unattributed.py"
    assert {f.name: f.compiled_calls for f in report.frames} == {"runner": 0, "add_one": 1, "double": 1}
    assert report.summary.unattributed_calls == 4  # double's 4 hits: its caller is skipped, the list is a global
    [said] = [m for m in report.missing if m.startswith("calls per frame:")]
    assert "4 guard checks could not be told apart by frame" in said
    double = frame_named(report, "double", fixture)
    assert report.counts(double).calls_text() == "at least 1 call ran compiled code"


def _forward_of(fixture: Path, cls: str) -> int:
    """The ``def forward`` line of class ``cls`` of the fixture."""
    lines = fixture.read_text(encoding="utf-8").splitlines()
    start = def_line(fixture, f"class {cls}(")
    return next(n for n, text in enumerate(lines[start:], start + 1) if text.strip().startswith("def forward("))


def test_every_live_entry_carries_its_full_guard_list(behaviours: Run) -> None:
    frame = frame_at(behaviours.report, BEHAVIOURS, def_line(BEHAVIOURS, "def forward(self, x):"))
    entry: CacheEntry = frame.cache_entries[3]
    assert entry.guards_from == "cache_entry" and entry.alive_at_exit is True
    assert entry.guard_count is not None and len(entry.guards) >= entry.guard_count - 5
    assert entry.fail_count is not None and entry.fail_count > 0
    assert entry.compile_time_s is not None and entry.compile_time_s > 0
    steps = [g for g in entry.guards if g.source == "L['self'].steps"]
    assert [(g.kind, g.text, g.line) for g in steps] == [
        ("EQUALS_MATCH", "self.steps == 3", line_of(BEHAVIOURS, "counter"))
    ]
    assert all("9490" not in g.text and "1399" not in g.text for g in entry.guards if g.kind == "ID_MATCH")


def test_float_attribute_recompiles_once_then_becomes_dynamic(behaviours: Run) -> None:
    report = behaviours.report
    frame = frame_at(report, BEHAVIOURS, line_of(BEHAVIOURS, "float-read") - 1)
    assert [e.status for e in frame.cache_entries] == ["ok", "ok"]
    (recompile,) = recompiles_of(report, frame)
    culprit = recompile.failed_guards[0]
    assert (culprit.kind, culprit.text, culprit.line) == (
        "EQUALS_MATCH",
        "self.scale == 1.0",
        line_of(BEHAVIOURS, "float-read"),
    )
    dynamic = [g for g in frame.cache_entries[1].guards if g.source == "L['self'].scale"]
    assert dynamic and all(g.kind != "EQUALS_MATCH" for g in dynamic)


def test_bool_flag_costs_one_entry_per_value(behaviours: Run) -> None:
    report = behaviours.report
    frame = frame_at(report, BEHAVIOURS, line_of(BEHAVIOURS, "bool-read") - 1)
    assert len(frame.cache_entries) == 2
    (recompile,) = recompiles_of(report, frame)
    culprit = recompile.failed_guards[0]
    assert (culprit.kind, culprit.text, culprit.line) == (
        "FALSE_MATCH",
        "self.use_relu == False",
        line_of(BEHAVIOURS, "bool-read"),
    )


def test_train_eval_toggle_guards_the_submodule_training_flag_at_the_calling_line(behaviours: Run) -> None:
    report = behaviours.report
    frame = frame_at(report, BEHAVIOURS, line_of(BEHAVIOURS, "block-call") - 1)
    assert len(frame.cache_entries) == 2
    (recompile,) = recompiles_of(report, frame)
    culprit = recompile.failed_guards[0]
    assert (culprit.kind, culprit.text) == ("TRUE_MATCH", "self._modules['drop'].training == True")
    assert culprit.line == line_of(BEHAVIOURS, "block-call")


def test_a_guard_installed_inside_nn_linear_points_at_the_users_call(behaviours: Run) -> None:
    frame = frame_at(behaviours.report, BEHAVIOURS, line_of(BEHAVIOURS, "block-call") - 1)
    (x_guard,) = [g for g in frame.cache_entries[0].guards if g.kind == "TENSOR_MATCH" and g.source == "L['x']"]
    assert x_guard.text == "x: float32[4] stride [1]"
    assert (x_guard.path, x_guard.line) == (str(BEHAVIOURS), line_of(BEHAVIOURS, "block-call"))
    assert x_guard.origin is not None and "torch/nn/modules/linear.py:" in x_guard.origin


def test_shape_change_is_attributed_to_the_call_and_goes_dynamic(behaviours: Run) -> None:
    report = behaviours.report
    frame = frame_named(report, "shaped", BEHAVIOURS)
    assert len(frame.cache_entries) == 2  # four shapes, one recompile: automatic dynamic
    (recompile,) = recompiles_of(report, frame)
    culprit = recompile.failed_guards[0]
    assert culprit.kind == "TENSOR_MATCH" and culprit.source == "L['x']"
    assert culprit.text == "tensor 'x' size mismatch at index 0. expected 2, actual 3"
    assert (culprit.line, culprit.attributed_to) == (line_of(BEHAVIOURS, "shape-call"), "call")
    texts = [g.text for g in frame.cache_entries[1].guards if g.source == "L['x']"]
    assert "x: float32[?, 3] stride [3, 1]" in texts


def test_grad_mode_and_dtype_failures_point_at_the_users_call(behaviours: Run) -> None:
    report = behaviours.report
    frame = frame_named(report, "grad_sensitive", BEHAVIOURS)
    no_grad, double = recompiles_of(report, frame)
    assert [(g.kind, g.text, g.line, g.attributed_to) for g in no_grad.failed_guards] == [
        ("GLOBAL_STATE", "GLOBAL_STATE changed: grad_mode", line_of(BEHAVIOURS, "no-grad-call"), "call")
    ]
    assert [(g.kind, g.text, g.line) for g in double.failed_guards] == [
        ("GLOBAL_STATE", "GLOBAL_STATE changed: grad_mode", line_of(BEHAVIOURS, "double-call")),
        (
            "TENSOR_MATCH",
            "tensor 'x' dtype mismatch. expected Float, actual Double",
            line_of(BEHAVIOURS, "double-call"),
        ),
    ]


def test_entries_invalidated_by_a_dead_module_keep_their_guards_from_the_trace(behaviours: Run) -> None:
    report = behaviours.report
    frame = frame_named(report, "call_module", BEHAVIOURS)
    assert len(frame.cache_entries) == 3
    for entry in frame.cache_entries:
        assert entry.invalidated == "Cache line invalidated because L['module'] got deallocated"
        assert entry.guards_from == "trace" and any(g.kind == "ID_MATCH" for g in entry.guards)
    last = recompiles_of(report, frame)[-1]
    assert [g.entry for g in last.failed_guards] == [f"{frame.frame_id}/1", f"{frame.frame_id}/0"]
    assert {(g.kind, g.text, g.line, g.attributed_to) for g in last.failed_guards} == {
        (
            None,
            "Cache line invalidated because module got deallocated",
            line_of(BEHAVIOURS, "fresh-module-call"),
            "call",
        )
    }


def test_varying_python_int_argument_specialises_once(behaviours: Run) -> None:
    report = behaviours.report
    frame = frame_named(report, "with_int", BEHAVIOURS)
    assert len(frame.cache_entries) == 2
    (recompile,) = recompiles_of(report, frame)
    culprit = recompile.failed_guards[0]
    assert (culprit.kind, culprit.text, culprit.line) == ("EQUALS_MATCH", "n == 2", line_of(BEHAVIOURS, "int-read"))


def test_a_global_changed_between_calls_recompiles_per_value(behaviours: Run) -> None:
    report = behaviours.report
    frame = frame_named(report, "with_global", BEHAVIOURS)
    assert len(frame.cache_entries) == 3
    culprits = [r.failed_guards[0] for r in recompiles_of(report, frame)]
    assert [(c.text, c.source, c.line) for c in culprits] == [
        ("SCALE == 2", "G['SCALE']", line_of(BEHAVIOURS, "global-read")),
        ("SCALE == 3", "G['SCALE']", line_of(BEHAVIOURS, "global-read")),
    ]


def test_graph_breaks_carry_registry_ids_and_user_lines_once_per_line(behaviours: Run) -> None:
    report = behaviours.report
    by_line = {b.line: b for b in report.graph_breaks}
    assert {line: b.gb_id for line, b in by_line.items()} == {
        line_of(BEHAVIOURS, "print"): "GB0059",
        line_of(BEHAVIOURS, "item"): "GB0124",
        line_of(BEHAVIOURS, "loop-print"): "GB0059",
    }
    for marker in ("print", "item"):
        graph_break = by_line[line_of(BEHAVIOURS, marker)]
        assert graph_break.path == str(BEHAVIOURS)
        assert graph_break.explanation and graph_break.hints
        assert graph_break.user_stack[0].line == line_of(BEHAVIOURS, "breaks-call")
    # The new shape recompiles `with_breaks`, which traces the print again: one entry, counted twice.
    printed = by_line[line_of(BEHAVIOURS, "print")]
    frame = frame_named(report, "with_breaks", BEHAVIOURS)
    assert printed.count == 2
    assert printed.compile_ids == tuple(e.compile_id for e in frame.cache_entries)
    resumed = [f for f in report.frames if f.is_resume]
    assert sorted(f.line for f in resumed) == [line_of(BEHAVIOURS, "print"), line_of(BEHAVIOURS, "item")]


def test_frames_dynamo_skipped_are_marked_skipped(behaviours: Run) -> None:
    report = behaviours.report
    nothing = frame_named(report, "nothing_to_compile", BEHAVIOURS)
    in_loop = frame_named(report, "break_in_loop", BEHAVIOURS)
    assert [(e.status, e.guards) for e in nothing.cache_entries] == [("skipped", ())]
    assert [(e.status, e.fail_type) for e in in_loop.cache_entries] == [("skipped", "Unsupported")]
    assert nothing.skipped and in_loop.skipped
    assert report.summary.skipped_frames == 2
    # is it really compiled? the loop's graph break made Dynamo give up on the frame; the other had nothing to compile
    assert in_loop.skipped_because is not None and nothing.skipped_because is None
    [in_the_loop] = [
        f for f in findings_from_report(report) if f.code == "DL503" and f.data["frame"] == "break_in_loop"
    ]
    assert "Dynamo then skipped `break_in_loop` altogether: it runs eagerly on every call" in in_the_loop.message


# --------------------------------------------------------------------------------------------------------------------
# Endings: crash, sys.exit, pytest, SIGTERM, SIGKILL


def test_a_crashing_script_exits_1_with_its_traceback_and_a_report(runs: dict[str, Future[Run]]) -> None:
    run = runs["crash"].result()
    crash = FIXTURES / "crash.py"
    assert run.returncode == 1
    assert run.stdout == "before the crash\n"
    assert run.stderr.rstrip().endswith("ValueError: boom from the user's script")
    assert f'File "{crash}", line {line_of(crash, "raise")}, in <module>' in run.stderr
    assert "shim.py" not in run.stderr and "runpy" not in run.stderr
    report = run.report
    assert (report.exit_code, report.ended_by) == (1, "exception")
    assert report.error is not None
    assert (report.error.type, report.error.path, report.error.line) == (
        "ValueError",
        str(crash),
        line_of(crash, "raise"),
    )
    assert [f.name for f in report.frames] == ["double"]


def test_sys_exit_keeps_the_scripts_exit_code(runs: dict[str, Future[Run]]) -> None:
    run = runs["exits"].result()
    assert (run.returncode, run.stdout) == (3, "exiting with 3\n")
    assert (run.report.exit_code, run.report.ended_by, run.report.error) == (3, "sys_exit", None)
    assert [f.name for f in run.report.frames] == ["<lambda>"]
    assert run.report.argv == ("exits.py",)


def test_torch_trace_keeps_dynamos_structured_trace_for_tlparse(runs: dict[str, Future[Run]]) -> None:
    run = runs["exits"].result()
    assert run.returncode == 3 and len(run.report.frames) == 1
    logs = list((run.report_path.parent.parent / "trace").glob("dedicated_log_torch_trace_*.log"))
    text = logs[0].read_text(encoding="utf-8") if len(logs) == 1 else ""
    # Events the report does not read are still there for tlparse: the trace keeps everything with another handler.
    assert '"dynamo_start"' in text and '"describe_tensor"' in text and '"dynamo_output_graph"' in text


def test_trace_events_nobody_reads_are_not_built_while_ours_is_the_only_handler() -> None:
    import logging
    import traceback

    import torch._logging._internal as internal

    logger = logging.getLogger("torch.__trace")
    saved = (list(logger.handlers), logger.level)
    ours, theirs = logging.NullHandler(), logging.NullHandler()
    built: list[str] = []
    stacks: list[list[str]] = []

    def event(name: str, artifact: str | None = None) -> None:
        def metadata() -> dict[str, str]:
            stacks.append([frame.name for frame in traceback.extract_stack(limit=3)])
            return {"name": artifact} if artifact else {}

        internal.trace_structured(
            name, metadata_fn=metadata, payload_fn=lambda: built.append(artifact or name), suppress_context=True
        )

    logger.handlers[:] = [ours]
    logger.setLevel(logging.DEBUG)
    undo = shim.filter_trace_events(internal, logger, ours)
    try:
        assert undo is not None
        for name in ("describe_tensor", "dynamo_start", "compilation_metrics"):
            event(name)
        event("artifact", "aot_joint_graph")
        event("artifact", "recompile_reasons")
        assert built == ["dynamo_start", "compilation_metrics", "recompile_reasons"]
        # torch reads its own stack while it builds an event (the frame that compiles): nothing of ours is on it.
        # An artifact's metadata is asked once more, by the filter itself, for its name.
        callers = [stack[-2] for stack in stacks]
        torch_builds, filter_asks = "trace_structured", "_trace_event_wanted"
        assert callers == [torch_builds, torch_builds, filter_asks, filter_asks, torch_builds], stacks
        logger.addHandler(theirs)
        event("describe_tensor")
        assert built[-1] == "describe_tensor"
        logger.removeHandler(theirs)
        assert logger.hasHandlers() and len(logger.handlers) == 1  # asked from anywhere else: the real length
    finally:
        if undo is not None:
            undo()
        logger.handlers[:], level = saved
        logger.setLevel(level)
    assert type(logger.handlers) is list


def test_pytest_module_run_reports_the_test_lines(runs: dict[str, Future[Run]]) -> None:
    run = runs["pytest"].result()
    check = FIXTURES / "pkg" / "check_compiled.py"
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 passed" in run.stdout
    report = run.report
    assert report.argv[:3] == ("-m", "pytest", "check_compiled.py::test_counter_recompiles")
    assert len(report.recompiles) == 2
    for recompile in report.recompiles:
        assert recompile.failed_guards[0].line == line_of(check, "counter")
        assert recompile.call_site is not None
        assert (recompile.call_site.path, recompile.call_site.line) == (str(check), line_of(check, "test-call"))
        assert recompile.call_site.name == "test_counter_recompiles"


def test_sigterm_writes_the_report_then_dies_by_the_signal(hanging: dict[str, Future[Hanging]]) -> None:
    process, report_path = hanging["sigterm"].result().process, hanging["sigterm"].result().report_path
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=30) == -signal.SIGTERM
    report = load_report(report_path)
    hangs = FIXTURES / "hangs.py"
    assert (report.ended_by, report.exit_code, report.complete) == ("signal", -signal.SIGTERM, True)
    assert [r.failed_guards[0].line for r in report.recompiles] == [line_of(hangs, "counter")] * 2
    assert report.frames[0].cache_entries[0].fail_count is not None


def test_keyboard_interrupt_reports_and_exits_130(hanging: dict[str, Future[Hanging]]) -> None:
    process, report_path = hanging["sigint"].result().process, hanging["sigint"].result().report_path
    time.sleep(0.5)  # let it get from the print into the sleep
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=30) == 130
    report = load_report(report_path)
    assert (report.ended_by, report.exit_code) == ("keyboard_interrupt", 130)
    assert report.error is not None and report.error.type == "KeyboardInterrupt"
    assert report.error.line == line_of(FIXTURES / "hangs.py", "sleep")


def test_a_program_that_never_compiles_pays_nothing_for_dynamo(runs: dict[str, Future[Run]]) -> None:
    run = runs["no-compile"].result()
    assert (run.returncode, run.stdout) == (0, "[2.0, 2.0] False\n")  # torch._dynamo was never imported
    report = run.report
    assert report.torch_version is not None and report.torch_version.startswith("2.")
    # only the capture of the warnings shown, which needs nothing from torch, was installed
    assert (report.frames, report.sources_ok, report.missing) == ((), {"warnings": True}, ())


def test_a_forked_child_neither_writes_nor_streams_into_the_parents_report(runs: dict[str, Future[Run]]) -> None:
    run = runs["forks"].result()
    assert (run.returncode, run.stdout) == (0, "child exit code 5\n")
    assert [f.name for f in run.report.frames] == ["in_parent"]
    assert "in_child" not in events_path(run.report_path).read_text(encoding="utf-8")


def test_a_killed_run_leaves_an_event_stream_that_rebuilds_a_partial_report(
    hanging: dict[str, Future[Hanging]],
) -> None:
    process, report_path = hanging["sigkill"].result().process, hanging["sigkill"].result().report_path
    process.kill()
    process.wait(timeout=30)
    assert not report_path.exists()
    report = load_partial_report(report_path)
    hangs = FIXTURES / "hangs.py"
    assert (report.complete, report.exit_code, report.ended_by) == (False, None, "unknown")
    assert [r.failed_guards[0].line for r in report.recompiles] == [line_of(hangs, "counter")] * 2
    assert [e.guards_from for e in report.frames[0].cache_entries] == ["trace"] * 3
    assert any("killed" in m for m in report.missing)
    jsonschema.validate(report.to_json(), SCHEMA)


# --------------------------------------------------------------------------------------------------------------------
# Resets and missing sources


def test_reset_starts_a_new_epoch_with_repeating_compile_ids(runs: dict[str, Future[Run]]) -> None:
    run = runs["resets"].result()
    resets = FIXTURES / "resets.py"
    report = run.report
    assert report.summary.resets == 1
    before = frame_named(report, "add_scale", resets, epoch=0)
    after = frame_named(report, "add_scale", resets, epoch=1)
    assert [e.compile_id for e in before.cache_entries] == [e.compile_id for e in after.cache_entries] == ["0/0", "0/1"]
    assert all(e.guards_from == "cache_entry" for e in before.cache_entries + after.cache_entries)
    by_epoch = {r.reset_epoch: r for r in report.recompiles}
    assert by_epoch[0].failed_guards[0].text == "scale == 2"
    assert by_epoch[1].failed_guards[0].text == "scale == 5"
    assert by_epoch[0].call_site is not None and by_epoch[0].call_site.line == line_of(resets, "before-reset")
    assert by_epoch[1].call_site is not None and by_epoch[1].call_site.line == line_of(resets, "after-reset")
    assert {r.failed_guards[0].line for r in report.recompiles} == {line_of(resets, "scale-read")}


def test_missing_sources_are_named_and_the_rest_is_still_reported(runs: dict[str, Future[Run]]) -> None:
    report = runs["disabled"].result().report
    assert {k for k, ok in report.sources_ok.items() if not ok} == {
        "cache_entries",
        "guard_export",
        "guard_complete_hook",
    }
    assert any(m.startswith("cache entries (_debug_get_cache_entry_list): disabled") for m in report.missing)
    assert any("guard_export_fn" in m for m in report.missing)
    assert report.summary.cache_misses is None and report.summary.eager_fallback_calls is None
    entries = [e for f in report.frames for e in f.cache_entries]
    assert entries and all(e.guards_from == "trace" and e.fail_count is None and e.guards for e in entries)
    assert len(report.recompiles) == 2 and report.recompiles[0].failed_guards[0].text == "scale == 2"


def test_without_the_trace_the_cache_entries_still_give_frames_and_guards(runs: dict[str, Future[Run]]) -> None:
    report = runs["no-trace"].result().report
    resets = FIXTURES / "resets.py"
    assert report.sources_ok["trace"] is False
    assert any("without the structured trace" in m for m in report.missing)
    assert report.recompiles == () and report.graph_breaks == ()
    frame = frame_named(report, "add_scale", resets, epoch=1)
    assert [e.guards_from for e in frame.cache_entries] == ["cache_entry", "cache_entry"]
    scale = [(g.kind, g.text, g.line) for e in frame.cache_entries for g in e.guards if g.source == "L['scale']"]
    read = line_of(resets, "scale-read")
    assert scale == [("EQUALS_MATCH", "scale == 5", read), ("TYPE_MATCH", "type(scale) is int", read)]
