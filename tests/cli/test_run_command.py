"""``dynamo-lens run``: argument handling, exit codes, the summary, budgets, formats, and real runs end to end."""

from __future__ import annotations

import json
import sys
import textwrap
from dataclasses import replace
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

from dynamo_lens.cli import main
from dynamo_lens.cli.run_command import budget_problems, exit_code, parse_target, render_text
from dynamo_lens.runtime.report import CacheEntry, FailedGuard, Frame, FrameRef, Guard, LimitHit, Recompile, RunReport
from dynamo_lens.runtime.runner import RunOutcome, Target

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "recompiling_counter.py"


@pytest.mark.parametrize(
    ("script", "module", "expected"),
    [
        (["train.py", "--epochs", "2", "-m", "x"], None, Target(script="train.py", args=("--epochs", "2", "-m", "x"))),
        (["--", "train.py", "--format", "json"], None, Target(script="train.py", args=("--format", "json"))),
        (
            [],
            ["pytest", "-x", "tests/t.py::test", "--timeout", "3"],
            Target(module="pytest", args=("-x", "tests/t.py::test", "--timeout", "3")),
        ),
        (["--", "-m", "pkg.tool", "a"], None, Target(module="pkg.tool", args=("a",))),
    ],
)
def test_everything_after_the_target_belongs_to_it(
    script: list[str], module: list[str] | None, expected: Target
) -> None:
    assert parse_target(script, module) == expected


@pytest.mark.parametrize(("script", "module", "problem"), [([], None, "give a script"), ([], [], "-m needs a module")])
def test_a_missing_target_is_a_usage_error(script: list[str], module: list[str] | None, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        parse_target(script, module)


def test_options_before_the_script_are_ours_and_after_it_the_scripts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--timeout", "5", "missing.py", "--timeout", "x"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # a run that never started has no summary, and its error is not output
    assert captured.err == f"dynamo-lens: error: script not found: missing.py (looked in {tmp_path})\n"
    assert main(["run", "--timeout", "5"]) == 2
    assert "give a script to run (or -m MODULE)" in capsys.readouterr().err


def _outcome(exit_code: int | None, **kwargs: object) -> RunOutcome:
    defaults: dict[str, object] = {
        "report": None,
        "timed_out": False,
        "cancelled": False,
        "error": None,
        "report_path": Path("r.json"),
        "duration_s": 1.0,
    }
    defaults.update(kwargs)
    return RunOutcome(exit_code=exit_code, **defaults)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("code", "exceeded", "expected"),
    [(0, False, 0), (0, True, 1), (3, True, 3), (3, False, 3), (-9, False, 137), (-15, True, 143), (None, False, 2)],
)
def test_exit_code_is_the_scripts_unless_a_clean_run_exceeded_a_budget(
    code: int | None, exceeded: bool, expected: int
) -> None:
    assert exit_code(_outcome(code), exceeded=exceeded) == expected


