"""``run --guard-cost``: the steady-state guard checks per call, measured the documented way (``torch.profiler``'s
``TorchDynamo Cache Lookup``), agree with the profiler; DL506 and its ``guard_filter_fn`` fix."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from dynamo_lens.cli import main
from dynamo_lens.runtime.guard_cost import KNOB, guard_filter_fix, guards_checked
from dynamo_lens.runtime.report import load_report
from dynamo_lens.runtime.shim import HIT_GAP_NS, LOOKUP_EVENT, REGION_EVENT, lookup_samples, summarise_costs

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "runtime"
KNOB_TEXT = f'options={{"guard_filter_fn": {KNOB}}}'


def lookup(thread: int, start: int, duration: int) -> tuple[int, int, int, str]:
    return (thread, start, duration, LOOKUP_EVENT)


def region(thread: int, start: int, duration: int, entry: str) -> tuple[int, int, int, str]:
    return (thread, start, duration, REGION_EVENT + entry)


def test_a_lookup_is_paired_with_the_region_of_the_entry_it_chose() -> None:
    events = [
        lookup(1, 1_000, 20_000), region(1, 21_500, 300_000, "0/0"),  # a hit of 0/0
        lookup(1, 400_000, 10_000), region(1, 410_500, 100_000, "0/0"),
        lookup(1, 600_000, 30_000), region(1, 630_500, 200_000, "0/0"),
    ]  # fmt: skip
    assert lookup_samples(events) == {"0/0": ([20_000, 10_000, 30_000], [300_000, 100_000, 200_000])}
    assert summarise_costs(lookup_samples(events)) == {"0/0": {"calls": 3, "lookup_us": 20.0, "call_us": 200.0}}


def test_a_miss_that_compiled_a_resume_frame_inside_a_region_and_threads_are_told_apart() -> None:
    events = [
        lookup(1, 0, 5_000),  # a miss: the compile takes longer than the hit gap
        region(1, 5_000 + HIT_GAP_NS + 1, 900_000, "0/1"),
        lookup(1, 10_000_000, 8_000), region(1, 10_009_000, 500_000, "0/1"),  # a hit of 0/1 ...
        lookup(1, 10_100_000, 2_000), region(1, 10_102_500, 50_000, "1/0"),  # ... whose resume function hit 1/0
        lookup(2, 10_000_500, 4_000), region(2, 10_005_000, 70_000, "0/1"),  # another thread's hit
        (1, 10_200_000, 1_000, "aten::mul"),
    ]  # fmt: skip
    assert summarise_costs(lookup_samples(events)) == {
        "0/1": {"calls": 2, "lookup_us": 6.0, "call_us": 285.0},
        "1/0": {"calls": 1, "lookup_us": 2.0, "call_us": 50.0},
    }


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            'model = torch.compile(Model(), backend="eager")\n',
            f'model = torch.compile(Model(), backend="eager", {KNOB_TEXT})\n',
        ),
        ('model = torch.compile(Model(), mode="reduce-overhead")\n', None),  # torch refuses mode= with options=
        ("model = torch.compile(Model(), options={})\n", None),  # the user's own options would be lost
    ],
)  # where else the keyword goes, or not: test_compile_call_edit.py
def test_the_knob_goes_into_the_compile_call_on_the_line(line: str, expected: str | None) -> None:
    source = f"import torch\n\n{line}def f(x):\n    return x\n"
    fix = guard_filter_fix("m.py", 3, source)
    if expected is None:
        assert fix is None
        return
    assert fix is not None and not fix.safe and fix.min_torch == "2.8"
    [edit] = fix.edits
    assert edit.span.line == edit.span.end_line == 3
    text = line[: edit.span.column - 1] + edit.new_text + line[edit.span.column - 1 :]
    assert text == expected


@pytest.mark.slow
def test_guard_cost_agrees_with_the_profilers_own_cache_lookup_time(tmp_path: Path) -> None:
    script = tmp_path / "guard_cost_blocks.py"
    script.write_text((FIXTURES / "guard_cost_blocks.py").read_text())
    profiled = subprocess.run(
        [sys.executable, str(script), "--profile"], capture_output=True, text=True, check=True, cwd=tmp_path
    )
    found = re.search(r"profiler: (\d+) lookups, median ([\d.]+) us", profiled.stdout)
    assert found is not None, profiled.stdout
    assert int(found[1]) == 200
    profiler_us = float(found[2])

    assert main(["run", "--guard-cost", "--report", str(tmp_path / "r.json"), "--format", "json", str(script)]) == 0
    report = load_report(tmp_path / "r.json")
    assert report.sources_ok["guard_cost"] is True
    [frame] = report.frames
    [entry] = frame.cache_entries
    assert entry.guard_cost is not None and entry.guard_count is not None and entry.guard_count > 500
    assert entry.guard_cost.calls == 198  # the window opens at the second call, after its lookup
    assert 0.5 <= entry.guard_cost.lookup_us / profiler_us <= 2.0, (entry.guard_cost, profiler_us)
    assert entry.compiled_at is not None and (entry.compiled_at.path, entry.compiled_at.line) == (str(script), 35)


@pytest.mark.slow
def test_costly_guard_checks_are_reported_and_the_knob_makes_them_cheaper(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "guard_cost_many_modules.py"
    source = (FIXTURES / "guard_cost_many_modules.py").read_text()
    script.write_text(source)
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--guard-cost", "--report", "r.json", "--format", "json", script.name]) == 0
    [finding] = [f for f in json.loads(capfd.readouterr().out)["findings"] if f["code"] == "DL506"]
    assert (finding["line"], finding["severity"]) == (17, "info")
    assert re.match(r"guard checks [\d.]+ µs per call \(\d+% of [\d.]+ µs; \d+ guards", finding["message"])
    [[before]] = [frame.cache_entries for frame in load_report(tmp_path / "r.json").frames]
    assert before.guard_cost is not None and before.guard_cost.share >= 0.10

    [fix] = finding["fixes"]
    [edit] = fix["edits"]
    lines = source.splitlines(keepends=True)
    row = lines[edit["line"] - 1]
    lines[edit["line"] - 1] = row[: edit["column"] - 1] + edit["new_text"] + row[edit["column"] - 1 :]
    script.write_text("".join(lines))
    assert main(["run", "--guard-cost", "--report", "r.json", "--format", "json", script.name]) == 0
    assert [f for f in json.loads(capfd.readouterr().out)["findings"] if f["code"] == "DL506"] == []
    [[after]] = [frame.cache_entries for frame in load_report(tmp_path / "r.json").frames]
    checked = guards_checked(before), guards_checked(after)
    assert checked[0] is not None and checked[1] is not None and checked[1] * 4 <= checked[0]  # measured 594 → 82
    assert after.guard_cost is not None and after.guard_cost.lookup_us < before.guard_cost.lookup_us  # 13.8 → 2.1 µs


@pytest.mark.slow
def test_without_guard_cost_nothing_is_profiled(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "f.py"
    script.write_text(
        textwrap.dedent(
            """\
            import torch

            f = torch.compile(lambda x: x + 1, backend="eager")
            for _ in range(3):
                f(torch.ones(2))
            print("profiling:", torch.autograd.profiler._is_profiler_enabled)
            """
        )
    )
    assert main(["run", "--report", str(tmp_path / "r.json"), "--format", "json", str(script)]) == 0
    assert "profiling: False" in capfd.readouterr().err  # the script's own output goes to stderr with --format json
    report = load_report(tmp_path / "r.json")
    assert "guard_cost" not in report.sources_ok
    assert all(e.guard_cost is None for f in report.frames for e in f.cache_entries)


@pytest.mark.slow
def test_a_profiler_of_the_programs_own_is_left_alone(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "own_profiler.py"
    script.write_text(
        textwrap.dedent(
            """\
            import torch

            f = torch.compile(lambda x: x * 2, backend="eager")
            f(torch.ones(2))
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profile:
                for _ in range(10):
                    f(torch.ones(2))
            print("own lookups:", sum(e.name == "TorchDynamo Cache Lookup" for e in profile.events()))
            """
        )
    )
    assert main(["run", "--guard-cost", "--report", str(tmp_path / "r.json"), "--format", "json", str(script)]) == 0
    assert "own lookups: 10" in capfd.readouterr().err  # every one of its calls, as without Dynamo Lens
    report = load_report(tmp_path / "r.json")
    assert any("the program ran its own torch.profiler" in note for note in report.missing)
