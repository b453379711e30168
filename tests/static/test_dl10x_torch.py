"""DL101-DL106 agree with torch 2.13: each runnable fixture runs under ``torch.compile(backend="eager")``.

All fixtures run in one subprocess (``torch_probe.py``, torch imported once). For every case the test checks that

* torch compiled the frame as often as the rule's docs claim (1 = free, 2 = one extra compile, 8 + limit = the
  frame ends up eager), and broke the graph where DL106 says it does;
* the static analysis reports the code on exactly the marked lines, at the severity that matches that cost
  (``warning`` for unbounded recompiles or a break on every call, ``info`` for one extra compile), and nothing on the
  negatives;
* every failing guard torch reports points at a line the finding names: its own line or a related location (the
  read that installed the guard).
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from oracle import FLOAT_ANY_POLICY, INT_AS_INPUT, ORACLE_PYTHON, Differs, earliest_before, oracle_torch

from dynamo_lens.model import Finding, Fix, Severity
from dynamo_lens.static import link, summarize
from dynamo_lens.torch_facts import (
    COMPILE_LIMIT_KEYWORD_SINCE,
    FLOAT_DYNAMIC_SINCE,
    FLOAT_POLICY_SINCE,
    INT_MODULE_ATTR_STATIC_SINCE,
    RECOMPILE_LIMIT_NAME_SINCE,
    SET_STANCE_SINCE,
    Release,
    limit_setting,
)

pytestmark = [pytest.mark.oracle, pytest.mark.usefixtures("describe_oracle_torch")]

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "static"
PROBE = Path(__file__).with_name("torch_probe.py")
LIMIT = 8  # torch._dynamo.config.recompile_limit on 2.13


@dataclass(frozen=True)
class Case:
    fixture: str
    code: str
    compiles: int
    limit_hit: bool = False
    severity: str | None = None
    """Severity of the static finding; None for a negative (no finding)."""
    graph_break: str | None = None
    """The graph-break registry id torch must report on the marked line."""
    breaks_at: frozenset[int] | None = frozenset()
    """Lines other than the marked ones where torch breaks the graph (a call Dynamo cannot trace), any id; None
    where that differs between releases and the claim does not rest on it."""
    raises: bool = False
    """The compile past the limit raises ``FailOnRecompileLimitHit`` (``fullgraph=True``) instead of going eager."""
    stance: str = ""
    """The ``torch.compiler.set_stance`` the fixture sets after a warm-up call, which the message must name."""
    before: tuple[Differs, ...] = ()
    """What older releases do instead (the earliest bound that applies wins)."""
    needs: Release | None = None
    """The release that added what the fixture uses (a setting, a keyword): older ones cannot run it."""
    lines: frozenset[int] | None = None
    """The lines the finding is on where they are not the marks (set by :meth:`on`)."""

    @property
    def path(self) -> Path:
        return FIXTURES / self.fixture

    def on(self, release: Release | None) -> Case:
        """What this case expects on ``release`` (the oracle's torch); skips the test where it cannot run."""
        found = earliest_before(release, self.before, self.needs)
        if found is None:
            return self
        return replace(
            self,
            compiles=found.compiles,
            limit_hit=found.limit_hit,
            severity=found.severity,
            raises=self.raises and found.limit_hit,
            lines=found.lines,
            before=(),
        )


CASES = (
    Case("DL101_run_counter.py", "DL101", LIMIT, limit_hit=True, severity="warning", before=(INT_AS_INPUT,)),
    Case("DL101_run_counter_loop_bound.py", "DL101", LIMIT, limit_hit=True, severity="warning"),  # all releases
    Case("DL101_run_counter_reset.py", "DL101", LIMIT, limit_hit=True, severity="warning", before=(INT_AS_INPUT,)),
    Case(
        "DL101_counter_in_block_built_from_config.py",
        "DL101",
        LIMIT,
        limit_hit=True,
        severity="warning",
        before=(INT_AS_INPUT,),
    ),
    # the limit the project sets, and what the compile past it does, decide the message
    Case(
        "DL101_run_counter_raised_limit.py",
        "DL101",
        12,
        limit_hit=True,
        severity="warning",
        before=(INT_AS_INPUT,),
        needs=RECOMPILE_LIMIT_NAME_SINCE,
    ),
    Case(
        "DL101_run_counter_accumulated_limit.py",
        "DL101",
        5,
        limit_hit=True,
        severity="warning",
        before=(INT_AS_INPUT,),
        needs=RECOMPILE_LIMIT_NAME_SINCE,
    ),  # the lower cap
    Case(
        "DL101_run_counter_accumulated_limit_fullgraph.py",
        "DL101",
        6,
        limit_hit=True,
        severity="warning",
        raises=True,
        before=(INT_AS_INPUT,),
    ),
    Case(
        "DL101_run_counter_call_limit.py",
        "DL101",
        4,
        limit_hit=True,
        severity="warning",
        needs=COMPILE_LIMIT_KEYWORD_SINCE,
    ),
    Case(
        "DL101_run_counter_patched_limit.py",
        "DL101",
        12,
        limit_hit=True,
        severity="warning",
        before=(INT_AS_INPUT,),
        needs=RECOMPILE_LIMIT_NAME_SINCE,
    ),  # patch decorator
    Case(
        "DL101_run_counter_patched_limit_with.py",
        "DL101",
        12,
        limit_hit=True,
        severity="warning",
        before=(INT_AS_INPUT,),
        needs=RECOMPILE_LIMIT_NAME_SINCE,
    ),  # with patch
    Case(
        "DL101_run_counter_fullgraph.py",
        "DL101",
        LIMIT,
        limit_hit=True,
        severity="warning",
        raises=True,
        before=(INT_AS_INPUT,),
    ),
    Case(
        "DL101_compiled_by_base_method.py", "DL101", LIMIT, limit_hit=True, severity="warning", before=(INT_AS_INPUT,)
    ),
    # set_stance after a warm-up call: a recompile raises, or the call runs eagerly, instead of compiling
    Case(
        "DL101_run_counter_fail_on_recompile.py",
        "DL101",
        1,
        severity="warning",
        stance="fail_on_recompile",
        needs=SET_STANCE_SINCE,
    ),
    Case(
        "DL101_run_counter_eager_on_recompile.py",
        "DL101",
        1,
        severity="warning",
        stance="eager_on_recompile",
        needs=SET_STANCE_SINCE,
    ),
    Case(
        "DL101_run_counter_force_eager.py", "DL101", 0, severity="hint", needs=SET_STANCE_SINCE
    ),  # force_eager first: nothing compiles
    Case("DL101_run_bool_toggle.py", "DL101", 2, severity="info"),
    Case("DL101_run_float_decay.py", "DL101", 2, severity="info", before=FLOAT_ANY_POLICY[:1]),
    Case(
        "DL101_run_float_dynamic_false.py", "DL101", LIMIT, limit_hit=True, severity="warning", before=FLOAT_ANY_POLICY
    ),
    Case(
        "DL101_run_float_automatic_dynamic_off.py",
        "DL101",
        LIMIT,
        limit_hit=True,
        severity="warning",
        before=FLOAT_ANY_POLICY,
    ),
    Case(
        "DL101_ok_run_float_dynamic_true.py",
        "DL101",
        1,
        before=(
            Differs(FLOAT_DYNAMIC_SINCE, LIMIT, limit_hit=True, severity="warning", lines=frozenset({19})),
            Differs(FLOAT_POLICY_SINCE, 2, severity="info", lines=frozenset({19})),
        ),
    ),
    Case("DL101_run_plain_object.py", "DL101", 2, severity="info"),
    Case(
        "DL101_run_helper_object_counter.py", "DL101", LIMIT, limit_hit=True, severity="warning", before=(INT_AS_INPUT,)
    ),
    Case("DL101_ok_run_write_first.py", "DL101", 1),
    Case("DL101_ok_run_counter_tensor_set_in_setup.py", "DL101", 1),
    Case("DL101_ok_run_isinstance_of_unknown_part.py", "DL101", 1),  # an isinstance test does not pick a subclass
    Case("DL101_ok_run_wrapped_only_when_not_a_part.py", "DL101", 1),  # `if not isinstance(...)` excludes the class
    # what a compile site compiles (the semantic layer): each counter is a warning only if the target resolves
    Case("DL101_run_chained_to_eval.py", "DL101", LIMIT, limit_hit=True, severity="warning", before=(INT_AS_INPUT,)),
    Case(
        "DL101_run_annotated_assignment.py", "DL101", LIMIT, limit_hit=True, severity="warning", before=(INT_AS_INPUT,)
    ),
    Case(
        "DL101_run_conditional_construction.py",
        "DL101",
        LIMIT,
        limit_hit=True,
        severity="warning",
        before=(INT_AS_INPUT,),
    ),
    Case("DL101_run_blocks_from_constructor.py", "DL101", LIMIT, limit_hit=True, severity="warning"),
    Case(
        "DL101_run_regional_compile_loop.py", "DL101", LIMIT, limit_hit=True, severity="warning", before=(INT_AS_INPUT,)
    ),
    Case("DL101_run_isinstance_filter_script.py", "DL101", 1, severity="hint"),
    Case(
        "DL101_run_regional_compile_setitem.py",
        "DL101",
        LIMIT,
        limit_hit=True,
        severity="warning",
        before=(INT_AS_INPUT,),
    ),
    Case(
        "DL101_run_self_compile_method.py", "DL101", LIMIT, limit_hit=True, severity="warning", before=(INT_AS_INPUT,)
    ),
    Case("DL101_run_module_argument.py", "DL101", LIMIT, limit_hit=True, severity="warning", before=(INT_AS_INPUT,)),
    Case(
        "DL101_run_annotated_parameter.py", "DL101", LIMIT, limit_hit=True, severity="warning", before=(INT_AS_INPUT,)
    ),
    Case("DL101_run_module_global.py", "DL101", LIMIT, limit_hit=True, severity="warning"),
    Case("DL101_run_tuple_factory.py", "DL101", LIMIT, limit_hit=True, severity="warning", before=(INT_AS_INPUT,)),
    Case(
        "DL101_run_annotated_cache_attr.py", "DL101", LIMIT, limit_hit=True, severity="warning", before=(INT_AS_INPUT,)
    ),
    Case("DL101_run_previous_size.py", "DL101", 2, severity="info"),
    # a literal argument (or the default it leaves) selects which `return` of a getter is compiled
    Case("DL101_run_literal_selects_return.py", "DL101", 1, severity="hint"),
    Case(
        "DL101_run_default_selects_return.py",
        "DL101",
        LIMIT,
        limit_hit=True,
        severity="warning",
        before=(INT_AS_INPUT,),
    ),
    # a counter under `if self.<flag>:`: reported as the flag's known values say (literal on: warning; unread: hint)
    Case("DL101_run_flag_set_literal.py", "DL101", LIMIT, limit_hit=True, severity="warning", before=(INT_AS_INPUT,)),
    Case("DL101_run_flag_from_config.py", "DL101", 1, severity="hint"),
    # one key of an nn.ModuleDict built with dict(...) and .update({...}) holds only what was stored under it
    Case("DL101_run_module_dict_key.py", "DL101", 1, severity="hint"),
    # a call Dynamo cannot trace (a stdlib queue's method, as a simulator's step) in a loop: the frame runs eagerly,
    # nothing recompiles, and the scan, which cannot see into the call, says so in a hint; before such a call outside
    # any loop, the frame is compiled up to it and the counter guarded
    # (whether and where torch reports the break differs between releases: not asserted)
    Case(
        "DL101_run_counter_beside_opaque_call_in_loop.py",
        "DL101",
        0,
        severity="hint",
        breaks_at=None,
        # up to 2.10 `forward` compiled once, and never again (measured on 2.4.1 to 2.10.0; 0 from 2.11.0)
        before=(Differs(Release(2, 11), 1, severity="hint"),),
    ),
    Case(  # a call outside the loop after it starts no resume function: the skipped frame runs on as plain Python
        "DL101_run_counter_after_opaque_loop_and_call.py",
        "DL101",
        0,
        severity="hint",
        breaks_at=None,
        before=(Differs(Release(2, 11), 1, severity="hint"),),
    ),
    Case(  # the helper that reads the counter after the loop runs as a frame of its own, with no tensor work
        "DL101_run_counter_read_by_helper_after_opaque_loop.py", "DL101", 1, severity="hint", breaks_at=None
    ),
    Case(
        "DL101_run_counter_before_opaque_call.py",
        "DL101",
        LIMIT,
        limit_hit=True,
        severity="warning",
        breaks_at=None,
        before=(INT_AS_INPUT,),
    ),
    Case("DL102_run_append.py", "DL102", LIMIT, limit_hit=True, severity="warning"),
    Case("DL102_run_stats_key.py", "DL102", 2, severity="info"),
    Case("DL102_ok_run_prepopulated.py", "DL102", 1),
    Case("DL102_run_lookup_cache.py", "DL102", 2, severity="info"),
    # the same cache, compiled and called once per fresh object (`torch.compile(module)(x)` in a test): no next call
    Case("DL102_ok_compiled_once_inline.py", "DL102", 1),
    Case("DL102_ok_compiled_once_built_by_helper.py", "DL102", 1),
    # called once where compiled, but on a module-level object every call shares: the cache is met again
    Case("DL102_run_compiled_inline_shared.py", "DL102", 2, severity="info"),
    Case("DL102_run_by_name.py", "DL102", LIMIT, limit_hit=True, severity="warning"),
    Case("DL103_ok_run_hasattr_guarded_write.py", "DL103", 1),
    Case("DL103_run_hasattr.py", "DL103", 2, severity="info"),
    Case(  # before 2.8: absent, its first value, then a symbolic int
        "DL103_run_getattr_counter.py",
        "DL103",
        LIMIT,
        limit_hit=True,
        severity="warning",
        before=(Differs(INT_MODULE_ATTR_STATIC_SINCE, 3, severity="info"),),
    ),
    Case("DL103_ok_run_write_only.py", "DL103", 1),
    Case("DL104_run_setattr.py", "DL104", 3, severity="warning"),
    Case("DL105_run_none_cache.py", "DL105", 2, severity="info"),
    Case("DL105_run_growing.py", "DL105", 2, severity="info"),
    Case("DL105_ok_run_same_shape.py", "DL105", 1),
    # a helper object that is not a module, called from the compiled forward: traced and guarded like a module
    Case("DL105_run_helper_lazy_list.py", "DL105", 2, severity="info"),
    Case("DL105_ok_run_list_written_first.py", "DL105", 1),
    Case("DL105_ok_run_filled_by_reset_parameters.py", "DL105", 1),
    Case("DL106_run_linear.py", "DL106", 1, severity="warning", graph_break="GB0264"),
    Case("DL106_ok_run_activation.py", "DL106", 1),
)


def marked_lines(case: Case) -> set[int]:
    lines = case.path.read_text(encoding="utf-8").splitlines()
    code, _, comment = zip(*(text.rpartition("#") for text in lines), strict=True)
    return {n for n in range(1, len(lines) + 1) if code[n - 1].strip() and case.code in comment[n - 1]}


def static_findings(case: Case) -> list[Finding]:
    path = str(case.path)
    return [f for f in link([summarize(path, case.path.read_text(encoding="utf-8"))]) if f.code == case.code]


@pytest.fixture(scope="module")
def observed() -> dict[str, dict[str, Any]]:
    done = subprocess.run(
        [ORACLE_PYTHON, str(PROBE), *(str(c.path) for c in CASES)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    results: dict[str, dict[str, Any]] = json.loads(done.stdout)
    return {case.fixture: results[str(case.path)] for case in CASES}


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.fixture)
def test_torch_compiles_as_the_docs_claim(case: Case, observed: dict[str, dict[str, Any]]) -> None:
    case = case.on(oracle_torch().release)
    seen = observed[case.fixture]
    if case.raises:
        assert "FailOnRecompileLimitHit" in str(seen["error"]), seen["error"]
    elif case.stance == "fail_on_recompile":
        assert "Detected recompile when torch.compile stance is 'fail_on_recompile'" in str(seen["error"])
    else:
        assert seen["error"] is None, seen["error"]
    frames = {k: v for k, v in seen["compiles"].items() if not k.startswith("torch_dynamo_resume_in_")}
    assert max(frames.values(), default=0) == case.compiles, seen["compiles"]
    assert bool(seen["limit_hits"]) == case.limit_hit, seen["limit_hits"]
    breaks = [g for g in seen["graph_breaks"] if g["path"] == str(case.path)]
    if case.breaks_at is not None:
        assert {g["line"] for g in breaks} == (marked_lines(case) if case.graph_break else case.breaks_at), breaks
    if case.graph_break is not None and oracle_torch().gb_ids():  # no ids before 2.8, which ships no registry
        assert {g["gb_id"] for g in breaks} == {case.graph_break}


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.fixture)
def test_static_finding_matches_what_torch_did(case: Case, observed: dict[str, dict[str, Any]]) -> None:
    case = case.on(oracle_torch().release)
    findings = static_findings(case)
    if case.severity is None:
        # a hint claims nothing about compiled code (a counter in a forward that no compile site reaches)
        claims = [f for f in findings if f.severity is not Severity.HINT]
        assert not claims, [f.message for f in claims]
        assert not observed[case.fixture]["recompiles"]
        return
    assert {f.span.line for f in findings} == (case.lines or marked_lines(case))
    assert {f.severity.value for f in findings} == {case.severity}
    named = {f.span.line for f in findings} | {r.span.line for f in findings for r in f.related}
    guard_lines = {r["line"] for r in observed[case.fixture]["recompiles"] if r["path"] == str(case.path)}
    guard_lines.discard(None)  # tensor size guards carry no source line
    assert guard_lines <= named, (guard_lines, named)


@pytest.mark.slow
@pytest.mark.parametrize("case", [c for c in CASES if c.limit_hit], ids=lambda c: c.fixture)
def test_limit_the_message_states_is_the_one_torch_hit(case: Case) -> None:
    """Where torch hit the limit, the message names the limit it hit (the compiles it allowed) and what came next:
    eager code, or the ``FailOnRecompileLimitHit`` that ``fullgraph=True`` raises; on a release where it does not
    hit it, the message claims no limit. The setting has the name the release gives it."""
    case = case.on(oracle_torch().release)
    findings = static_findings(case)
    assert findings
    for finding in findings:
        if not case.limit_hit:
            assert limit_setting() not in finding.message, finding.message
            continue
        assert f"{limit_setting()} ({case.compiles})" in finding.message, finding.message  # or accumulated_...
        assert ("FailOnRecompileLimitHit" in finding.message) == case.raises, finding.message
        assert ("eagerly" in finding.message) != case.raises, finding.message


@pytest.mark.slow
@pytest.mark.parametrize("case", [c for c in CASES if c.stance], ids=lambda c: c.fixture)
def test_stance_the_message_states_is_what_torch_did(case: Case) -> None:
    """Under ``set_stance`` a failed guard does not recompile: the message says what torch did instead (the error
    the run raised, or the single compile of an eager run) and where the stance is set."""
    case = case.on(oracle_torch().release)
    findings = static_findings(case)
    assert findings
    for finding in findings:
        assert f'set_stance("{case.stance}")' in finding.message, finding.message
        assert ("raises `RuntimeError`" in finding.message) == (case.stance == "fail_on_recompile"), finding.message
        assert "recompile_limit" not in finding.message, finding.message
        assert any("set_stance" in r.message for r in finding.related), finding.related


def apply_fix(text: str, fix: Fix) -> str:
    """The text after the fix's edits (1-based lines, character columns, exclusive ends)."""
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))

    def offset(line: int, column: int) -> int:
        return offsets[line - 1] + column - 1

    for edit in sorted(fix.edits, key=lambda e: (e.span.line, e.span.column), reverse=True):
        start, end = offset(edit.span.line, edit.span.column), offset(edit.span.end_line, edit.span.end_column)
        text = text[:start] + edit.new_text + text[end:]
    return text


