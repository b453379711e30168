"""The shim's text parsers and report builder, on strings torch 2.13 really produced (no torch needed here)."""

from __future__ import annotations

import ast
import functools
import json
import logging
import sys
import types
from pathlib import Path

import pytest

from dynamo_lens.runtime import shim
from dynamo_lens.runtime.report import RunReport

SHIM_PATH = Path(shim.__file__)

# Captured from torch 2.13.0 (p01_int_attr_increment.py): one recompile reason, verbatim.
REASON = (
    "0/0: self.steps == 0                                          # self.steps += 1             "
    "# python int: EQUALS_MATCH on self.steps  # mp/r1/p01.py:21 in forward (HINT: torch.compile considers "
    "integer attributes of the nn.Module to be static. If you are observing recompilation, you might want to make "
    "this integer dynamic using torch._dynamo.config.allow_unspec_int_on_nn_module = True, or convert this "
    'integer into a tensor.)\nUser stack trace:\n  File "/tmp/r1/p01.py", line 21, in forward\n'
    "    self.steps += 1             # python int: EQUALS_MATCH on self.steps"
)

GUARD_TREE = """
TREE_GUARD_MANAGER:
+- RootGuardManager
| +- GLOBAL_STATE: ___check_global_state() against {"grad_mode":true}
| +- GuardManager: source=L['x'], accessed_by=FrameLocalsGuardAccessor(key='x', framelocals_idx=1), type=<class 'torch.Tensor'>, tag_safe=(False, False)
| | +- TENSOR_MATCH: check_tensor(L['x'], Tensor, DispatchKeySet(CPU, BackendSelect, ADInplaceOrView, AutogradCPU), torch.float32, device=None, requires_grad=False, size=[4, 8], stride=[8, 1])  # return F.linear(input, self.weight, self.bias)  # nn/modules/linear.py:134 in forward
| +- GuardManager: source=L['self'], accessed_by=FrameLocalsGuardAccessor(key='self', framelocals_idx=0), type=<class '__main__.M'>, tag_safe=(True, False)
| | +- TYPE_MATCH: ___check_type_id(L['self'], 94908658714496), type=<class '__main__.M'>  # self.steps += 1  # mp/r1/p01.py:21 in forward (HINT: type M)
| | +- GuardManager: source=L['self'].steps, accessed_by=GetAttrGuardAccessor(steps), type=<class 'int'>, tag_safe=(True, False)
| | | +- EQUALS_MATCH: L['self'].steps == 0  # self.steps += 1  # mp/r1/p01.py:21 in forward
| | +- NO_TENSOR_ALIASING
| +- TYPE_MATCH: ___check_type_id(L['self'], 94908658714496), type=<class '__main__.M'>  # self.steps += 1  # mp/r1/p01.py:21 in forward (HINT: type M)
"""  # noqa: E501

GRAPH_BREAK = (
    "Graph break in user code at /w/p19.py:15\nGraph Break Reason: Data-dependent branching\n"
    "  Explanation: Detected data-dependent branching (e.g. `if my_tensor.sum() > 0:`).\n"
    "  Hint: Use `torch.cond` to express dynamic control flow.\n\n"
    "  Developer debug context: attempted to jump with TensorVariable()\n\n"
    " For more details about this graph break, please visit: "
    "https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0170.html\n\n"
    'User code traceback:\n  File "/w/p19.py", line 23, in <module>\n    f(x)\n'
    '  File "/w/p19.py", line 15, in f\n    if y.sum() > 0:\n\n'
    'Traceback (most recent call last):\n  File "/torch/_dynamo/symbolic_convert.py", line 1, in wrapper\n'
)


def test_verbose_guard_parts_split_code_source_line_location_and_hint() -> None:
    head = REASON.split("\n", 1)[0].split(": ", 1)[1]
    parts = shim.split_verbose(head)
    assert parts["code"] == "self.steps == 0"
    assert parts["source_line"] == "self.steps += 1             # python int: EQUALS_MATCH on self.steps"
    assert parts["location"] == {"file": "mp/r1/p01.py", "line": 21, "fn": "forward"}
    assert parts["hint"].startswith("torch.compile considers integer attributes")


def test_recompile_reasons_split_entry_text_and_user_stack() -> None:
    parsed = shim.split_reason(REASON)
    assert parsed["entry"] == "0/0"
    assert parsed["stack"] == [["/tmp/r1/p01.py", 21, "forward"]]
    assert shim.split_reason("1/0: tensor 'x' size mismatch at index 0. expected 4, actual 5") == {
        "entry": "1/0",
        "text": "tensor 'x' size mismatch at index 0. expected 4, actual 5",
        "stack": [],
    }


