"""The static findings agree with what torch 2.13 really does.

Every case runs a fixture under real ``torch.compile(..., backend="eager")`` (all cases in one subprocess, see
``torch_probe.py``) and checks both sides against each other:

* torch: the recompiles (failing guard's user line) or graph breaks happen exactly at the lines the fixture marks with
  ``# DLNNN``, with the expected number of compiles, limit hit and graph-break registry ids; a ``QUIET`` fixture
  neither recompiles nor breaks, and an ``EAGER`` one compiles nothing (Dynamo gave up on the function);
* static: ``summarize`` + ``link`` report the code at exactly those lines (and nothing for ``QUIET`` or ``EAGER``).

To add a case: write a runnable fixture (``backend="eager"``, a dozen calls at most, no output needed), mark the
flagged lines, and add one ``Case`` line to ``CASES``. Add your code to ``VERIFIED_CODES`` once all of its fixtures
have a case.
"""

from __future__ import annotations

import enum
import json
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from oracle import ORACLE_PYTHON, oracle_torch
from test_guard_filter import CASES as GUARD_FILTER_CASES

from dynamo_lens.model import Severity
from dynamo_lens.torch_facts import GLOBAL_INCREMENT_UNGUARDED_SINCE, PINNED, RANGE_OF_TENSOR_ITEM_SINCE, Release

pytestmark = [pytest.mark.oracle, pytest.mark.usefixtures("describe_oracle_torch")]

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "static"
PROBE = Path(__file__).with_name("torch_probe.py")
MARK = re.compile(r"#\s*(DL\d{3}(?::\d+)?(?:\[\w+\])?(?:\s*,\s*DL\d{3}(?::\d+)?(?:\[\w+\])?)*)\s*$")
RECOMPILE_LIMIT = 8  # torch._dynamo.config.recompile_limit on 2.13
RAISED_AT = re.compile(r'File "(?P<path>[^"]+)", line (?P<line>\d+)')

# Codes whose every fixture file must appear in CASES (so no claim about torch goes unmeasured).
VERIFIED_CODES = ("DL204", "DL205", "DL301", "DL302")
# Codes whose severity states the cost: `warning` for an unbounded one (torch hits recompile_limit), `info` for a
# bounded one (a recompile or two). The static severity must match what torch did.
COST_GRADED_CODES = ("DL204", "DL205")
# Codes whose findings say (data["skips_function"]) when a graph break makes Dynamo skip the whole function (a break
# inside a loop, an RNN module, a `with torch.device(...)`).
LOOP_AWARE_CODES = ("DL301", "DL302")


class Expect(enum.Enum):
    RECOMPILE = "recompile"  # the marked lines are where a failing guard was installed
    GRAPH_BREAK = "graph_break"  # the marked lines are where the graph broke
    QUIET = "quiet"  # no recompile and no graph break anywhere in the fixture
    EAGER = "eager"  # Dynamo gave up on the function: it compiled nothing, so nothing recompiles
    RAISED = "raised"  # the marked line is where torch raised `Unsupported` (`fullgraph=True`) on the first call


@dataclass(frozen=True, slots=True)
class Since:
    """From ``release`` on, what differs from the case as written (None: unchanged)."""

    release: Release
    expect: Expect | None = None
    compiles: int | None = None
    limit_hit: bool | None = None
    gb_ids: frozenset[str] | None = None
    lines: frozenset[int] | None = None
    """The lines of the fixture torch acts on instead of its marks."""


