"""Run report → findings at the user's lines (DL501/DL502/DL503), the guard diff, and merging with static findings.

The fast tests build reports from guard texts copied from real torch 2.13 runs; the slow ones run real scripts under
the shim (``torch.compile(backend="eager")``) and assert codes and exact lines.
"""

from __future__ import annotations

import sys
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest

from dynamo_lens.model import Edit, Finding, Related, Severity, Span
from dynamo_lens.runtime.attribution import findings_from_report, frame_stats, merge_findings
from dynamo_lens.runtime.guard_diff import (
    diff_entries,
    frame_diffs,
    parse_tensor_guard,
    readable_guard_text,
    readable_source,
    value_history,
)
from dynamo_lens.runtime.report import (
    CacheEntry,
    FailedGuard,
    Frame,
    FrameRef,
    GraphBreak,
    Guard,
    LimitHit,
    Recompile,
    RunReport,
    StackFrame,
    Summary,
)
from dynamo_lens.runtime.runner import Target, run

RAW_TENSOR = (
    "check_tensor(L['x'], Tensor, DispatchKeySet(CPU, BackendSelect, ADInplaceOrView, AutogradCPU), torch.float32, "
    "device=None, requires_grad=False, size=[{size}, 4], stride=[4, 1])  # return x * 2 + n  # r2/shape.py:4 in f"
)
STEPS_HINT = "torch.compile considers integer attributes of the nn.Module to be static."

COUNTER = textwrap.dedent(
    """\
    import torch


    class Counter(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(8, 8)
            self.steps = 0

        def forward(self, x):
            self.steps += 1
            return self.lin(x) * self.steps


    model = torch.compile(Counter(), backend="eager")
    for _ in range(12):
        model(torch.randn(4, 8))
    """
)
COUNTER_DEF, COUNTER_STEPS, COUNTER_CALL = 10, 11, 17


# --------------------------------------------------------------------------------------------------------------------
# guard_diff


@pytest.mark.parametrize(
    ("source", "readable"),
    [
        ("L['self'].steps", "self.steps"),
        ("L['self']._modules['body']._modules['0'].training", "self.body[0].training"),
        ("L['self']._modules['lin']._parameters['weight']", "self.lin.weight"),
        ("L['fn']._modules['1'].count", "fn[1].count"),
        ("G['SCALE']", "SCALE"),
        ("L['self']._buffers['running']", "self.running"),
        ("L['self'].__dict__['_modules']['drop'].training", "self.drop.training"),
    ],
)
def test_sources_read_like_user_code(source: str, readable: str) -> None:
    assert readable_source(source) == readable


def test_verbose_guard_text_loses_dynamos_location_comment() -> None:
    text = "L['n'] == 1                                                   # return x * 2 + n  # r2/shape.py:4 in f"
    assert readable_guard_text(text) == "n == 1"


def test_tensor_guards_parse_raw_and_readable() -> None:
    raw = parse_tensor_guard(RAW_TENSOR.format(size="None"))
    assert raw is not None
    assert (raw.name, raw.dtype, raw.size, raw.stride, raw.requires_grad) == (
        "x",
        "float32",
        (None, "4"),
        ("4", "1"),
        False,
    )
    readable = parse_tensor_guard("x: float32[2, 4] stride [4, 1]")
    assert readable is not None
    assert (readable.name, readable.size, readable.stride) == ("x", ("2", "4"), ("4", "1"))
    assert parse_tensor_guard("self.steps == 0") is None


def _entry(compile_id: str, *guards: Guard, status: str = "ok") -> CacheEntry:
    return CacheEntry(compile_id, status, 0.05, len(guards), guards_from="cache_entry", guards=guards)  # type: ignore[arg-type]


def _steps(value: int, path: str = "/w/model.py", line: int = 11) -> Guard:
    return Guard("EQUALS_MATCH", f"self.steps == {value}", "L['self'].steps", path, line, STEPS_HINT)