def test_recompile_reason_artifact_is_a_raw_string_for_one_reason_and_json_for_several() -> None:
    assert shim.load_reasons(REASON) == [REASON]
    assert shim.load_reasons(json.dumps(["0/1: a == 1", "0/0: a == 0"])) == ["0/1: a == 1", "0/0: a == 0"]


def test_guard_display_hides_object_ids_and_summarises_tensors() -> None:
    tensor = (
        "check_tensor(L['x'], Tensor, DispatchKeySet(CPU, BackendSelect), torch.float32, device=None, "
        "requires_grad=True, size=[None, 8], stride=[8, 1])"
    )
    assert shim.display_guard(tensor) == "x: float32[?, 8] stride [8, 1] requires_grad"
    assert shim.display_guard("___check_type_id(L['self'], 94908658714496), type=<class '__main__.M'>") == (
        "type(self) is __main__.M"
    )
    assert shim.display_guard("___check_obj_id(L['self'].lin, 139955376852640)") == (
        "self.lin is <the object seen at compile time>"
    )
    assert shim.display_guard("G['SCALE'] == 2") == "SCALE == 2"
    assert "139955" not in shim.display_guard("___check_current_backend(139955376852640)")


def test_guard_tree_text_yields_kind_part_and_source_once_each() -> None:
    guards = shim.parse_guard_tree(GUARD_TREE)
    kinds = [(kind, source) for kind, _part, source in guards]
    assert kinds == [
        ("GLOBAL_STATE", ""),
        ("TENSOR_MATCH", "L['x']"),
        ("TYPE_MATCH", "L['self']"),
        ("EQUALS_MATCH", "L['self'].steps"),
    ]


def test_graph_break_payload_gives_registry_id_type_hints_and_user_frames() -> None:
    parsed = shim.parse_graph_break(GRAPH_BREAK, {"Data-dependent branching": "GB0170"})
    assert parsed["gb_id"] == "GB0170"
    assert parsed["gb_type"] == "Data-dependent branching"
    assert parsed["hints"] == ["Use `torch.cond` to express dynamic control flow."]
    assert parsed["context"] == "attempted to jump with TensorVariable()"
    assert parsed["stack"] == [["/w/p19.py", 23, "<module>"], ["/w/p19.py", 15, "f"]]


def test_user_paths_exclude_torch_installed_packages_and_the_shim() -> None:
    policy = shim.PathPolicy("/venv/lib/site-packages/torch", "/repo/shim.py", ["/usr/lib/python3.11"])
    assert policy.is_user("/home/me/train.py")
    assert not policy.is_user("/venv/lib/site-packages/torch/nn/modules/linear.py")
    assert not policy.is_user("/venv/lib/site-packages/transformers/models/x.py")
    assert not policy.is_user("/usr/lib/python3.11/runpy.py")
    assert not policy.is_user("/repo/shim.py")
    assert not policy.is_user("<string>")


def _events(path: str) -> list[dict[str, object]]:
    """A minimal event stream for one frame that recompiled once, killed before it ended."""
    paths = {"torch_dir": "/nonexistent/torch", "shim_file": "/repo/shim.py", "library_dirs": []}
    call = [[path, 30, "<module>"]]
    start = {"ev": "start", "epoch": 0, "python": "3.11.7", "argv": ["m.py"], "paths": paths, "sources_ok": {}}
    tree = [["EQUALS_MATCH", f"L['self'].steps == 0  # self.steps += 1  # {path[1:]}:21 in forward", "L['self'].steps"]]
    return [
        start,
        {"ev": "compile_start", "epoch": 0, "compile_id": "0/0", "frame_id": 0, "name": "forward", "path": path,
         "line": 17, "call_stack": call},
        {"ev": "guard_tree", "epoch": 0, "compile_id": "0/0", "guards": tree},
        {"ev": "metrics", "epoch": 0, "compile_id": "0/0", "guard_count": 1, "entire_frame_compile_time_s": 0.5,
         "cache_size": 0},
        {"ev": "recompile_reasons", "epoch": 0, "compile_id": "0/1", "reasons": [
            f"0/0: self.steps == 0  # self.steps += 1  # {path[1:]}:21 in forward"]},
        {"ev": "compile_start", "epoch": 0, "compile_id": "0/1", "frame_id": 0, "name": "forward", "path": path,
         "line": 17, "call_stack": call},
    ]  # fmt: skip


def test_a_killed_stream_rebuilds_into_a_valid_partial_report(tmp_path: Path) -> None:
    path = str(tmp_path / "m.py")
    stream = tmp_path / "out.json.events.jsonl"
    stream.write_text("".join(json.dumps(e) + "\n" for e in _events(path)) + '{"ev": "tor', encoding="utf-8")
    report = RunReport.from_json(shim.rebuild_report(str(stream)))
    assert report.complete is False
    assert report.exit_code is None
    entries = report.frames[0].cache_entries
    assert [(e.compile_id, e.status) for e in entries] == [("0/0", "ok"), ("0/1", "failed")]
    assert entries[0].guards[0].path == path and entries[0].guards[0].line == 21  # mangled path resolved
    failed = report.recompiles[0].failed_guards[0]
    assert (failed.kind, failed.text, failed.line, failed.attributed_to) == (
        "EQUALS_MATCH",
        "self.steps == 0",
        21,
        "guard",
    )
    assert any("killed" in m for m in report.missing)


