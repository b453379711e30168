"""The run report contract (``dynamo-lens.run`` v2): round trip, precise rejection, and agreement with the schema."""

from __future__ import annotations

import copy
import dataclasses
import json
import subprocess
import sys
import time
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from dynamo_lens.runtime.report import (
    CacheEntry,
    Counts,
    FailedGuard,
    Frame,
    FrameRef,
    GraphBreak,
    Guard,
    LimitHit,
    Process,
    Recompile,
    ReportError,
    RunError,
    RunReport,
    SilentHook,
    StackFrame,
    Summary,
    events_path,
    load_report,
    write_report,
)


def _schema() -> dict[str, Any]:
    text = resources.files("dynamo_lens.runtime").joinpath("run_report.schema.json").read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


def _report() -> RunReport:
    user = StackFrame("/w/train.py", 30, "<module>")
    frame = FrameRef("forward", "/w/model.py", 17, frame_id=0, reset_epoch=0)
    guard = Guard(
        kind="EQUALS_MATCH",
        text="self.steps == 0",
        source="L['self'].steps",
        path="/w/model.py",
        line=21,
        hint="torch.compile considers integer attributes of the nn.Module to be static.",
        origin="/w/model.py:21",
        code="self.steps += 1",
    )
    entries = (
        CacheEntry(
            "0/0", "ok", 0.05, 12, call_site=user, call_stack=(user,), guards_from="cache_entry", guards=(guard,)
        ),
        CacheEntry("0/8", "recompile_limit", fail_type="RecompileLimitExceeded", fail_reason="Dynamo recompile limit"),
    )
    return RunReport(
        torch_version="2.13.0+cpu",
        python="3.11.7",
        argv=("train.py", "--steps", "3"),
        exit_code=0,
        duration_s=1.5,
        cwd="/w",
        ended_by="returned",
        config={"recompile_limit": 8, "specialize_float": False},
        frames=(Frame("forward", "/w/model.py", 17, 0, 0, False, entries),),
        recompiles=(
            Recompile(
                "0/1",
                frame,
                (FailedGuard("0/0", "self.steps == 0", "EQUALS_MATCH", "L['self'].steps", "/w/model.py", 21, "guard"),),
                user,
            ),
        ),
        graph_breaks=(
            GraphBreak(
                "0/0",
                "Unsupported Tensor.item() call",
                gb_type="Unsupported Tensor.item() call with capture_scalar_outputs=False",
                gb_id="GB0124",
                hints=("Use torch._dynamo.config.capture_scalar_outputs = True",),
                path="/w/model.py",
                line=22,
                frame=frame,
                compile_ids=("0/0",),
            ),
        ),
        limit_hits=(LimitHit("recompile_limit", 8, "self.steps == 7", frame, "0/8", "'forward' (/w/model.py:17)"),),
        summary=Summary(frames=1, compiles=9, compiles_ok=8, recompiles=8, limit_hits=1, cache_misses=11),
        sources_ok={"trace": True, "cache_entries": True},
        missing=("guard user stacks: torch._dynamo.optimize has no guard_export_fn",),
        error=RunError("ValueError", "boom", "/w/train.py", 31, "Traceback ..."),
    )


def test_round_trip_is_lossless() -> None:
    report = _report()
    document = report.to_json()
    assert document["schema"] == "dynamo-lens.run"
    assert document["version"] == 2
    assert RunReport.from_json(json.loads(json.dumps(document))) == report


def test_a_multi_process_report_nests_each_rank_as_a_whole_document() -> None:
    rank = dataclasses.replace(_report(), process=Process(pid=42, rank=1, local_rank=1, world_size=2))
    report = dataclasses.replace(_report(), process=Process(pid=41), ranks=(rank,))
    document = json.loads(json.dumps(report.to_json()))
    assert document["ranks"][0]["schema"] == "dynamo-lens.run"
    assert document["ranks"][0]["process"] == {"pid": 42, "rank": 1, "local_rank": 1, "world_size": 2}
    jsonschema.validate(document, _schema())
    assert RunReport.from_json(document) == report
    assert [r.rank_label for r in (report, rank)] == ["process 41", "rank 1"]


def test_document_validates_against_the_json_schema() -> None:
    schema = _schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate(_report().to_json(), schema)