def test_diff_shows_the_new_value_of_a_pinned_attribute() -> None:
    noise = Guard("GLOBAL_STATE", "___check_global_state()", None)
    diff = diff_entries(_entry("0/2", _steps(2), noise), _entry("0/3", _steps(3), noise))
    assert diff.render() == "entry 0/3 vs 0/2: `self.steps` `self.steps == 2` → `== 3`"


def test_diff_shows_a_dimension_becoming_dynamic() -> None:
    before = Guard("TENSOR_MATCH", RAW_TENSOR.format(size="4"), "L['x']")
    after = Guard("TENSOR_MATCH", RAW_TENSOR.format(size="None"), "L['x']")
    assert diff_entries(_entry("0/0", before), _entry("0/1", after)).render() == (
        "entry 0/1 vs 0/0: `x` size[0] 4 → dynamic"
    )


def test_diff_shows_an_int_argument_becoming_dynamic() -> None:
    pinned = Guard("EQUALS_MATCH", "L['n'] == 1", "L['n']")
    typed = Guard("TYPE_MATCH", "___check_type_id(L['n'], 1396), type=<class 'int'>", "L['n']")
    assert diff_entries(_entry("0/1", pinned), _entry("0/2", typed)).render() == (
        "entry 0/2 vs 0/1: `n` `== 1` → dynamic (int)"
    )


def test_diff_names_the_global_state_flag_that_changed() -> None:
    def state(grad: str) -> Guard:
        flags = f'{{"allow_tf32":false,"autocast_state":{{"enabled":[false]}},"grad_mode":{grad},"num_threads":2}}'
        return Guard("GLOBAL_STATE", f"___check_global_state() against {flags}", None)

    diff = diff_entries(_entry("0/3", state("true"), _steps(3)), _entry("0/4", state("false"), _steps(4)))
    assert diff.render(focus="(global state)", limit=1) == (
        "entry 0/4 vs 0/3: global state: grad_mode true → false (+1 more guard change)"
    )


def test_identical_entries_have_no_changes_and_history_tracks_values() -> None:
    frame = Frame("forward", "/w/model.py", 10, 0, 0, False, tuple(_entry(f"0/{i}", _steps(i)) for i in range(4)))
    assert [[c.source for c in d.changes] for d in frame_diffs(frame)] == [["self.steps"]] * 3
    assert value_history(frame, "self.steps") == ["0", "1", "2", "3"]
    assert diff_entries(_entry("0/0", _steps(1)), _entry("0/1", _steps(1))).changes == ()


def test_length_guards_read_as_lengths() -> None:
    def log(text: str) -> Guard:
        return Guard("LENGTH_CHECK", text, "L['self'].loss_log")

    empty, one, two = log("not self.loss_log"), log("len(self.loss_log) == 1"), log("len(self.loss_log) == 2")
    frame = Frame("forward", "/w/m.py", 1, 0, 0, False, (_entry("0/0", empty), _entry("0/1", one), _entry("0/2", two)))
    assert value_history(frame, "self.loss_log") == ["0", "1", "2"]
    assert [d.render() for d in frame_diffs(frame)] == [
        "entry 0/1 vs 0/0: `self.loss_log` len 0 → 1",
        "entry 0/2 vs 0/1: `self.loss_log` `len(self.loss_log) == 1` → `== 2`",
    ]


def test_a_limited_diff_shows_the_failing_source_first_and_counts_the_rest() -> None:
    identity = "__builtins_dict___{n}['all'] is <builtin_function_or_method object seen at compile time>"
    older = _entry("0/3", _steps(3), Guard("TRUE_MATCH", "self.drop.training == True", "L['self'].drop.training"))
    newer = _entry(
        "0/4",
        _steps(4),
        Guard("FALSE_MATCH", "self.drop.training == False", "L['self'].drop.training"),
        Guard("ID_MATCH", identity.format(n=10), "G['__builtins_dict___10']['all']"),
    )
    diff = diff_entries(older, newer)
    assert len(diff.changes) == 3
    assert diff.render(focus="self.steps", limit=1) == (
        "entry 0/4 vs 0/3: `self.steps` `self.steps == 3` → `== 4` (+2 more guard changes)"
    )
    assert diff.render(focus=None, limit=3) == (
        "entry 0/4 vs 0/3: `self.steps` `self.steps == 3` → `== 4`; "
        "`self.drop.training` `self.drop.training == True` → `== False` (+1 more guard change)"
    )
    # Dynamo renumbers its builtins dict per compile; the same identity check must not read as a change.
    same = _entry("0/5", Guard("ID_MATCH", identity.format(n=4), "G['__builtins_dict___4']['all']"))
    again = _entry("0/6", Guard("ID_MATCH", identity.format(n=12), "G['__builtins_dict___12']['all']"))
    assert diff_entries(same, again).changes == ()