@dataclass(frozen=True, slots=True)
class Case:
    fixture: str
    """A file under tests/fixtures/static, or ``<dir>/<script>.py`` for a multi-file case (the script is run)."""
    code: str
    expect: Expect
    compiles: int | None = None
    """Compiles of the busiest non-resume frame (8 = stopped by recompile_limit)."""
    limit_hit: bool = False
    gb_ids: frozenset[str] = frozenset()
    """Graph-break registry ids torch must report (all of them, for GRAPH_BREAK cases)."""
    fresh: bool = False
    """The script sets environment variables Dynamo reads when it is first imported: it runs alone, in a probe of
    its own (in a shared probe an earlier script has imported Dynamo already)."""
    since: Since | None = None
    """What torch does from a later release on, where it differs (``torch_facts`` keys the claim by release)."""
    lines: frozenset[int] | None = None
    """The lines torch acts on, where they are not the file's marks (set by :meth:`on` for a later release)."""

    def on(self, release: Release | None) -> Case:
        """What this case expects on ``release`` (the oracle's torch)."""
        later = self.since
        if later is None or (release or PINNED) < later.release:
            return self
        return replace(
            self,
            expect=later.expect or self.expect,
            compiles=later.compiles if later.compiles is not None else self.compiles,
            limit_hit=later.limit_hit if later.limit_hit is not None else self.limit_hit,
            gb_ids=later.gb_ids if later.gb_ids is not None else self.gb_ids,
            lines=later.lines,
            since=None,
        )

    @property
    def script(self) -> Path:
        return FIXTURES / self.fixture

    @property
    def sources(self) -> list[Path]:
        """The files the static analysis sees: the fixture, or every file of a multi-file case."""
        if self.script.parent == FIXTURES:
            return [self.script]
        return sorted(self.script.parent.glob("*.py"))

    def __str__(self) -> str:
        return self.fixture


NOT_GUARDED_FROM_2_14 = Since(
    GLOBAL_INCREMENT_UNGUARDED_SINCE, Expect.QUIET, compiles=1, limit_hit=False, lines=frozenset()
)
"""A global only read to compute its own next value: guarded (8 compiles, the limit) before 2.14, not from 2.14."""


def gb(*ids: str) -> frozenset[str]:
    return frozenset(ids)


def registered(ids: frozenset[str]) -> frozenset[str]:
    """The graph-break ids the oracle's torch reports: none before 2.8, which ships no registry."""
    return ids if oracle_torch().gb_ids() else frozenset()


