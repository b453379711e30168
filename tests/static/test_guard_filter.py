"""A ``guard_filter_fn`` at the compile site decides whether the guard a finding's cost rests on exists: the claims
of DL101, DL107, DL111, DL112 and DL204 under the filters torch ships, checked against real ``torch.compile`` runs.

Each fixture runs alone in a fresh probe process: after ``torch._dynamo.reset()``, a process that already compiled
with a filter keeps every guard of the next compile with one (measured on 2.13), so a shared probe would measure
that instead. The fixtures count the calls whose compiled result differs from eager code (``STALE_RESULTS``).
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from oracle import ORACLE_PYTHON, oracle_torch

from dynamo_lens.model import Severity
from dynamo_lens.static import link, summarize
from dynamo_lens.torch_facts import GUARD_FILTER_SINCE, RECOMPILE_LIMIT

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("describe_oracle_torch")]

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


CASES = (
    Case("DL101_run_counter_guard_filter.py", "DL101", 1, stale=True, severity=Severity.WARNING),
    Case("DL111_int_attr_guard_filter.py", "DL111", 1, stale=True, severity=Severity.WARNING),
    Case("DL107_layer_index_guard_filter.py", "DL107", 1, stale=True, severity=Severity.WARNING),
    Case("DL204_global_int_guard_filter.py", "DL204", 1, stale=True, severity=Severity.WARNING),
    Case("DL112_dropout_guard_filter.py", "DL112", 1, stale=True, severity=Severity.WARNING),
    # the filter drops torch.nn's own layers' guards only: a model's own `self.training` stays guarded
    Case("DL112_own_training_inbuilt_guard_filter.py", "DL112", 2, stale=False, severity=Severity.INFO),
    # torch.nn's own modules only: the user's int stays guarded, as without a filter
    Case("DL111_int_attr_inbuilt_guard_filter.py", "DL111", RECOMPILE_LIMIT, stale=False, severity=Severity.WARNING),
    # a filter of the project's own: the scan cannot tell which guards it keeps (this one keeps them all)
    Case("DL101_run_counter_own_guard_filter.py", "DL101", RECOMPILE_LIMIT, stale=False, severity=Severity.HINT),
)


def observe(case: Case) -> dict[str, object]:
    path = str(FIXTURES / case.fixture)
    done = subprocess.run([ORACLE_PYTHON, str(PROBE), path], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    seen: dict[str, object] = json.loads(done.stdout)[path]
    return seen


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.fixture)
def test_the_message_says_what_the_filter_made_torch_do(case: Case) -> None:
    if (oracle_torch().release or GUARD_FILTER_SINCE) < GUARD_FILTER_SINCE:
        pytest.skip(f"guard_filter_fn needs torch {GUARD_FILTER_SINCE}")
    seen = observe(case)
    assert seen["error"] is None, seen["error"]
    compiles = seen["compiles"]
    assert isinstance(compiles, dict)
    assert max(compiles.values()) == case.compiles, compiles
    assert bool(seen["stale_results"]) == case.stale, seen["stale_results"]

    path = FIXTURES / case.fixture
    findings = [f for f in link([summarize(str(path), path.read_text(encoding="utf-8"))]) if f.code == case.code]
    assert findings
    for finding in findings:
        assert finding.severity is case.severity, finding.message
        assert (WRONG_RESULT in finding.message) == case.stale, finding.message
        assert ("recompile_limit" in finding.message) == (case.compiles == RECOMPILE_LIMIT), finding.message
        named = [r.message for r in finding.related if "guard_filter_fn" in r.message]
        assert bool(named) == (case.stale or case.severity is Severity.HINT), finding.related
        assert not any("Raise recompile_limit" in fix.title for fix in finding.fixes) or not case.stale