# --------------------------------------------------------------------------------------------------------------------
# attribution on built reports


def _counter_report(path: str, compiles: int = 8) -> RunReport:
    ref = FrameRef("forward", path, COUNTER_DEF, 0, 0)
    call = StackFrame(path, COUNTER_CALL, "<module>")
    entries = [_entry(f"0/{i}", _steps(i, path, COUNTER_STEPS)) for i in range(compiles)]
    entries.append(CacheEntry(f"0/{compiles}", "recompile_limit"))
    recompiles = tuple(
        Recompile(
            f"0/{n}",
            ref,
            tuple(
                FailedGuard(
                    f"0/{i}",
                    f"self.steps == {i}",
                    "EQUALS_MATCH",
                    "L['self'].steps",
                    path,
                    COUNTER_STEPS,
                    "guard",
                    STEPS_HINT,
                )
                for i in range(n)
            ),
            call,
        )
        for n in range(1, compiles + 1)
    )
    return RunReport(
        torch_version="2.13.0+cpu",
        python="3.11.7",
        argv=(path,),
        exit_code=0,
        frames=(Frame("forward", path, COUNTER_DEF, 0, 0, False, tuple(entries)),),
        recompiles=recompiles,
        limit_hits=(LimitHit("recompile_limit", 8, "0/7: self.steps == 7", ref, f"0/{compiles}", "", call),),
        summary=Summary(eager_fallback_calls=4),
    )


@pytest.fixture
def counter_file(tmp_path: Path) -> str:
    path = tmp_path / "counter.py"
    path.write_text(COUNTER)
    return str(path)


def test_counter_recompiles_are_blamed_on_the_read_of_the_attribute(counter_file: str) -> None:
    findings = findings_from_report(_counter_report(counter_file))
    assert [(f.code, f.span.line) for f in findings] == [("DL501", COUNTER_STEPS), ("DL502", COUNTER_STEPS)]
    recompiled, limit = findings
    assert recompiled.span.column == COUNTER.splitlines()[COUNTER_STEPS - 1].index("self.steps") + 1
    assert recompiled.span.end_column - recompiled.span.column == len("self.steps")
    # 7 recompiles made entries 0/1..0/7; the eighth was refused at the limit (the counts of every view)
    assert recompiled.message.startswith(
        "recompiled 7\N{MULTIPLICATION SIGN}: `self.steps == 7` failed (EQUALS_MATCH) in `forward`, "
        "and refused 1 more at the recompile limit"
    )
    assert "`self.steps` went 0 → 1 → 2 → \N{HORIZONTAL ELLIPSIS} → 7 across 8 entries" in recompiled.message
    assert recompiled.source == "runtime" and recompiled.severity is Severity.WARNING
    assert [r.span.line for r in recompiled.related] == [COUNTER_DEF, COUNTER_CALL]
    assert (recompiled.data["recompiles"], recompiled.data["refused"]) == (7, 1)
    assert recompiled.data["hint"] == STEPS_HINT
    assert recompiled.data["guard_diffs"][-1] == "entry 0/7 vs 0/6: `self.steps` `self.steps == 6` → `== 7`"
    assert limit.severity is Severity.ERROR
    assert "recompile_limit (8) hit for `forward`" in limit.message
    assert "(4 such calls in this run)" in limit.message
    assert [(r.span.line, r.message) for r in limit.related] == [
        (COUNTER_DEF, "`forward` runs eagerly after the limit"),
        (COUNTER_CALL, "first call that ran eagerly"),
    ]