def test_schema_names_every_field_of_every_dataclass() -> None:
    defs = _schema()["$defs"]
    pairs = {
        "stack_frame": StackFrame,
        "frame_ref": FrameRef,
        "guard": Guard,
        "cache_entry": CacheEntry,
        "frame": Frame,
        "failed_guard": FailedGuard,
        "recompile": Recompile,
        "graph_break": GraphBreak,
        "limit_hit": LimitHit,
        "error": RunError,
        "summary": Summary,
        "process": Process,
        "silent_hook": SilentHook,
    }
    for name, cls in pairs.items():
        fields = {f.name for f in dataclasses.fields(cls)}
        assert set(defs[name]["properties"]) == fields, name
    top = {f.name for f in dataclasses.fields(RunReport)} | {"schema", "version"}
    assert set(_schema()["properties"]) == top


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d.update(schema="dynamo-lens.findings"), "not a dynamo-lens.run document"),
        (lambda d: d.update(version=3), "unsupported dynamo-lens.run version 3"),
        (lambda d: d.update(ranks=[{"python": "3.11"}]), "ranks[0].argv: required field is missing"),
        (lambda d: d.update(process={"rank": 1}), "process.pid: required field is missing"),
        (lambda d: d.update(version="1"), "version: expected a positive integer"),
        (lambda d: d.pop("python"), "python: required field is missing"),
        (lambda d: d.update(argv="train.py"), "argv: expected a list"),
        (lambda d: d.update(exit_code=True), "exit_code: expected an integer or null"),
        (lambda d: d["frames"][0].update(line=0), "frames[0].line: lines are 1-based, got 0"),
        (
            lambda d: d["frames"][0]["cache_entries"][0]["guards"][0].update(line="21"),
            "frames[0].cache_entries[0].guards[0].line: expected an integer",
        ),
        (
            lambda d: d["frames"][0]["cache_entries"][1].update(status="maybe"),
            "frames[0].cache_entries[1].status: expected one of ok, skipped, recompile_limit, failed",
        ),
        (lambda d: d["recompiles"][0].pop("frame"), "recompiles[0].frame: required field is missing"),
        (lambda d: d["recompiles"][0].update(frame=None), "recompiles[0].frame: expected an object, got None"),
        (lambda d: d["frames"][0]["cache_entries"][0].update(compile_id=""), "compile_id: empty compile id"),
        (lambda d: d["summary"].update(total_compile_time_s="1"), "summary.total_compile_time_s: expected a number"),
        (lambda d: d["error"].update(type=None), "error.type: expected a string, got None"),
        (lambda d: d["graph_breaks"][0].update(hints=[1]), "graph_breaks[0].hints[0]: expected a string"),
        (lambda d: d["limit_hits"][0].update(limit="cache_size"), "limit_hits[0].limit: expected one of"),
        (lambda d: d["config"].update(x=[1]), "config.x: expected a JSON scalar"),
        (lambda d: d.update(sources_ok={"trace": "yes"}), "sources_ok.trace: expected true or false"),
        (lambda d: d.update(findings=[{"code": "DL501"}]), "findings[0]: invalid finding"),
        (lambda d: d.update(findings=["DL501"]), "findings[0]: expected an object, got 'DL501'"),
        (lambda d: d.update(frames={}), "frames: expected a list"),
    ],
)
def test_malformed_documents_name_the_field(mutate: Any, message: str) -> None:
    document = copy.deepcopy(_report().to_json())
    mutate(document)
    with pytest.raises(ReportError, match=message.replace("[", r"\[").replace("]", r"\]")):
        RunReport.from_json(document)


def test_minimal_document_gets_defaults() -> None:
    report = RunReport.from_json(
        {"schema": "dynamo-lens.run", "version": 1, "python": "3.10.0", "argv": ["x.py"], "exit_code": None}
    )
    assert report.frames == ()
    assert report.complete is True
    assert report.ended_by == "unknown"
    assert report.summary == Summary()


def test_counts_are_entries_with_code_and_the_recompiles_that_made_them() -> None:
    """The numbers every view shows: a compile refused at the limit is neither a compile nor a recompile, and a
    graph break or limit hit belongs to the frame it names."""
    forward = Frame(
        "forward",
        "/w/m.py",
        3,
        frame_id=0,
        cache_entries=(CacheEntry("0/0", "ok"), CacheEntry("0/1", "ok"), CacheEntry("0/2", "recompile_limit")),
    )
    resumed = Frame("resume", "/w/m.py", 5, frame_id=1, is_resume=True, cache_entries=(CacheEntry("1/0", "ok"),))
    report = dataclasses.replace(
        _report(),
        frames=(forward, resumed),
        recompiles=(Recompile("0/1", forward.ref), Recompile("0/2", forward.ref)),
        graph_breaks=(GraphBreak("0/0", "item", path="/w/m.py", line=5, frame=forward.ref),),
        limit_hits=(LimitHit("recompile_limit", 8, "", forward.ref),),
    )
    assert report.counts(forward) == Counts(compiles=2, recompiles=1, refused=1, graph_breaks=1, limit_hits=1)
    assert report.counts(resumed) == Counts(compiles=1)
    assert report.counts() == Counts(compiles=3, recompiles=1, refused=1, graph_breaks=1, limit_hits=1)
    assert report.counts(forward) + report.counts(resumed) == report.counts()  # a place with several frames
    assert report.counts().describe() == "3 compiles · 1 recompile · limit hit · 1 graph break"
    assert (
        Counts(compiles=1, eager_calls=4).describe()
        == "1 compile · 0 recompiles · 0 graph breaks · 4 calls ran eagerly"
    )