@pytest.mark.slow
def test_dl101_fixes_remove_the_recompiles(tmp_path: Path) -> None:
    """The counter's quick fixes that the oracle's torch is offered really work there: a buffer compiles once on
    every release, the config flag (from 2.7, where it exists) twice."""
    source = FIXTURES / "DL101_run_counter.py"
    (finding,) = static_findings(Case(source.name, "DL101", LIMIT))
    release = oracle_torch().release
    flag_works = all(f.works_on(release) for f in finding.fixes)
    fixed = {}
    for fix in (f for f in finding.fixes if f.works_on(release)):
        target = tmp_path / f"fix_{len(fixed)}.py"
        target.write_text(apply_fix(source.read_text(encoding="utf-8"), fix), encoding="utf-8")
        fixed[fix.title] = target
    offered = {"Keep the counter in a tensor buffer"} | (
        {"Let Dynamo treat int module attributes as dynamic"} if flag_works else set()
    )
    assert set(fixed) == offered
    done = subprocess.run(
        [ORACLE_PYTHON, str(PROBE), *map(str, fixed.values())],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    results = json.loads(done.stdout)
    compiles = {title: max(results[str(path)]["compiles"].values()) for title, path in fixed.items()}
    assert compiles == {title: 1 if title == "Keep the counter in a tensor buffer" else 2 for title in offered}
    buffer_fixed = fixed["Keep the counter in a tensor buffer"]
    assert not [f for f in link([summarize(str(buffer_fixed), buffer_fixed.read_text())]) if f.code == "DL101"]
    if not flag_works:
        return
    # With the flag set, the scan states the cost torch measured: one extra compile (info), pointing at the flag.
    flag_fixed = fixed["Let Dynamo treat int module attributes as dynamic"]
    (rescanned,) = [f for f in link([summarize(str(flag_fixed), flag_fixed.read_text())]) if f.code == "DL101"]
    assert rescanned.severity is Severity.INFO
    assert "under `allow_unspec_int_on_nn_module = True`" in rescanned.message
    assert not rescanned.fixes
    assert any("allow_unspec_int_on_nn_module" in r.message for r in rescanned.related)