def test_a_limit_hit_without_its_frame_is_placed_from_dynamos_function_text(counter_file: str) -> None:
    report = replace(
        _counter_report(counter_file),
        frames=(),
        recompiles=(),
        limit_hits=(
            LimitHit("recompile_limit", 8, "", None, None, f"'forward' ({counter_file}:{COUNTER_DEF})"),
            LimitHit("accumulated_recompile_limit", 256, "", None, None, "somewhere"),
        ),
    )
    (finding,) = findings_from_report(report)
    assert (finding.code, finding.span.path, finding.span.line, finding.span.column) == (
        "DL502",
        counter_file,
        COUNTER_DEF,
        5,
    )
    assert finding.message.startswith("recompile_limit (8) hit for 'forward' (")


def test_each_limit_hit_counts_its_own_eager_calls(counter_file: str) -> None:
    report = _counter_report(counter_file)
    hit = replace(report.limit_hits[0], eager_calls=3)
    other = replace(hit, limit="accumulated_recompile_limit", value=256, eager_calls=None)
    findings = findings_from_report(replace(report, limit_hits=(hit, other)))
    limits = [f.message for f in findings if f.code == "DL502"]
    assert len(limits) == 2
    assert "(3 such calls in this run)" in limits[0]
    assert "such call" not in limits[1]  # two hits share the run's total: it is not this hit's


def test_tensor_failures_are_blamed_on_the_triggering_call(tmp_path: Path) -> None:
    script = tmp_path / "shapes.py"
    script.write_text(
        "import torch\n\n@torch.compile\ndef f(x):\n    return x * 2\n\nf(torch.ones(2))\nf(torch.ones(3))\n"
    )
    path = str(script)
    ref = FrameRef("f", path, 4, 0, 0)
    failed = FailedGuard(
        "0/0", "tensor 'x' size mismatch at index 0. expected 2, actual 3", "TENSOR_MATCH", "L['x']", path, 8, "call"
    )
    before = Guard("TENSOR_MATCH", "x: float32[2] stride [1]", "L['x']")
    after = Guard("TENSOR_MATCH", "x: float32[None] stride [1]", "L['x']")
    report = RunReport(
        torch_version="2.13.0",
        python="3.11",
        argv=(path,),
        exit_code=0,
        frames=(Frame("f", path, 4, 0, 0, False, (_entry("0/0", before), _entry("0/1", after))),),
        recompiles=(Recompile("0/1", ref, (failed,), StackFrame(path, 8, "<module>")),),
    )
    (finding,) = findings_from_report(report)
    assert (finding.code, finding.span.line, finding.span.column) == ("DL501", 8, 1)
    assert finding.data["attributed_to"] == "call"
    assert finding.message.endswith("entry 0/1 vs 0/0: `x` size[0] 2 → dynamic")
    assert [r.span.line for r in finding.related] == [4]
    (stats,) = frame_stats(report)
    assert (stats.compiles, stats.recompiles, stats.limit_hit) == (2, 1, None)


def test_a_module_reached_through_a_container_is_spelled_as_its_own_code_reads_it(tmp_path: Path) -> None:
    script = tmp_path / "seq.py"
    script.write_text(
        "class Counter(nn.Module):\n    def forward(self, x):\n        self.count += 1\n        return x * self.count\n"
    )
    path = str(script)
    ref = FrameRef("forward", "/torch/nn/modules/container.py", 240, 0, 0)
    failed = FailedGuard(
        "0/0", "fn._modules['1'].count == 1", "EQUALS_MATCH", "L['fn']._modules['1'].count", path, 3, "guard"
    )
    report = RunReport(
        torch_version="2.13.0",
        python="3.11",
        argv=(path,),
        exit_code=0,
        frames=(Frame("forward", "/torch/nn/modules/container.py", 240, 0, 0, False, (_entry("0/0"), _entry("0/1"))),),
        recompiles=(Recompile("0/1", ref, (failed,)),),
    )
    (finding,) = findings_from_report(report)
    assert (finding.span.line, finding.span.column, finding.span.end_column) == (3, 9, 19)
    assert finding.message.startswith(
        "recompiled 1\N{MULTIPLICATION SIGN}: `self.count == 1` failed (EQUALS_MATCH) (Dynamo's name: `fn[1].count`, "
        "reached through a container module)"
    )