CASES = (
    # DL204 global-mutated: global ints and strings always specialise → limit hit
    Case("DL204_global_int_loop.py", "DL204", Expect.RECOMPILE, RECOMPILE_LIMIT, limit_hit=True),
    Case("DL204_global_setter_module.py", "DL204", Expect.RECOMPILE, RECOMPILE_LIMIT, limit_hit=True),
    Case(
        "DL204_global_counter_in_compiled.py",
        "DL204",
        Expect.RECOMPILE,
        RECOMPILE_LIMIT,
        limit_hit=True,
        since=NOT_GUARDED_FROM_2_14,
    ),
    Case(
        "DL204_global_counter_reassigned_in_compiled.py",
        "DL204",
        Expect.RECOMPILE,
        RECOMPILE_LIMIT,
        limit_hit=True,
        since=NOT_GUARDED_FROM_2_14,
    ),
    Case(  # from 2.14 the guard moves to the later read
        "DL204_global_counter_read_after_increment.py",
        "DL204",
        Expect.RECOMPILE,
        RECOMPILE_LIMIT,
        limit_hit=True,
        since=Since(GLOBAL_INCREMENT_UNGUARDED_SINCE, lines=frozenset({15})),
    ),
    Case("DL204_global_str_helper.py", "DL204", Expect.RECOMPILE, RECOMPILE_LIMIT, limit_hit=True),
    Case("DL204_cross_file/train.py", "DL204", Expect.RECOMPILE, RECOMPILE_LIMIT, limit_hit=True),
    Case("DL204_global_float_alias.py", "DL204", Expect.RECOMPILE, 2),
    Case("DL204_global_float_dynamic_false.py", "DL204", Expect.RECOMPILE, RECOMPILE_LIMIT, limit_hit=True),
    Case("DL204_ok_global_float_dynamic_true.py", "DL204", Expect.QUIET, 1),
    Case("DL204_member_namespace_int.py", "DL204", Expect.RECOMPILE, RECOMPILE_LIMIT, limit_hit=True),
    Case("DL204_member_dict_float.py", "DL204", Expect.RECOMPILE, 2),
    Case("DL204_member_list_element_counter.py", "DL204", Expect.RECOMPILE, RECOMPILE_LIMIT, limit_hit=True),
    Case("DL204_module_attribute/train.py", "DL204", Expect.RECOMPILE, RECOMPILE_LIMIT, limit_hit=True),
    Case("DL204_lazy_global_buffer.py", "DL204", Expect.RECOMPILE, 2),  # None, then a tensor: one recompile
    Case("DL204_ok_member_set_once.py", "DL204", Expect.QUIET, 1),
    Case("DL204_ok_setter_before_compile.py", "DL204", Expect.QUIET, 1),
    Case("DL204_ok_setter_literal_in_loop.py", "DL204", Expect.QUIET, 1),
    Case("DL204_ok_constant_global.py", "DL204", Expect.QUIET, 1),
    Case("DL204_ok_tensor_rebound.py", "DL204", Expect.QUIET, 1),
    Case("DL204_ok_not_read_by_compiled.py", "DL204", Expect.QUIET, 1),
    Case("DL204_global_list_grown.py", "DL204", Expect.RECOMPILE, RECOMPILE_LIMIT, limit_hit=True),
    Case("DL204_global_dict_computed_keys.py", "DL204", Expect.RECOMPILE, 4),
    Case("DL204_global_dict_constant_key.py", "DL204", Expect.RECOMPILE, 2),
    Case("DL204_global_set_elements.py", "DL204", Expect.RECOMPILE, 4),
    Case("DL204_ok_global_containers_stable.py", "DL204", Expect.QUIET, 1),
    Case("DL204_ok_hook_handles_kept_in_list.py", "DL204", Expect.EAGER, 0),
    # DL205 closure-scalar-rebound: ints become dynamic after one recompile; strings and range() bounds do not
    Case("DL205_closure_loop_rebind.py", "DL205", Expect.RECOMPILE, 2),
    Case("DL205_closure_nonlocal.py", "DL205", Expect.RECOMPILE, 2),
    Case("DL205_closure_float_partial.py", "DL205", Expect.RECOMPILE, 2),
    Case("DL205_inlined_helper_closure.py", "DL205", Expect.RECOMPILE, 2),
    Case("DL205_closure_str_mode.py", "DL205", Expect.RECOMPILE, RECOMPILE_LIMIT, limit_hit=True),
    Case("DL205_closure_range_count.py", "DL205", Expect.RECOMPILE, RECOMPILE_LIMIT, limit_hit=True),
    Case("DL205_ok_constant_cell.py", "DL205", Expect.QUIET, 1),
    Case("DL205_ok_warmup_wrapper_of_nested_def.py", "DL205", Expect.QUIET, 1),
    Case("DL205_closure_dynamic_false.py", "DL205", Expect.RECOMPILE, RECOMPILE_LIMIT, limit_hit=True),
    Case("DL205_ok_closure_dynamic_true.py", "DL205", Expect.QUIET, 1),
    Case("DL205_ok_tensor_cell.py", "DL205", Expect.QUIET, 1),
    Case("DL205_ok_uncompiled_closure.py", "DL205", Expect.QUIET, 1),
    Case("DL205_ok_closure_made_in_compiled_code.py", "DL205", Expect.QUIET, 1),
    # DL301 graph-break-call
    Case("DL301_print_item.py", "DL301", Expect.GRAPH_BREAK, gb_ids=gb("GB0059", "GB0124")),
    # fullgraph=True: a break is an error, and what the capture flags lift is traced (fullgraph implies them)
    Case("DL301_fullgraph_raises.py", "DL301", Expect.RAISED, 0, gb_ids=gb("GB0059")),
    Case("DL301_ok_fullgraph_captures_scalars.py", "DL301", Expect.QUIET, 1),
    Case("DL301_logging_module.py", "DL301", Expect.GRAPH_BREAK, gb_ids=gb("GB0007", "GB0291", "GB4841")),
    Case("DL301_helper_method.py", "DL301", Expect.GRAPH_BREAK, gb_ids=gb("GB0124", "GB0109")),
    Case("DL301_dynamic_shape_ops.py", "DL301", Expect.GRAPH_BREAK, gb_ids=gb("GB0036", "GB0033", "GB4198")),
    Case("DL301_where_mask.py", "DL301", Expect.GRAPH_BREAK, gb_ids=gb("GB0036")),
    # `forward`'s argument is a tensor because every call of the compiled module passes one
    Case("DL301_forward_argument_tensor_at_call_site.py", "DL301", Expect.GRAPH_BREAK, gb_ids=gb("GB0036", "GB0208")),
    Case("DL301_one_of_several_submodules.py", "DL301", Expect.GRAPH_BREAK, gb_ids=gb("GB0036")),
    Case(
        "DL301_data_sized_and_copies.py",
        "DL301",
        Expect.GRAPH_BREAK,
        gb_ids=gb("GB0036", "GB0025", "GB0208", "GB0206"),
    ),
    Case("DL301_training_step_calls.py", "DL301", Expect.GRAPH_BREAK, gb_ids=gb("GB0123", "GB0172", "GB1750")),
    Case("DL301_disabled_function_called.py", "DL301", Expect.GRAPH_BREAK, gb_ids=gb("GB0098", "GB0099")),
    Case("DL301_disabled_function_in_loop.py", "DL301", Expect.GRAPH_BREAK, gb_ids=gb("GB0098")),
    Case("DL301_lock_context.py", "DL301", Expect.GRAPH_BREAK, gb_ids=gb("GB0142")),
    Case("DL301_lock_methods.py", "DL301", Expect.GRAPH_BREAK, gb_ids=gb("GB0156")),
    Case("DL301_hook_handle_in_global.py", "DL301", Expect.GRAPH_BREAK, gb_ids=gb("GB0100")),
    Case("DL301_disabled_in_other_file/train.py", "DL301", Expect.GRAPH_BREAK, gb_ids=gb("GB0098")),
    Case("DL301_tolist_by_dtype.py", "DL301", Expect.GRAPH_BREAK, gb_ids=gb("GB0033", "GB0109")),
    Case("DL301_tolist_float_under_capture.py", "DL301", Expect.GRAPH_BREAK, gb_ids=gb("GB0109")),
    Case(
        "DL301_range_of_tensor_argument.py",
        "DL301",
        Expect.GRAPH_BREAK,
        gb_ids=gb("GB0059"),
        since=Since(RANGE_OF_TENSOR_ITEM_SINCE, gb_ids=gb("GB0124")),
    ),
    Case("DL302_fullgraph_raises.py", "DL302", Expect.RAISED, 0, gb_ids=gb("GB0170")),
    Case("DL302_tensor_argument_as_flag.py", "DL302", Expect.GRAPH_BREAK, gb_ids=gb("GB0170")),
    Case("DL302_ok_forward_argument_python_bool.py", "DL302", Expect.QUIET, 1),
    Case("DL302_ok_argument_python_bool.py", "DL302", Expect.QUIET, 1),
    Case("DL301_alias_compile_call.py", "DL301", Expect.GRAPH_BREAK, gb_ids=gb("GB0059", "GB0109")),
    Case("DL301_library_logger.py", "DL301", Expect.GRAPH_BREAK, gb_ids=gb("GB0291")),
    Case("DL301_print_in_loop.py", "DL301", Expect.GRAPH_BREAK, compiles=0, gb_ids=gb("GB0059")),
    Case("DL301_factory_and_classmethod/train.py", "DL301", Expect.GRAPH_BREAK, gb_ids=gb("GB0059")),
    Case("DL301_sequential_inline.py", "DL301", Expect.GRAPH_BREAK, gb_ids=gb("GB0059")),
    Case("DL301_autograd_apply_alias.py", "DL301", Expect.GRAPH_BREAK, gb_ids=gb("GB0059")),
    Case("DL301_logger_conditional_hint.py", "DL301", Expect.GRAPH_BREAK, gb_ids=gb("GB0291")),
    Case("DL301_capture_flag_in_one_program/train.py", "DL301", Expect.GRAPH_BREAK, gb_ids=gb("GB0124")),
    Case("DL301_mixin_thirty_test_classes.py", "DL301", Expect.GRAPH_BREAK, gb_ids=gb("GB0124")),
    Case("DL301_device_context.py", "DL301", Expect.GRAPH_BREAK, gb_ids=gb("GB0142")),
    Case("DL301_first_call_branch.py", "DL301", Expect.GRAPH_BREAK, gb_ids=gb("GB0059", "GB0124")),
    Case("DL301_first_call_flag_from_argument.py", "DL301", Expect.GRAPH_BREAK, gb_ids=gb("GB0059")),
    Case("DL301_under_instance_flag.py", "DL301", Expect.GRAPH_BREAK, gb_ids=gb("GB0124")),
    Case("DL301_behind_conditional_argument.py", "DL301", Expect.GRAPH_BREAK, gb_ids=gb("GB0124")),
    Case("DL301_boolean_mask_index.py", "DL301", Expect.GRAPH_BREAK, gb_ids=gb("GB0036")),
    Case("DL301_recurrent_module.py", "DL301", Expect.GRAPH_BREAK, compiles=0, gb_ids=gb("GB0014")),
    Case("DL301_recurrent_module_chosen_by_argument.py", "DL301", Expect.GRAPH_BREAK, gb_ids=gb("GB0014")),
    Case("DL301_ok_chosen_module_maybe_recurrent.py", "DL301", Expect.QUIET, 1),
    Case("DL301_autograd_in_compiled.py", "DL301", Expect.GRAPH_BREAK, gb_ids=gb("GB9186", "GB0045")),
    Case("DL301_ok_outside_compiled.py", "DL301", Expect.QUIET, 1),
    Case("DL301_ok_is_compiling_return.py", "DL301", Expect.QUIET, 1),
    Case("DL301_ok_property_setter.py", "DL301", Expect.QUIET, 1),
    Case("DL301_nested_update_rebound.py", "DL301", Expect.GRAPH_BREAK, gb_ids=gb("GB0123")),
    Case("DL301_compiled_through_varargs_helper.py", "DL301", Expect.GRAPH_BREAK, gb_ids=gb("GB0123")),
    Case("DL301_ok_run_noop_logger.py", "DL301", Expect.QUIET, 1),
    Case("DL301_ok_traceable_calls.py", "DL301", Expect.QUIET, 1),
    Case("DL301_ok_uncompiled_helper.py", "DL301", Expect.QUIET, 1),
    Case("DL301_ok_capture_flags.py", "DL301", Expect.QUIET, 1),
    Case("DL301_ok_disabled_function_outside.py", "DL301", Expect.QUIET, 1),
    Case("DL301_ok_capture_flags_from_environment.py", "DL301", Expect.QUIET, 1, fresh=True),
    Case(
        "DL301_capture_flag_from_environment_too_late.py", "DL301", Expect.GRAPH_BREAK, gb_ids=gb("GB0124"), fresh=True
    ),
    # DL302 data-dependent-branch
    Case("DL302_if_reduction.py", "DL302", Expect.GRAPH_BREAK, gb_ids=gb("GB0170")),
    Case("DL302_while_in_forward.py", "DL302", Expect.GRAPH_BREAK, gb_ids=gb("GB0170")),
    Case("DL302_ifexp_and_isnan.py", "DL302", Expect.GRAPH_BREAK, gb_ids=gb("GB0170")),
    Case("DL302_and_operand.py", "DL302", Expect.GRAPH_BREAK, gb_ids=gb("GB0170")),
    Case("DL302_unpacked_tensors.py", "DL302", Expect.GRAPH_BREAK, gb_ids=gb("GB0170")),
    Case("DL302_branch_in_loop.py", "DL302", Expect.GRAPH_BREAK, compiles=0, gb_ids=gb("GB0170")),
    Case("DL302_flag_set_once.py", "DL302", Expect.GRAPH_BREAK, compiles=2, gb_ids=gb("GB0170")),
    Case("DL302_first_call_branch.py", "DL302", Expect.GRAPH_BREAK, compiles=2, gb_ids=gb("GB0170")),
    Case("DL302_ok_static_conditions.py", "DL302", Expect.QUIET, 1),
    Case("DL302_ok_flag_never_set.py", "DL302", Expect.QUIET, 1),
    Case("DL302_ok_branchless.py", "DL302", Expect.QUIET, 1),
    Case("DL302_ok_uncompiled.py", "DL302", Expect.QUIET, 1),
)