def test_summary_table_culprits_and_notes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    model = str(tmp_path / "model.py")
    (tmp_path / "model.py").write_text("def forward(self, x):\n    self.steps += 1\n    return x\n\nm(x)\n")
    ref = FrameRef("forward", model, 1, 0, 0)
    steps = Guard("EQUALS_MATCH", "self.steps == 0", "L['self'].steps", model, 2)
    entries = (
        CacheEntry("0/0", "ok", 0.25, guards=(steps,)),
        CacheEntry("0/1", "ok", 0.5, guards=(replace(steps, text="self.steps == 1"),)),
        CacheEntry("0/2", "ok", 0.25),
    )
    failed_steps = FailedGuard("0/0", "self.steps == 0", "EQUALS_MATCH", "L['self'].steps", model, 2, "guard")
    failed_shape = FailedGuard(
        "0/1", "tensor 'x' size mismatch at index 0. expected 2, actual 3", "TENSOR_MATCH", "L['x']", model, 5, "call"
    )
    report = RunReport(
        torch_version="2.13.0+cpu",
        python="3.11",
        argv=("model.py",),
        exit_code=0,
        complete=False,
        frames=(
            Frame("forward", model, 1, 0, 0, False, entries, compiled_calls=3),
            Frame("helper", model, 4, 1, 0, False, (CacheEntry("1/0", "skipped"),)),
        ),
        recompiles=(Recompile("0/1", ref, (failed_steps,)), Recompile("0/2", ref, (failed_shape, failed_steps))),
        limit_hits=(LimitHit("recompile_limit", 8, "", ref, eager_calls=2),),
    )
    outcome = _outcome(0, report=report, notes=("not collected: x",), report_path=tmp_path / "r.json")
    text = render_text(outcome, Target(script="model.py"), [], ["budget exceeded: 2 recompiles > --max-recompiles 1"])
    assert text.splitlines() == [
        "",
        "dynamo-lens: ran model.py in 1.0 s (exit 0, torch 2.13.0+cpu)",
        "compiled frame       compiles  recompiles  graph breaks         limit  compiled calls  compile s",
        "forward  model.py:1         3           2             0  hit, 2 eager               3       1.00",
        "    recompile culprit: `self.steps == 0` (EQUALS_MATCH), guard installed at model.py:2",
        "    recompile culprit: `tensor 'x' size mismatch at index 0. expected 2, actual 3` (TENSOR_MATCH), "
        "triggered by the call at model.py:5",
        "in all: 3 compiles · 2 recompiles · limit hit · 0 graph breaks",
        "1 frame skipped by Dynamo (nothing to compile)",
        "the report is partial: the run was stopped before the shim could finish it",
        "note: not collected: x",
        "budget exceeded: 2 recompiles > --max-recompiles 1",
        "report: r.json",
    ]


def test_a_frame_dynamo_gave_up_on_is_said_to_run_eagerly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    model = str(tmp_path / "model.py")
    reason = (
        "Failed to trace builtin operator\n  Explanation: Dynamo does not know how to trace builtin operator `print`"
    )
    frames = (
        Frame(
            "body", model, 4, 0, 0, False, (CacheEntry("0/0", "skipped", fail_type="Unsupported", fail_reason=reason),)
        ),
        Frame("nothing", model, 11, 1, 0, False, (CacheEntry("1/0", "skipped"),)),
    )
    report = RunReport(torch_version="2.13.0+cpu", python="3.11", argv=("model.py",), exit_code=0, frames=frames)
    text = render_text(_outcome(0, report=report), Target(script="model.py"), [], [])
    assert text.splitlines()[2:5] == [
        "no frame was compiled",
        "`body` model.py:4 runs eagerly: Dynamo skipped it (Failed to trace builtin operator)",
        "1 frame skipped by Dynamo (nothing to compile)",
    ]


def test_budgets_fail_closed_without_a_report() -> None:
    assert budget_problems(None, None, None) == []
    assert budget_problems(None, 3, None) == ["budget not checked: the run left no report"]


# --------------------------------------------------------------------------------------------------------------------
# Real runs (torch 2.13)