def test_a_recompile_without_reason_falls_back_to_the_def(tmp_path: Path) -> None:
    path = str(tmp_path / "gone.py")  # never written: attribution must not need the file
    ref = FrameRef("f", path, 3, 0, 0)
    report = RunReport(
        torch_version="2.13.0",
        python="3.11",
        argv=(path,),
        exit_code=0,
        frames=(Frame("f", path, 3, 0, 0, False, (_entry("0/0"), _entry("0/1"))),),
        recompiles=(Recompile("0/1", ref, ()),),
    )
    (finding,) = findings_from_report(report)
    assert (finding.span.line, finding.span.column, finding.data["attributed_to"]) == (3, 1, "frame")
    assert "the reason was not recorded" in finding.message


def test_graph_break_names_registry_id_explanation_and_hint(tmp_path: Path) -> None:
    script = tmp_path / "gb.py"
    script.write_text("def f(x):\n    y = x.relu()\n    s = y.sum().item()\n    return y + s\n")
    path = str(script)
    ref = FrameRef("f", path, 1, 0, 0)
    gb = GraphBreak(
        "0/0",
        "Unsupported Tensor.item() call with capture_scalar_outputs=False",
        gb_type="Unsupported Tensor.item() call with capture_scalar_outputs=False",
        gb_id="GB0124",
        explanation="Dynamo does not support tracing `Tensor.item()` with config.capture_scalar_outputs=False.",
        hints=("Set `torch._dynamo.config.capture_scalar_outputs = True` ", "to include these operations."),
        path=path,
        line=3,
        frame=ref,
        count=3,
    )
    report = RunReport(
        torch_version="2.13.0",
        python="3.11",
        argv=(path,),
        exit_code=0,
        frames=(Frame("f", path, 1, 0, 0, False, (_entry("0/0"),)),),
        graph_breaks=(gb,),
    )
    (finding,) = findings_from_report(report)
    assert (finding.code, finding.span.line, finding.span.column) == ("DL503", 3, 5)
    assert finding.message == (
        "graph break (GB0124): Unsupported Tensor.item() call with capture_scalar_outputs=False in `f`. Dynamo does "
        "not support tracing `Tensor.item()` with config.capture_scalar_outputs=False. Hint: Set "
        "`torch._dynamo.config.capture_scalar_outputs = True` to include these operations."
    )
    assert finding.data["gb_id"] == "GB0124" and finding.data["count"] == 3


# --------------------------------------------------------------------------------------------------------------------
# merge_findings


def _static(code: str, path: str, line: int, related_line: int | None = None) -> Finding:
    related = () if related_line is None else (Related(Span(path, related_line, 1, related_line, 2), "read here"),)
    return Finding(code, Severity.WARNING, Span(path, line, 9, line, 24), "static message", "static", related)


def test_runtime_finding_confirms_a_static_one_on_the_same_line(counter_file: str) -> None:
    runtime = findings_from_report(_counter_report(counter_file))
    merged = merge_findings([_static("DL101", counter_file, COUNTER_STEPS)], runtime)
    by_code = {f.code: f for f in merged}
    assert set(by_code) == {"DL101", "DL501", "DL502"}
    assert by_code["DL101"].data["confirmed"] == "7 recompiles; recompile_limit hit"
    assert by_code["DL501"].message.endswith("(confirmed: 7 recompiles, as DL101 predicted)")
    assert by_code["DL501"].data["confirms"] == ["DL101"]