def marked_lines(case: Case) -> set[tuple[str, int]]:
    """(path, line) of every ``# <code>`` mark in the case's files (or the lines a later release acts on)."""
    if case.lines is not None:
        return {(str(case.script), line) for line in case.lines}
    found = set()
    for source in case.sources:
        for number, text in enumerate(source.read_text(encoding="utf-8").splitlines(), start=1):
            mark = MARK.search(text)
            if mark and case.code in re.findall(r"DL\d{3}", mark.group(1)):
                found.add((str(source), number))
    return found


@dataclass(frozen=True, slots=True)
class Observed:
    """What torch did while running one case, restricted to the case's own files."""

    compiles: dict[str, int]
    recompile_lines: set[tuple[str, int]]
    graph_break_lines: set[tuple[str, int]]
    gb_ids: set[str]
    limit_hits: list[str]
    error: str | None
    raised_lines: set[tuple[str, int]]
    """Where the ``Unsupported`` error says the user code was (its innermost frame in the case's files)."""
    raised_gb_ids: set[str]

    @classmethod
    def from_probe(cls, case: Case, data: dict[str, Any]) -> Observed:
        own = {str(p) for p in case.sources}

        def lines(events: list[dict[str, Any]]) -> Iterator[tuple[str, int]]:
            return ((e["path"], e["line"]) for e in events if e["path"] in own)

        breaks = [e for e in data["graph_breaks"] if e["path"] in own]
        error = data["error"] or ""
        user_code = error.partition("from user code:")[2]
        frames = [(path, int(line)) for path, line in RAISED_AT.findall(user_code) if path in own]
        return cls(
            compiles=data["compiles"],
            recompile_lines=set(lines(data["recompiles"])),
            graph_break_lines=set(lines(breaks)),
            gb_ids={e["gb_id"] for e in breaks if e["gb_id"]},
            limit_hits=data["limit_hits"],
            error=data["error"],
            raised_lines=set(frames[-1:]) if "torch._dynamo.exc.Unsupported" in error else set(),
            raised_gb_ids={gb_id.upper() for gb_id in re.findall(r"/gb/(gb\d+)\.html", error)},
        )

    @property
    def max_compiles(self) -> int:
        frames = [n for name, n in self.compiles.items() if not name.startswith("torch_dynamo_resume_in_")]
        return max(frames, default=0)


