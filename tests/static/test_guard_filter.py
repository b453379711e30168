"""A ``guard_filter_fn`` at the compile site decides whether the guard a finding's cost rests on exists: the claims
of DL101, DL107, DL111, DL112 and DL204 under the filters torch ships, checked against real ``torch.compile`` runs.

Each fixture runs alone in a fresh probe process: after ``torch._dynamo.reset()``, a process that already compiled
with a filter keeps every guard of the next compile with one (measured on 2.13), so a shared probe would measure
that instead. The fixtures count the calls whose compiled result differs from eager code (``STALE_RESULTS``).
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from oracle import ORACLE_PYTHON, oracle_torch
from test_dl10x_torch import marked_lines

from dynamo_lens.model import Finding, Severity
from dynamo_lens.static import link, summarize
from dynamo_lens.torch_facts import GRAD_MODE_FILTERED_SINCE, GUARD_FILTER_SINCE, PINNED, RECOMPILE_LIMIT, Release

pytestmark = pytest.mark.usefixtures("describe_oracle_torch")

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "static"
PROBE = Path(__file__).with_name("torch_probe.py")
WRONG_RESULT = "a silent wrong result"


@dataclass(frozen=True, slots=True)
class Case:
    fixture: str
    code: str
    compiles: int
    stale: bool
    """Some compiled calls returned what eager code would not (the filter dropped the guard)."""
    severity: Severity
    before: tuple[Release, int, bool, Severity] | None = None
    """What torch does before ``Release`` instead: compiles, stale results, the finding's severity."""

    @property
    def path(self) -> Path:
        return FIXTURES / self.fixture

    def on(self, release: Release | None) -> Case:
        if self.before is None or (release or PINNED) >= self.before[0]:
            return self
        _, compiles, stale, severity = self.before
        return replace(self, compiles=compiles, stale=stale, severity=severity)


CASES = (
    Case("DL101_run_counter_guard_filter.py", "DL101", 1, stale=True, severity=Severity.WARNING),
    # a plain object's int: only keep_tensor_guards_unsafe drops it
    Case("DL101_object_counter_keep_tensor_guard_filter.py", "DL101", 1, stale=True, severity=Severity.WARNING),
    Case("DL111_int_attr_guard_filter.py", "DL111", 1, stale=True, severity=Severity.WARNING),
    Case("DL107_layer_index_guard_filter.py", "DL107", 1, stale=True, severity=Severity.WARNING),
    Case("DL107_window_choice_guard_filter.py", "DL107", 1, stale=True, severity=Severity.WARNING),
    Case("DL204_global_int_guard_filter.py", "DL204", 1, stale=True, severity=Severity.WARNING),
    Case("DL204_global_attribute_guard_filter.py", "DL204", 1, stale=True, severity=Severity.WARNING),
    Case("DL204_global_list_guard_filter.py", "DL204", 1, stale=True, severity=Severity.WARNING),
    Case("DL204_global_dict_guard_filter.py", "DL204", 1, stale=True, severity=Severity.WARNING),
    Case("DL204_global_set_guard_filter.py", "DL204", 1, stale=True, severity=Severity.WARNING),
    Case(
        "DL112_keep_tensor_guard_filter.py",
        "DL112",
        1,
        stale=True,
        severity=Severity.WARNING,
        before=(GRAD_MODE_FILTERED_SINCE, 2, False, Severity.HINT),  # grad mode still guarded: eval gets its entry
    ),
    # the mode's guard dropped, grad mode's kept: eval with grad enabled goes wrong, under no_grad it would not
    Case("DL112_dropout_guard_filter.py", "DL112", 1, stale=True, severity=Severity.HINT),
    # the filter drops torch.nn's own layers' guards only: a model's own `self.training` stays guarded
    Case("DL112_own_training_inbuilt_guard_filter.py", "DL112", 2, stale=False, severity=Severity.INFO),
    # torch.nn's own modules only: the user's int stays guarded, as without a filter
    Case("DL111_int_attr_inbuilt_guard_filter.py", "DL111", RECOMPILE_LIMIT, stale=False, severity=Severity.WARNING),
    # a filter of the project's own: the scan cannot tell which guards it keeps (this one keeps them all)
    Case("DL101_run_counter_own_guard_filter.py", "DL101", RECOMPILE_LIMIT, stale=False, severity=Severity.HINT),
)