def test_a_confirmed_runtime_finding_gains_the_static_compile_site(counter_file: str) -> None:
    runtime = findings_from_report(_counter_report(counter_file))
    site = Related(Span(counter_file, 15, 9, 15, 22), "compiled here")
    static = replace(_static("DL101", counter_file, COUNTER_STEPS), related=(site,))
    recompiled = next(f for f in merge_findings([static], runtime) if f.code == "DL501")
    assert recompiled.related[-1] == site and len(recompiled.related) == 3


def test_static_finding_elsewhere_or_of_another_family_is_not_confirmed(counter_file: str) -> None:
    runtime = findings_from_report(_counter_report(counter_file))
    other_line = _static("DL101", counter_file, COUNTER_DEF + 3)
    graph_break_code = _static("DL301", counter_file, COUNTER_STEPS)
    merged = merge_findings([other_line, graph_break_code], runtime)
    assert all("confirmed" not in f.data and "confirms" not in f.data for f in merged)
    assert len(merged) == 4


def test_a_static_finding_whose_related_read_is_the_runtime_line_is_confirmed(counter_file: str) -> None:
    runtime = findings_from_report(_counter_report(counter_file))
    outside = _static("DL111", counter_file, COUNTER_CALL + 1, related_line=COUNTER_STEPS)
    merged = merge_findings([outside], runtime)
    assert next(f for f in merged if f.code == "DL111").data["confirmed"].startswith("7 recompiles")


# --------------------------------------------------------------------------------------------------------------------
# Real runs (torch 2.13, backend="eager")


def _run_real(tmp_path: Path, source: str, name: str = "script.py") -> RunReport:
    script = tmp_path / name
    script.write_text(textwrap.dedent(source))
    outcome = run(
        Target(script=str(script)),
        report_path=tmp_path / "report.json",
        python=sys.executable,
        cwd=tmp_path,
        timeout_s=120,
        on_stdout=lambda _: None,
        on_stderr=lambda _: None,
    )
    assert outcome.report is not None, outcome.error
    assert outcome.exit_code == 0, outcome.error
    return outcome.report


def _codes_lines(report: RunReport) -> list[tuple[str, int]]:
    return [(f.code, f.span.line) for f in report.findings]


@pytest.mark.slow
def test_real_counter_is_blamed_on_steps_line_with_limit_hit(tmp_path: Path) -> None:
    report = _run_real(tmp_path, COUNTER)
    assert _codes_lines(report) == [("DL501", COUNTER_STEPS), ("DL502", COUNTER_STEPS)]
    recompiled = report.findings[0]
    assert recompiled.data["recompiles"] == 7 and recompiled.data["kind"] == "EQUALS_MATCH"
    assert recompiled.message.startswith("recompiled 7\N{MULTIPLICATION SIGN}: `self.steps == 7` failed (EQUALS_MATCH)")
    counts = report.counts(report.frames[0])
    assert (counts.compiles, counts.recompiles, counts.refused, counts.limit_hits) == (8, 7, 1, 1)


@pytest.mark.slow
def test_real_guard_inside_linear_is_attributed_to_the_users_calling_line(tmp_path: Path) -> None:
    report = _run_real(
        tmp_path,
        """\
        import torch


        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = torch.nn.Linear(8, 8)

            def forward(self, x):
                return self.lin(x).relu()


        net = torch.compile(Net(), backend="eager")
        net(torch.randn(4, 8))
        net(torch.randn(6, 8))
        """,
    )
    # Dynamo installs the TENSOR_MATCH on x inside nn.Linear.forward (torch/nn/modules/linear.py); the guard belongs
    # to the user's line `self.lin(x)`, and its failure (a size change, which carries no line) to the user's call.
    (finding,) = report.findings
    assert (finding.code, finding.span.line, finding.data["attributed_to"]) == ("DL501", 15, "call")
    assert finding.message.endswith("entry 0/1 vs 0/0: `x` size[0] 4 → dynamic")
    def_line, guarded = finding.related
    assert def_line.span.line == 9
    assert (guarded.span.line, guarded.span.column) == (10, 25)
    assert guarded.message.startswith("`x` guarded here (inside ")
    assert guarded.message.endswith("nn/modules/linear.py:134)") and "site-packages" not in guarded.message