@pytest.mark.slow
def test_example_prints_output_table_culprits_and_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(REPO)
    report = tmp_path / "run.json"
    assert main(["run", "--report", str(report), str(EXAMPLE.relative_to(REPO))]) == 0
    out = capfd.readouterr().out
    assert "step 11  loss" in out  # the script's own output passes through
    lines = out.splitlines()
    forward = next(line for line in lines if line.startswith("forward  examples/recompiling_counter.py:25"))
    # 8 entries, 7 recompiles, the ninth compile refused; of the 12 calls 8 ran compiled code (each compile's own
    # call: every later one failed the counter's guard), the 4 past the limit eagerly
    assert forward.split()[-8:-1] == ["8", "7", "1", "hit,", "4", "eager", "8"]
    # the run's totals (forward and its resume after the graph break)
    assert "in all: 16 compiles · 14 recompiles · limit hit · 1 graph break · 4 calls ran eagerly" in lines
    assert (
        "    recompile culprit: `self.steps == 7` (EQUALS_MATCH), guard installed at examples/recompiling_counter.py:26"
        in lines
    )
    recompiled = next(line for line in lines if line.startswith("examples/recompiling_counter.py:26:9: DL501"))
    assert recompiled.startswith(
        "examples/recompiling_counter.py:26:9: DL501 recompiled 7\N{MULTIPLICATION SIGN}: `self.steps == 7` failed"
    )
    assert recompiled.endswith("(confirmed: 7 recompiles, as DL101 predicted)")  # the static scan agrees
    assert any(line.startswith("examples/recompiling_counter.py:26:9: DL502 recompile_limit (8) hit") for line in lines)
    assert any(line.startswith("examples/recompiling_counter.py:28:9: DL503 graph break (GB0124)") for line in lines)
    assert lines[-1] == f"report: {report}"
    document = json.loads(report.read_text())
    schema = resources.files("dynamo_lens.runtime").joinpath("run_report.schema.json").read_text(encoding="utf-8")
    jsonschema.validate(document, json.loads(schema))  # the findings the runner adds keep the report valid
    assert {f["code"] for f in document["findings"]} == {"DL501", "DL502", "DL503"}