def observe(case: Case) -> dict[str, object]:
    path = str(case.path)
    done = subprocess.run([ORACLE_PYTHON, str(PROBE), path], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    seen: dict[str, object] = json.loads(done.stdout)[path]
    return seen


def needs_guard_filters() -> None:
    if (oracle_torch().release or GUARD_FILTER_SINCE) < GUARD_FILTER_SINCE:
        pytest.skip(f"guard_filter_fn needs torch {GUARD_FILTER_SINCE}")


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.fixture)
def test_the_message_says_what_the_filter_made_torch_do(case: Case) -> None:
    needs_guard_filters()
    case = case.on(oracle_torch().release)
    seen = observe(case)
    assert seen["error"] is None, seen["error"]
    compiles = seen["compiles"]
    assert isinstance(compiles, dict)
    assert max(compiles.values()) == case.compiles, compiles
    assert bool(seen["stale_results"]) == case.stale, seen["stale_results"]

    path = case.path
    findings = [f for f in link([summarize(str(path), path.read_text(encoding="utf-8"))]) if f.code == case.code]
    assert {f.span.line for f in findings} == marked_lines(case)
    for finding in findings:
        assert finding.severity is case.severity, finding.message
        named = [r.message for r in finding.related if "guard_filter_fn" in r.message]
        assert bool(named) == (case.stale or case.severity is Severity.HINT), finding.related
        if case.severity is Severity.HINT:  # a hint claims nothing: it names the filter it cannot see through
            assert "guard_filter_fn" in finding.message, finding.message
            continue
        assert (WRONG_RESULT in finding.message) == case.stale, finding.message
        assert ("recompile_limit" in finding.message) == (case.compiles == RECOMPILE_LIMIT), finding.message
        assert not any("Raise recompile_limit" in fix.title for fix in finding.fixes) or not case.stale


COUNTER = """
import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.best = 0

    def forward(self, x):
        self.best = max(range(4), key=lambda i: i) + self.best
        return x * self.best


model = Model()
"""
ALL_MODULES = '{"guard_filter_fn": torch.compiler.skip_guard_on_all_nn_modules_unsafe}'


def counter_finding(*compiles: str) -> Finding:
    text = COUNTER + "".join(f"compiled_{n} = {c}\n" for n, c in enumerate(compiles))
    (finding,) = [f for f in link([summarize("/ws/model.py", text)]) if f.code == "DL101"]
    return finding


def test_quoted_code_with_a_colon_stays_whole() -> None:
    needs_guard_filters()
    finding = counter_finding(f"torch.compile(model, options={ALL_MODULES})")
    assert finding.message.startswith("`self.best = max(range(4), key=lambda i: i) + self.b…` in `forward` changes")
    assert WRONG_RESULT in finding.message


def test_a_site_that_keeps_the_guard_keeps_the_cost() -> None:
    """One program may compile it without the filter: there the value recompiles as before."""
    needs_guard_filters()
    finding = counter_finding(f"torch.compile(model, options={ALL_MODULES})", "torch.compile(model)")
    assert finding.severity is Severity.WARNING
    assert "recompile_limit" in finding.message and WRONG_RESULT not in finding.message


def test_a_filter_the_scan_cannot_read_at_one_site_makes_a_hint() -> None:
    needs_guard_filters()
    own = 'torch.compile(model, options={"guard_filter_fn": lambda entries: [True] * len(entries)})'
    finding = counter_finding(f"torch.compile(model, options={ALL_MODULES})", own)
    assert finding.severity is Severity.HINT
    assert "may drop this guard" in finding.message