def test_calls_that_ran_compiled_code_are_counted_per_frame_not_per_run() -> None:
    """A frame's count is what the shim attributed to it; a place adds its frames' counts; a run has none (a call
    that graph-breaks runs its frame and a resume function: two frames' runs, one call)."""
    forward = Frame("forward", "/w/m.py", 3, frame_id=0, cache_entries=(CacheEntry("0/0", "ok"),), compiled_calls=7)
    helper = Frame("helper", "/w/m.py", 9, frame_id=1, cache_entries=(CacheEntry("1/0", "ok"),), compiled_calls=2)
    unknown = Frame("other", "/w/m.py", 20, frame_id=2, cache_entries=(CacheEntry("2/0", "ok"),))
    report = dataclasses.replace(_report(), frames=(forward, helper, unknown))
    assert report.counts(forward).compiled_calls == 7
    assert report.counts(unknown).compiled_calls is None
    assert (report.counts(forward) + report.counts(unknown)).compiled_calls == 7
    assert (report.counts(unknown) + report.counts(unknown)).compiled_calls is None
    assert report.counts().compiled_calls is None
    assert report.counts(helper).describe() == "1 compile · 0 recompiles · 0 graph breaks · 2 calls ran compiled code"
    assert Counts(compiled_calls=1, eager_calls=4).calls_text() == "1 call ran compiled code, 4 eagerly"
    assert Counts(compiled_calls=0).calls_text() == "0 calls ran compiled code"
    assert Counts().calls_text() == ""


def test_frame_lookup_by_ref_respects_reset_epochs() -> None:
    first = Frame("f", "/w/a.py", 3, frame_id=0, reset_epoch=0)
    second = Frame("f", "/w/a.py", 3, frame_id=0, reset_epoch=1)
    report = dataclasses.replace(_report(), frames=(first, second))
    assert report.frame(FrameRef("f", "/w/a.py", 3, 0, 1)) is second
    assert report.frame(FrameRef("f", "/w/a.py", 3, 0, 2)) is None


def test_files_are_written_atomically_and_read_back(tmp_path: Path) -> None:
    target = tmp_path / "run.json"
    write_report(_report(), target)
    assert load_report(target) == _report()
    assert [p.name for p in tmp_path.iterdir()] == ["run.json"]
    assert events_path(target) == tmp_path / "run.json.events.jsonl"


def test_unreadable_files_raise_report_errors(tmp_path: Path) -> None:
    with pytest.raises(ReportError, match="cannot read run report"):
        load_report(tmp_path / "absent.json")
    (tmp_path / "bad.json").write_text("{", encoding="utf-8")
    with pytest.raises(ReportError, match="is not JSON"):
        load_report(tmp_path / "bad.json")


def test_loading_reports_does_not_import_torch() -> None:
    code = "import sys, dynamo_lens.runtime.report; print(sorted(m for m in sys.modules if m.split('.')[0] == 'torch'))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_threads_decoding_at_once_each_get_the_whole_report(monkeypatch: pytest.MonkeyPatch) -> None:
    """The language server loads reports on several threads; the first decode of a type builds its field plan, and
    no thread may decode with half of it (fields silently dropped, or a TypeError)."""
    from concurrent.futures import ThreadPoolExecutor

    from dynamo_lens.runtime import report as report_module

    document = _report().to_json()
    expected = RunReport.from_json(document)
    nullable = report_module._nullable

    def slow_nullable(hint: Any) -> bool:  # widens the window while a plan is being built
        time.sleep(0.002)
        return nullable(hint)

    def decode(delay: float) -> RunReport:
        time.sleep(delay)
        return RunReport.from_json(document)

    monkeypatch.setattr(report_module, "_nullable", slow_nullable)
    report_module._decoder.cache_clear()
    try:
        with ThreadPoolExecutor(max_workers=4) as pool:  # staggered: later threads arrive mid-plan
            decoded = list(pool.map(decode, [0.0, 0.005, 0.01, 0.02]))
    finally:
        report_module._decoder.cache_clear()
    assert all(d == expected for d in decoded)