def test_guard_lists_beyond_the_report_budget_are_counted_and_named(monkeypatch: pytest.MonkeyPatch) -> None:
    events = _events("/w/m.py")
    tree = [["EQUALS_MATCH", f"L['a{i}'] == {i}", f"L['a{i}']"] for i in range(5)]
    events[2]["guards"] = tree
    events.append({"ev": "guard_tree", "epoch": 0, "compile_id": "0/1", "guards": tree})
    monkeypatch.setattr(shim, "MAX_TOTAL_GUARDS", 7)
    report = RunReport.from_json(shim.build_report(events))
    entries = report.frames[0].cache_entries
    assert [(len(e.guards), e.guards_omitted) for e in entries] == [(5, 0), (2, 3)]
    assert any("keeps at most 7 guards" in m for m in report.missing)


def test_malformed_events_are_skipped_and_named() -> None:
    events = _events("/w/m.py")
    del events[1]["frame_id"]
    report = RunReport.from_json(shim.build_report(events))
    assert any("malformed 'compile_start' event was skipped" in m for m in report.missing)
    assert [e.compile_id for e in report.frames[0].cache_entries] == ["0/1"]  # the rest of the stream still counts


def test_counts_after_the_program_replaced_the_guard_hook_are_called_partial() -> None:
    events = [*_events("/w/m.py"), {"ev": "calls", "epoch": 0, "hits": 3, "misses": 1, "replaced": True}]
    report = RunReport.from_json(shim.build_report(events))
    assert (report.summary.cache_hits, report.summary.cache_misses) == (3, 1)
    assert any(m.startswith("call counts are partial") for m in report.missing)


def test_eager_calls_count_misses_that_compiled_nothing_across_id_matched_objects() -> None:
    """p18 ``specialized_small_accumulated`` (torch 2.13): one frame, a fresh ID_MATCH'd module per call, so each
    compile starts with ``cache_size`` 0 while ``accumulated_cache_size`` grows; 11 misses, 5 of them compiled."""
    path = "/w/m.py"
    events = _events(path)[:1]
    site = [path, 25, "<module>"]
    for index in range(7):
        compile_id = f"0/{index}"
        events.append(
            {
                "ev": "compile_start",
                "epoch": 0,
                "compile_id": compile_id,
                "frame_id": 0,
                "name": "run",
                "path": path,
                "line": 20,
                "call_stack": [site],
            }
        )
        limit_hit = index == 6
        events.append(
            {
                "ev": "metrics",
                "epoch": 0,
                "compile_id": compile_id,
                "cache_size": None if limit_hit else 0,
                "accumulated_cache_size": None if limit_hit else index,
                "guard_count": None if limit_hit else 9,
                "fail_type": "Unsupported" if limit_hit else None,
                "fail_reason": "Dynamo recompile limit exceeded" if limit_hit else None,
            }
        )
    events.append(
        {
            "ev": "limit",
            "epoch": 0,
            "limit_type": "accumulated_recompile_limit",
            "limit": 6,
            "function": f"'run' ({path}:20)",
            "last_reason": "",
            "call_stack": [site],
        }
    )
    events.append({"ev": "calls", "epoch": 0, "hits": 0, "misses": 11, "miss_sites": [[path, 25, 11]]})
    report = RunReport.from_json(shim.build_report(events))
    (hit,) = report.limit_hits
    assert (hit.limit, hit.value, hit.compile_id, hit.eager_calls) == ("accumulated_recompile_limit", 6, "0/6", 6)
    assert report.summary.eager_fallback_calls == 6


def test_the_shim_imports_only_the_standard_library_and_torch() -> None:
    tree = ast.parse(SHIM_PATH.read_text(encoding="utf-8"))
    imported: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            imported.add(node.module.split(".")[0])
    assert imported - set(sys.stdlib_module_names) == {"torch"}


def test_before_torch_2_5_the_compiled_code_comes_from_the_metrics_not_the_trace_stack() -> None:
    """torch 2.4 logs ``dynamo_start`` with the stack above Dynamo's callback, ending in its own ``convert_frame``
    (measured on 2.4.1: ``__call__`` at convert_frame.py:1116 for every frame); the compile's metrics name the code."""
    events = _events("/w/m.py")
    dynamo = "/nonexistent/torch/_dynamo/convert_frame.py"
    for event in events:
        if event["ev"] == "compile_start":
            event.update(name="__call__", path=dynamo, line=1116)
    events.insert(3, {**events[3], "co_name": "forward", "co_filename": "/w/m.py", "co_firstlineno": 17})
    report = RunReport.from_json(shim.build_report(events))
    [frame] = report.frames
    assert (frame.name, frame.path, frame.line) == ("forward", "/w/m.py", 17)
    assert [e.compile_id for e in frame.cache_entries] == ["0/0", "0/1"]