@pytest.mark.slow
def test_real_graph_break_carries_registry_id(tmp_path: Path) -> None:
    report = _run_real(
        tmp_path,
        """\
        import torch


        @torch.compile(backend="eager")
        def f(x):
            y = torch.relu(x)
            s = y.sum().item()
            return y + s


        for _ in range(3):
            f(torch.randn(4))
        """,
    )
    # The float from .item() flows into the resume function, which specialises on it once, then makes it dynamic.
    assert _codes_lines(report) == [("DL503", 7), ("DL501", 8)]
    graph_break, recompiled = report.findings
    assert graph_break.data["gb_id"] == "GB0124"
    assert recompiled.data["frame"] == "torch_dynamo_resume_in_f_at_7" and recompiled.data["recompiles"] == 1
    assert recompiled.severity is Severity.INFO  # once, then the float is dynamic: bounded
    assert graph_break.severity is Severity.WARNING
    assert "(`___stack0`: the value computed on line 7, carried across the graph break)" in recompiled.message
    assert "`___stack0` `== " in recompiled.message and "→ dynamic (float)" in recompiled.message


PATTERNS = """\
import torch
from torch import nn

SCALE = 1


class Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = 1.0

    def forward(self, x):
        return x * self.scale


class Flagged(nn.Module):
    def __init__(self):
        super().__init__()
        self.use_relu = True

    def forward(self, x):
        if self.use_relu:
            return x.relu()
        return x - 1


class Dropper(nn.Module):
    def __init__(self):
        super().__init__()
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        return self.drop(x) + 1


def times_global(x):
    return x * SCALE


scaled, flagged, dropper = Scaled(), Flagged(), Dropper()
run_scaled = torch.compile(scaled, backend="eager")
run_flagged = torch.compile(flagged, backend="eager")
run_dropper = torch.compile(dropper, backend="eager")
run_global = torch.compile(times_global, backend="eager")
x = torch.randn(4)
for step in range(3):
    scaled.scale = 1.0 + step
    flagged.use_relu = step % 2 == 0
    dropper.train(step % 2 == 0)
    SCALE = step + 1
    run_scaled(x)
    run_flagged(x)
    run_dropper(x)
    run_global(x)
"""


@pytest.mark.slow
def test_real_state_changed_between_calls_is_blamed_on_each_read(tmp_path: Path) -> None:
    """A float attribute, a bool flag, train()/eval() and a global int, each changed between calls (one run)."""
    report = _run_real(tmp_path, PATTERNS)
    found = {(f.code, f.span.line, f.span.column): f for f in report.findings}
    assert sorted(found) == [("DL501", 13, 20), ("DL501", 22, 12), ("DL501", 33, 16), ("DL501", 37, 16)]
    scale, flag, training, scale_global = (found[key] for key in sorted(found))
    assert "`self.scale == 1.0` failed (EQUALS_MATCH)" in scale.message
    assert "`self.scale` `== 1.0` → dynamic (float)" in scale.message  # floats become dynamic after one recompile
    assert flag.message.endswith("`self.use_relu` `self.use_relu == True` → `== False`")
    assert "`self.drop.training == True` failed (TRUE_MATCH)" in training.message  # installed inside nn.Dropout
    assert scale_global.data["recompiles"] == 2 and "`SCALE` went 1 → 2 → 3 across 3 entries" in scale_global.message


