"""What checking guards costs per call (``dynamo-lens run --guard-cost``): the words every view uses for it, when it
is worth acting on, and the quick fix that acts on it.

The figures come from the shim (``torch.profiler``'s ``TorchDynamo Cache Lookup`` events in steady state, see
:class:`~dynamo_lens.runtime.report.GuardCost`); Dynamo's own "guard latency", one cold run at compile time, is never
shown as a per-call cost.

The fix is the documented knob ``torch.compile(..., options={"guard_filter_fn":
torch.compiler.skip_guard_on_inbuilt_nn_modules_unsafe})`` (torch 2.8 and later): it drops the guards on the
attributes of ``torch.nn``'s own modules, the bulk of a model's guards. Measured on torch 2.13 (64 ``nn.Linear``
experts, ``backend="eager"``): 594 guards → 82, cache lookup 13.8 µs → 2.1 µs per call. It is unsafe: a later change
of a built-in module's attribute (``model.eval()`` switching a ``Dropout``) no longer recompiles, and the compiled
code keeps computing as before (measured: the eval output differs from eager).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from dynamo_lens.model import Fix
from dynamo_lens.runtime.compile_call_edit import add_keyword
from dynamo_lens.runtime.report import CacheEntry, Frame, GuardCost, RunReport

WORTH_A_FIX_SHARE = 0.10
"""Guard checks that take this part of a call (lookup / (lookup + call)) are worth a knob that drops guards."""
WORTH_A_FIX_US = 5.0
"""... and at least this long: below it the call is too cheap for the part to matter."""
STEADY_CALLS = 10
"""Calls an entry needs before its medians say anything about the steady state."""
MIN_GUARDS = 50
"""Fewer guards than this cannot take a real part of a call: a high figure for them is noise (a thread or a process
competing for the core), and the knob would drop nothing."""
MAX_NS_PER_GUARD = 250
"""A guard takes tens of nanoseconds (measured 10-60); more per guard says the lookup was disturbed."""
KNOB = "torch.compiler.skip_guard_on_inbuilt_nn_modules_unsafe"
KNOB_MIN_TORCH = "2.8"


@dataclass(frozen=True, slots=True)
class Measured:
    """One cache entry whose guard checks were measured."""

    frame: Frame
    entry: CacheEntry
    cost: GuardCost

    @property
    def costly(self) -> bool:
        """Worth acting on: enough calls, a real share of each, not a trifle, and a plausible time per guard."""
        cost, guards = self.cost, guards_checked(self.entry)
        return (
            cost.calls >= STEADY_CALLS
            and cost.share >= WORTH_A_FIX_SHARE
            and cost.lookup_us >= WORTH_A_FIX_US
            and guards is not None
            and guards >= MIN_GUARDS
            and cost.lookup_us * 1000 / guards <= MAX_NS_PER_GUARD
        )


def measured(report: RunReport) -> Iterator[Measured]:
    """The measured cache entries of the report's own process, frame by frame."""
    for frame in report.frames:
        for entry in frame.cache_entries:
            if entry.guard_cost is not None:
                yield Measured(frame, entry, entry.guard_cost)


def guards_checked(entry: CacheEntry) -> int | None:
    """How many guards the entry checks: its guard tree as it was at exit (after any ``guard_filter_fn``), else
    the count Dynamo logged when it built them."""
    if entry.guards_from == "cache_entry":
        return len(entry.guards) + entry.guards_omitted
    return entry.guard_count


def describe(entry: CacheEntry, cost: GuardCost) -> str:
    """``guard checks 20.9 µs per call (5% of 390.1 µs; 636 guards, 33 ns each; median of 198 calls)``."""
    total = cost.lookup_us + cost.call_us
    guards = ""
    count = guards_checked(entry)
    if count:
        guards = f"{count:,} guards, {cost.lookup_us * 1000 / count:.0f} ns each; "
    return (
        f"guard checks {_us(cost.lookup_us)} per call ({cost.share:.0%} of {_us(total)}; {guards}"
        f"median of {cost.calls:,} calls)"
    )


def mean_lookup_us(reports: Iterable[RunReport]) -> float | None:
    """The guard checks of an average compiled call of the run (weighted by calls), None when not measured."""
    found = [m.cost for report in reports for m in measured(report)]
    calls = sum(c.calls for c in found)
    return round(sum(c.lookup_us * c.calls for c in found) / calls, 3) if calls else None


def _us(value: float) -> str:
    return f"{value:.1f} µs" if value < 1000 else f"{value / 1000:.2f} ms"


def guard_filter_fix(path: str, line: int, source: str) -> Fix | None:
    """Add the knob to the compile on ``line`` (see :func:`~dynamo_lens.runtime.compile_call_edit.add_keyword`;
    never beside ``mode=`` or ``options=``: torch refuses ``mode`` with ``options``, and options of the user's own
    would be lost)."""
    edit = add_keyword(path, line, source, "options", f'{{"guard_filter_fn": {KNOB}}}', refuse=("mode", "options"))
    if edit is None:
        return None
    return Fix(
        "Skip the guards on torch.nn modules' attributes (unsafe: model.eval() and other changes to them no longer "
        "recompile)",
        (edit,),
        safe=False,
        min_torch=KNOB_MIN_TORCH,
    )