def test_a_guards_kind_is_its_builder_on_every_torch() -> None:
    """``Guard.create_fn_name()`` is missing before torch 2.5 (measured on 2.4.1: every export failed with an
    AttributeError); the kind is then read from ``create_fn`` itself, a builder method or a partial of one."""

    class Builder:
        def EQUALS_MATCH(self) -> None: ...

    class OldGuard:
        def __init__(self, create_fn: object) -> None:
            self.create_fn = create_fn

    class NewGuard(OldGuard):
        def create_fn_name(self) -> str:
            return "TENSOR_MATCH"

    assert shim._guard_kind(OldGuard(Builder.EQUALS_MATCH)) == "EQUALS_MATCH"
    assert shim._guard_kind(OldGuard(functools.partial(Builder.EQUALS_MATCH))) == "EQUALS_MATCH"
    assert shim._guard_kind(NewGuard(Builder.EQUALS_MATCH)) == "TENSOR_MATCH"


def test_before_torch_2_5_recompile_reasons_are_paired_with_the_entries_newest_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """torch 2.4's convert_frame asks ``get_and_maybe_log_recompilation_reason`` for one reason per cache entry,
    newest first, with no compile ids (and its trace has no ``recompile_reasons`` artifact): measured on 2.4.1, the
    bundled example then said "recompile reasons were not collected". The shim pairs them with the frame's entries."""
    fake_convert_frame = types.ModuleType("torch._dynamo.convert_frame")
    fake_convert_frame.get_and_maybe_log_recompilation_reason = lambda entry, frame: ["steps == 1", "steps == 0"]  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch._dynamo.convert_frame", fake_convert_frame)
    collector = shim.Collector(str(tmp_path / "r.json"), ["m.py"])
    compile_context = types.SimpleNamespace(current_compile_id=lambda: "0/2")
    collector.torch = types.SimpleNamespace(_guards=types.SimpleNamespace(CompileContext=compile_context))
    assert collector.produced is None  # kept only where torch's reasons carry no ids
    collector._install_reasons_before_2_5()
    assert collector.produced is not None
    collector.produced[(0, 0)] = ["0/0", "0/1"]
    assert fake_convert_frame.get_and_maybe_log_recompilation_reason(None, None) == ["steps == 1", "steps == 0"]
    events = [json.loads(line) for line in (tmp_path / "r.json.events.jsonl").read_text().splitlines()]
    [reasons] = [e for e in events if e["ev"] == "recompile_reasons"]
    assert (reasons["compile_id"], reasons["reasons"]) == ("0/2", ["0/1: steps == 1", "0/0: steps == 0"])


def test_a_graph_breaks_log_record_before_2_6_becomes_a_graph_break_event() -> None:
    """torch 2.4.1 logs `Graph break: from user code at:` with the user's frame in the message and the Unsupported
    error as the record's exception (captured there); the event reads as the trace's own graph-break text."""
    emitted: list[tuple[str, dict[str, object]]] = []
    stream = types.SimpleNamespace(emit=lambda kind, **fields: emitted.append((kind, fields)))
    current = types.SimpleNamespace(current_compile_id=lambda: "0/0")
    fake_torch = types.SimpleNamespace(_guards=types.SimpleNamespace(CompileContext=current))
    collector = types.SimpleNamespace(stream=stream, torch=fake_torch, internal_error=None)
    handler = shim.GraphBreakLogHandler(collector)  # type: ignore[arg-type]
    error = Exception("call_function BuiltinVariable(print) [ConstantVariable()] {}")
    record = logging.LogRecord(
        "torch._dynamo.symbolic_convert.__graph_breaks",
        logging.DEBUG,
        __file__,
        1,
        'Graph break: from user code at:\n  File "/tmp/g14/gb.py", line 10, in f\n    print("hi")\n',
        None,
        (Exception, error, None),
    )
    handler.emit(record)
    [(kind, fields)] = emitted
    parsed = shim.parse_graph_break(str(fields["text"]), {})
    assert (kind, fields["compile_id"]) == ("graph_break", "0/0")
    assert parsed["at"] == ["/tmp/g14/gb.py", 10, ""]
    assert parsed["reason"] == "call_function BuiltinVariable(print) [ConstantVariable()] {}"
    assert parsed["stack"] and parsed["stack"][0][:2] == ["/tmp/g14/gb.py", 10]