@pytest.mark.slow
def test_budgets_turn_a_clean_run_into_exit_1_and_json_keeps_stdout_clean(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(REPO)
    argv = ["run", "--report", str(tmp_path / "r.json"), "--format", "json", "--max-recompiles", "3"]
    assert main([*argv, "--max-graph-breaks", "0", str(EXAMPLE)]) == 1
    captured = capfd.readouterr()
    document = json.loads(captured.out)  # only the findings document: the script's prints went to stderr
    assert document["schema"] == "dynamo-lens.findings"
    assert ("examples/recompiling_counter.py", 26, "DL501") in {
        (f["path"], f["line"], f["code"]) for f in document["findings"]
    }
    assert "step 11  loss" in captured.err
    assert "dynamo-lens: budget exceeded: 15 recompiles > --max-recompiles 3" in captured.err
    assert "dynamo-lens: budget exceeded: 1 graph breaks > --max-graph-breaks 0" in captured.err


@pytest.mark.slow
def test_budgets_that_hold_keep_exit_0_and_sarif_is_valid_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "steady.py"
    script.write_text(
        textwrap.dedent(
            """\
            import torch

            f = torch.compile(lambda x: torch.relu(x) * 2, backend="eager")
            for _ in range(3):
                f(torch.ones(4))
            """
        )
    )
    monkeypatch.chdir(tmp_path)
    argv = ["run", "--format", "sarif", "--max-recompiles", "0", "--max-graph-breaks", "0", "--torch-trace", "trace"]
    assert main([*argv, "steady.py"]) == 0
    sarif = json.loads(capfd.readouterr().out)
    assert sarif["version"] == "2.1.0" and sarif["runs"][0]["results"] == []
    assert (tmp_path / ".dynamo-lens" / "last-run.json").is_file()  # the documented default report path
    (trace,) = (tmp_path / "trace").glob("dedicated_log_torch_trace_*.log")  # for tlparse
    assert '"dynamo_start"' in trace.read_text()


@pytest.mark.slow
def test_dash_m_pytest_runs_a_compiling_test(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "test_model.py").write_text(
        textwrap.dedent(
            """\
            import torch


            def test_compiled_offsets():
                @torch.compile(backend="eager")
                def f(x, n):
                    return x + n

                for n in range(3):
                    f(torch.ones(2), n + 2)
            """
        )
    )
    monkeypatch.chdir(tmp_path)
    code = main(["run", "--report", "r.json", "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_model.py"])
    out = capfd.readouterr().out
    assert code == 0, out
    assert "1 passed" in out
    assert (
        "test_model.py:7:20: DL501 recompiled 1\N{MULTIPLICATION SIGN}: `n == 2` failed (EQUALS_MATCH) in `f`; "
        "entry 0/1 vs 0/0: `n` `== 2` → dynamic (int)"
    ) in out


@pytest.mark.slow
def test_a_failing_script_keeps_its_exit_code_over_a_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "crash.py").write_text(
        'import torch\n\ntorch.compile(lambda x: x + 1, backend="eager")(torch.ones(2))\nraise SystemExit(3)\n'
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DYNAMO_LENS_SHIM_DISABLE", "guard_export")  # as on a torch without guard_export_fn
    assert main(["run", "--python", sys.executable, "--max-recompiles", "0", "crash.py"]) == 3
    out = capfd.readouterr().out
    assert "(exit 3, torch 2.13.0" in out
    assert "note: not collected: guard user stacks (guard_export_fn): disabled by DYNAMO_LENS_SHIM_DISABLE" in out


@pytest.mark.slow
def test_suppressions_and_settings_hide_runtime_findings_but_budgets_count_what_ran(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.dynamo-lens]\nignore = ["DL501"]\n')
    (tmp_path / "known.py").write_text(
        textwrap.dedent(
            """\
            import torch


            @torch.compile(backend="eager")
            def f(x):
                s = x.sum().item()  # dynamo-lens: ignore[DL503]
                return x + s


            for _ in range(3):
                f(torch.randn(4))
            """
        )
    )
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--format", "json", "--max-graph-breaks", "0", "known.py"]) == 1
    captured = capfd.readouterr()
    assert json.loads(captured.out)["findings"] == []
    assert "budget exceeded: 1 graph breaks > --max-graph-breaks 0" in captured.err
    report = json.loads((tmp_path / ".dynamo-lens" / "last-run.json").read_text())
    assert sorted((f["code"], f["line"]) for f in report["findings"]) == [("DL501", 7), ("DL503", 6)]


@pytest.mark.slow
@pytest.mark.parametrize("guarded", [False, True])
def test_a_hook_added_after_compile_that_never_ran_is_reported_at_its_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str], guarded: bool
) -> None:
    script = tmp_path / "late_hooks.py"
    script.write_text((REPO / "tests" / "fixtures" / "runtime" / "late_hooks.py").read_text())
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--report", "r.json", "--format", "json", "late_hooks.py", *(["--guard-hooks"] * guarded)]) == 0
    captured = capfd.readouterr()
    found = [(f["code"], f["line"], f["message"]) for f in json.loads(captured.out)["findings"] if f["code"] == "DL505"]
    if guarded:  # the hook dictionaries are guarded: one recompile, then both hooks run
        assert "hooks ran {'lin': 3, 'block': 3}" in captured.err
        assert found == []
    else:
        assert "hooks ran {'lin': 0, 'block': 3}" in captured.err  # what DL505 says, as the script itself counts
        [(_, line, message)] = found
        assert line == 25  # the submodule's hook; the compiled module's own ran
        assert message.startswith(
            "the forward hook registered here on a `Linear` inside the compiled `Block` never ran: the compiled "
            "module ran 3 times after it was added"
        )
        assert message.endswith("(confirmed: the hook ran 0 of 3 compiled calls, as DL401 predicted)")


@pytest.mark.slow
def test_global_hooks_firing_for_the_compiled_wrapper_are_reported_at_the_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "global_hook.py"
    script.write_text((REPO / "tests" / "fixtures" / "runtime" / "global_hook.py").read_text())
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--report", "r.json", "--format", "json", "global_hook.py"]) == 0
    captured = capfd.readouterr()
    assert "hook fired 3 times per eager call, 4 per compiled call" in captured.err  # what DL507 says, counted
    [(line, message)] = [
        (f["line"], f["message"]) for f in json.loads(captured.out)["findings"] if f["code"] == "DL507"
    ]
    assert line == 17  # `compiled(x)`, where torch's warning points
    assert message.startswith("the global module hooks fire an extra time at each call here")
