"""The results of instrumented runs, kept per workspace for hovers, lenses, inlay hints and ``showReport``.

One run per workspace at a time: :meth:`RunStore.start` refuses a second one while the first is going. After a quick
fix, a "Re-run to verify" run of the same target compares its summary with the previous one
(:func:`compare`), and that comparison stays with the result.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dynamo_lens.model import Finding

if TYPE_CHECKING:
    from dynamo_lens.runtime.report import RunReport
    from dynamo_lens.runtime.runner import RunOutcome


@dataclass(frozen=True, slots=True)
class RunRequest:
    """What the client asked to run (``dynamoLens.run`` arguments, parsed)."""

    uri: str
    path: str
    args: tuple[str, ...] = ()
    test: str | None = None
    verify: bool = False
    processes: int = 1
    """More than 1: run the file under ``torchrun`` with that many ranks on this machine."""
    guard_cost: bool = False
    """Measure the guard checks per call (``run --guard-cost``)."""


@dataclass(frozen=True, slots=True)
class RunResult:
    request: RunRequest
    outcome: RunOutcome
    findings: tuple[Finding, ...]
    summary: dict[str, Any]
    verification: dict[str, Any] | None = None
    """``{"before": counts, "after": counts, "text": "recompiles 8 → 1, limit no longer hit"}`` for a verify run."""
    versions: dict[str, int | None] = field(default_factory=dict)
    """Document versions when the run ended, by path: an edit since then offers "Re-run to verify"."""

    @property
    def report(self) -> RunReport | None:
        return self.outcome.report

    def report_json(self) -> dict[str, Any] | None:
        """The run report as ``showReport`` returns it, with the verification kept alongside."""
        if self.report is None:
            return None
        document = self.report.to_json()
        document["verification"] = self.verification
        return document


@dataclass(slots=True)
class RunStore:
    """Last result per workspace root, and the run in progress (with its cancel switch)."""

    results: dict[str, RunResult] = field(default_factory=dict)
    running: dict[str, threading.Event] = field(default_factory=dict)

    def start(self, root: str) -> threading.Event | None:
        """A cancel switch for a new run in ``root``, or None when a run is already going there."""
        if root in self.running:
            return None
        cancel = self.running[root] = threading.Event()
        return cancel

    def finish(self, root: str) -> None:
        self.running.pop(root, None)

    def last(self) -> RunResult | None:
        return next(reversed(self.results.values()), None) if self.results else None

    def for_path(self, path: str) -> RunResult | None:
        """The latest result whose report mentions ``path`` (its target, a frame or a finding in it)."""
        for result in reversed(list(self.results.values())):
            if result.request.path == path or any(f.path == path for f in result.findings):
                return result
            if result.report is not None and any(frame.path == path for frame in result.report.frames):
                return result
        return None


def summarise(outcome: RunOutcome, uri: str) -> dict[str, Any]:
    """The ``dynamoLens/runFinished`` payload and the command's answer."""
    from dynamo_lens.runtime.guard_cost import mean_lookup_us

    report = outcome.report
    processes = (report, *report.ranks) if report is not None else ()  # a multi-process run: every rank's counts
    counts = sum((process.counts() for process in processes[1:]), processes[0].counts()) if processes else None
    return {
        "uri": uri,
        "exitCode": outcome.exit_code,
        "durationS": round(outcome.duration_s, 3),
        "ranks": len(processes) - 1 if processes else 0,
        "frames": sum(len(process.frames) for process in processes),
        "compiles": counts.compiles if counts else 0,
        "recompiles": counts.recompiles if counts else 0,
        "graphBreaks": counts.graph_breaks if counts else 0,
        "limitHits": counts.limit_hits if counts else 0,
        "guardCheckUs": mean_lookup_us(processes),
        "cancelled": outcome.cancelled,
        "timedOut": outcome.timed_out,
        "error": run_problem(outcome),
    }


def run_problem(outcome: RunOutcome) -> str | None:
    """What went wrong, for people: the runner's explanation, else the script's own exception or exit code."""
    if outcome.error:
        return outcome.error
    error = outcome.report.error if outcome.report is not None else None
    if error is not None:
        where = f" at {error.path}:{error.line}" if error.path and error.line else ""
        return f"the script raised {error.type}: {error.message}{where}"
    if outcome.exit_code:
        return f"the script exited with code {outcome.exit_code}"
    return None


def compare(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """Before/after of a verify run: ``recompiles 8 → 1, limit no longer hit``."""
    parts = []
    for key, label in (("recompiles", "recompiles"), ("graphBreaks", "graph breaks"), ("compiles", "compiles")):
        if before.get(key) != after.get(key):
            parts.append(f"{label} {before.get(key)} → {after.get(key)}")
    checks = before.get("guardCheckUs"), after.get("guardCheckUs")
    if checks[0] is not None and checks[1] is not None and checks[0] != checks[1]:
        parts.append(f"guard checks {checks[0]:.1f} µs → {checks[1]:.1f} µs per call")
    if before.get("limitHits") and not after.get("limitHits"):
        parts.append("limit no longer hit")
    elif not before.get("limitHits") and after.get("limitHits"):
        parts.append("limit now hit")
    keys = ("compiles", "recompiles", "graphBreaks", "limitHits", "guardCheckUs")
    return {
        "before": {k: before.get(k) for k in keys},
        "after": {k: after.get(k) for k in keys},
        "text": ", ".join(parts) if parts else "no change",
    }