@pytest.fixture(scope="module")
def observed() -> dict[str, Observed]:
    """Runs every case once: all in one subprocess (torch is imported once), but each ``fresh`` case in its own."""
    results = _probe([str(case.script) for case in CASES if not case.fresh])
    for case in CASES:
        if case.fresh:
            results.update(_probe([str(case.script)]))
    return {case.fixture: Observed.from_probe(case, results[str(case.script)]) for case in CASES}


def _probe(scripts: list[str]) -> dict[str, Any]:
    done = subprocess.run(
        [ORACLE_PYTHON, str(PROBE), *scripts], capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr[-4000:]
    found: dict[str, Any] = json.loads(done.stdout)
    return found


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=str)
def test_torch_does_what_the_fixture_claims(case: Case, observed: dict[str, Observed]) -> None:
    seen = observed[case.fixture]
    case = case.on(oracle_torch().release)
    marks = marked_lines(case)
    if case.expect is not Expect.RAISED:
        assert seen.error is None, seen.error
    if case.expect is Expect.RAISED:
        assert marks, "mark the line torch raises on"
        assert seen.raised_lines == marks, seen.error
        assert seen.raised_gb_ids == registered(case.gb_ids), seen.error
    elif case.expect is Expect.QUIET:
        assert not marks, "a QUIET fixture must not mark lines"
        assert not seen.recompile_lines and not seen.graph_break_lines, seen
    elif case.expect is Expect.EAGER:
        assert not marks, "an EAGER fixture must not mark lines"
        assert seen.max_compiles == 0 and not seen.recompile_lines, seen
    elif case.expect is Expect.RECOMPILE:
        assert marks, "mark the lines torch recompiles on"
        assert seen.recompile_lines == marks
    else:
        assert marks, "mark the lines torch breaks on"
        assert seen.graph_break_lines == marks
        assert seen.gb_ids == registered(case.gb_ids)
    if case.compiles is not None:
        assert seen.max_compiles == case.compiles, seen.compiles
    assert bool(seen.limit_hits) == case.limit_hit, seen.limit_hits


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=str)
def test_static_findings_are_where_torch_acts(case: Case, observed: dict[str, Observed]) -> None:
    from dynamo_lens.static import link, summarize

    case = case.on(oracle_torch().release)
    summaries = [summarize(str(p), p.read_text(encoding="utf-8")) for p in case.sources]
    findings = [f for f in link(summaries) if f.code == case.code]
    seen = observed[case.fixture]
    torch_lines = {
        Expect.RECOMPILE: seen.recompile_lines,
        Expect.GRAPH_BREAK: seen.graph_break_lines,
        Expect.QUIET: set(),
        Expect.EAGER: set(),
        Expect.RAISED: seen.raised_lines,
    }[case.expect]
    assert {(f.span.path, f.span.line) for f in findings} == torch_lines
    if case.expect is Expect.GRAPH_BREAK and case.code in LOOP_AWARE_CODES:
        # The message says when the whole function runs eagerly; torch compiled nothing for it then.
        said_skipped = {f.data.get("skips_function") == "true" for f in findings}
        assert said_skipped == {seen.max_compiles == 0}, [f.message for f in findings]
    if case.code in COST_GRADED_CODES and findings:
        expected = Severity.WARNING if seen.limit_hits else Severity.INFO
        assert {f.severity for f in findings} == {expected}, [f.message for f in findings]


@pytest.mark.parametrize("code", VERIFIED_CODES)
def test_every_fixture_of_a_verified_code_is_run_under_torch(code: str) -> None:
    cases = [case for case in CASES if case.code == code]
    covered = {case.script for case in cases} | {case.script.parent for case in cases}
    covered |= {FIXTURES / case.fixture for case in GUARD_FILTER_CASES if case.code == code}  # one process each
    fixtures = set(FIXTURES.glob(f"{code}*"))
    assert fixtures - covered == set(), "add a Case for each fixture"
    assert len([c for c in cases if c.expect is not Expect.QUIET]) >= 3
    assert len([c for c in cases if c.expect is Expect.QUIET]) >= 3