@pytest.mark.slow
def test_real_counter_inside_a_compiled_sequential_reads_as_the_users_attribute(tmp_path: Path) -> None:
    report = _run_real(
        tmp_path,
        """\
        import torch
        from torch import nn


        class Counter(nn.Module):
            def __init__(self):
                super().__init__()
                self.count = 0

            def forward(self, x):
                self.count += 1
                return x * self.count


        seq = torch.compile(nn.Sequential(nn.Linear(4, 4), Counter()), backend="eager")
        for _ in range(3):
            seq(torch.randn(2, 4))
        """,
    )
    # nn.Sequential.forward is torch code: Dynamo compiles its own wrapper frame and names the attribute fn[1].count.
    (finding,) = report.findings
    assert (finding.code, finding.span.line, finding.span.column) == ("DL501", 11, 9)
    assert finding.message == (
        "recompiled 2\N{MULTIPLICATION SIGN}: `self.count == 1` failed (EQUALS_MATCH) (Dynamo's name: `fn[1].count`, "
        "reached through a container module) in `inner (Dynamo's module wrapper)`; `self.count` went 0 → 1 → 2 "
        "across 3 entries"
    )


SHAPES = """
    import torch


    class Scale(torch.nn.Module):
        def forward(self, x, factor=2.0):
            return (x * factor).sum()


    model = torch.compile(Scale(), backend="eager", dynamic=False)
    for n in range(2, 12):
        batch = torch.randn(n, 3)
        model(batch)
"""
SHAPES_CALL = 13
SHAPES_COMPILE = 10


def _applied(source: str, edit: Edit) -> str:
    """``source`` with one edit made, as the editor applies it."""
    lines = textwrap.dedent(source).splitlines(keepends=True)
    start = sum(len(line) for line in lines[: edit.span.line - 1]) + edit.span.column - 1
    end = sum(len(line) for line in lines[: edit.span.end_line - 1]) + edit.span.end_column - 1
    text = "".join(lines)
    return text[:start] + edit.new_text + text[end:]


@pytest.mark.slow
def test_the_fixes_of_a_size_recompile_take_it_to_one_compile(tmp_path: Path) -> None:
    """The fixes DL501 offers for `tensor 'x' size mismatch`, each applied as the editor would, then re-run."""
    before = _run_real(tmp_path, SHAPES)
    [recompiled] = [f for f in before.findings if f.code == "DL501"]
    assert (recompiled.span.line, before.counts().compiles, before.counts().limit_hits) == (SHAPES_CALL, 8, 1)
    # the guard is the user's own line: named once, as the related location, not again as an absolute "inside" path
    assert "`x` guarded here" in [r.message for r in recompiled.related]
    marked, dynamic = recompiled.fixes
    assert marked.title == "Mark `batch` dimension 0 dynamic before this call (`mark_dynamic`)" and not marked.safe
    [edit] = marked.edits
    assert (edit.span.line, edit.span.column, edit.new_text) == (
        SHAPES_CALL,
        1,
        "    torch._dynamo.mark_dynamic(batch, 0)\n",
    )
    assert dynamic.title == "Compile with `dynamic=True` (every size symbolic from the first call)" and dynamic.safe
    [at_site] = dynamic.edits
    assert at_site.span.line == SHAPES_COMPILE and at_site.new_text == "True"  # replaces `dynamic=False`
    for fix in (marked, dynamic):
        after = _run_real(tmp_path, _applied(SHAPES, fix.edits[0]))
        assert (after.counts().compiles, after.counts().recompiles, after.findings) == (1, 0, ()), fix.title


@pytest.mark.slow
def test_sizes_of_one_are_marked_unbacked(tmp_path: Path) -> None:
    """A batch that starts at 1: mark_dynamic would still specialise size 1 (2 compiles); mark_unbacked does not."""
    source = SHAPES.replace("range(2, 12)", "range(1, 12)")
    before = _run_real(tmp_path, source)
    [recompiled] = [f for f in before.findings if f.code == "DL501"]
    marked, _ = recompiled.fixes
    assert marked.title.startswith("Mark `batch` dimension 0 unbacked before this call (`mark_unbacked`")
    assert marked.min_torch == "2.5" and marked.edits[0].new_text == (
        "    torch._dynamo.decorators.mark_unbacked(batch, 0)\n"
    )
    after = _run_real(tmp_path, _applied(source, marked.edits[0]))
    assert (after.counts().compiles, after.counts().recompiles, after.findings) == (1, 0, ())
