"""Turn a run report into findings at the user's own lines: DL501 recompiled, DL502 limit hit, DL503 graph break.

Where a finding goes (DESIGN.md §2):

* A recompile is blamed on the guard of the *previous* cache entry that failed (the entry compiled just before the
  new one; Dynamo repeats every older entry's reason on each recompile, and the newest one is the one that moved).
  Its place is the user line that installed that guard (``self.steps += 1`` for ``self.steps == 2``); a failure
  that carries no line of its own (tensor size/dtype/stride, grad mode, dispatch keys) goes to the user's call that
  triggered the recompile; failing both, the compiled ``def``.
* Recompiles of one frame that blame the same line make one DL501, counting them.
* A recompile-limit hit (DL502) sits where the frame's last recompile was blamed.
* A graph break (DL503) sits where Dynamo stopped tracing, in user code.
* A hook added to a compiled module's submodule after the compile that never ran (DL505) sits on the line that
  registered it.
* Guard checks that take a real part of each call (DL506, runs with ``--guard-cost``) sit on the user's line that
  asked for the compile, else on the compiled ``def``.
* Global module hooks firing an extra time for a ``torch.compile(module)`` wrapper (DL507) sit on the call torch's
  warning names.
* A multi-process run has the findings of every rank, each once with the ranks it was seen on, and DL504 where the
  ranks compiled differently: on the line of the guard that failed on the rank that recompiled.

:func:`merge_findings` joins these with static findings: a runtime finding on the line of a compatible static one
confirms it, and both say so.
"""

from __future__ import annotations

import linecache
import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from dynamo_lens.codes import confirmations, get_rule
from dynamo_lens.model import Finding, Fix, Related, Severity, Span, plural
from dynamo_lens.runtime import guard_cost
from dynamo_lens.runtime.compile_call_edit import add_keyword
from dynamo_lens.runtime.guard_diff import (
    GLOBAL_STATE_KEY,
    LENGTH_KINDS,
    EntryDiff,
    frame_diffs,
    readable_guard_text,
    readable_source,
    value_history,
)
from dynamo_lens.runtime.mark_dynamic_fix import SIZE_MISMATCH, mark_dynamic_fix
from dynamo_lens.runtime.ranks import Divergence, compile_counts, divergences, on_ranks, rank_labels
from dynamo_lens.runtime.report import (
    FailedGuard,
    Frame,
    FrameRef,
    GraphBreak,
    Guard,
    LimitHit,
    Recompile,
    RunReport,
)

RECOMPILED = "DL501"
LIMIT_HIT = "DL502"
GRAPH_BREAK = "DL503"
RANKS_DIVERGED = "DL504"
HOOK_NEVER_RAN = "DL505"
GUARD_CHECKS_COSTLY = "DL506"
GLOBAL_HOOK_FIRED_EXTRA = "DL507"
EXTRA_HOOK_WARNING = "Using `torch.compile(module)` when there are global hooks on modules"
"""How torch 2.8+ starts the warning it gives at a call of an ``OptimizedModule`` while global hooks exist."""


NO_REASON = "the reason was not recorded"
MESSAGE_DIFF_LIMIT = 3
"""Guard changes shown in a DL501 message; ``data["guard_diffs"]`` keeps every change."""

_RESUME = re.compile(r"^torch_dynamo_resume_in_(?P<fn>.+)_at_(?P<line>\d+)$")
_COMPILE_ID = re.compile(r"(\d+)/(\d+)")
_FUNCTION_PLACE = re.compile(r"\((?P<path>.+):(?P<line>\d+)\)$")  # Dynamo's "'forward' (/abs/model.py:17)"
_MULT = "\N{MULTIPLICATION SIGN}"


@dataclass(frozen=True, slots=True)
class Blame:
    """Where one recompile is attributed and why."""

    recompile: Recompile
    failed: FailedGuard | None
    path: str
    line: int
    attributed_to: str
    """``guard`` (the line that installed the failing guard), ``call`` (the call that triggered it) or ``frame``."""
    source: str | None = None
    """The failing guard's source as the user's line spells it (``self.count``), else as Dynamo names it."""
    shown: str = NO_REASON
    """The failing guard or Dynamo's message, readable, with :attr:`source` spelled as the user writes it."""


def findings_from_report(report: RunReport, read: Callable[[str], str | None] | None = None) -> list[Finding]:
    """Every runtime finding of a run, sorted by place; ``read`` gives a file's text (default: from disk, else what
    ``linecache`` holds), to place each finding on its expression."""
    lines = _SourceLines(read or _read_text)
    findings = _of_one_process(report, lines)
    if report.ranks:
        findings += on_ranks([(rank, _of_one_process(rank, lines)) for rank in report.ranks])
        findings += [_diverged(d, lines) for d in divergences(report.ranks)]
    return sorted(findings, key=Finding.sort_key)


def _of_one_process(report: RunReport, lines: _SourceLines) -> list[Finding]:
    return [
        *_recompiled(report, lines),
        *_limit_hits(report, lines),
        *_graph_breaks(report, lines),
        *_silent_hooks(report, lines),
        *_costly_guards(report, lines),
        *_extra_hook_calls(report, lines),
    ]


def frame_label(frame: Frame | FrameRef) -> str:
    """``forward``, or ``forward (resumed after line 28)`` for Dynamo's resume functions, or ``inner (Dynamo's
    module wrapper)`` for the frame Dynamo compiles around a module whose ``forward`` is torch code (``nn.Sequential``)
    or decorated (``@torch.no_grad()``): every such module shares that one frame, its cache and its recompile limit."""
    if frame.name == "inner" and frame.path.replace(os.sep, "/").endswith("torch/_dynamo/external_utils.py"):
        return "inner (Dynamo's module wrapper)"
    match = _RESUME.match(frame.name)
    if match is None:
        return frame.name
    return f"{match.group('fn')} (resumed after line {match.group('line')})"


def blame_recompiles(report: RunReport, frame: Frame, lines: _SourceLines | None = None) -> list[Blame]:
    """Each recompile of ``frame`` with the place it is blamed on, in compile order."""
    lines = lines or _SourceLines()
    blames: list[Blame] = []
    for recompile in report.recompiles:
        if report.frame(recompile.frame) is not frame:
            continue
        failed = _culprit(recompile.failed_guards)
        if failed is not None and failed.path is not None and failed.line is not None:
            via = failed.attributed_to if failed.attributed_to != "none" else "guard"
            path, line = failed.path, failed.line
        elif recompile.call_site is not None:
            via, path, line = "call", recompile.call_site.path, recompile.call_site.line
        else:
            via, path, line = "frame", frame.path, frame.line
        source = readable_source(failed.source) if failed is not None and failed.source else None
        spelled = _user_spelling(source, lines.text(path, line))
        shown = readable_guard_text(failed.text) if failed is not None else NO_REASON
        if source is not None and spelled is not None:
            shown = shown.replace(source, spelled, 1)
        blames.append(Blame(recompile, failed, path, line, via, spelled, shown))
    return sorted(blames, key=lambda b: _compile_order(b.recompile.compile_id))


def _culprit(failed_guards: Sequence[FailedGuard]) -> FailedGuard | None:
    """The failure of the newest earlier entry: the guard that changed since the last compile."""
    if not failed_guards:
        return None
    return max(failed_guards, key=lambda g: _compile_order(g.entry))


def _compile_order(compile_id: str) -> tuple[int, int]:
    match = _COMPILE_ID.search(compile_id)
    return (int(match.group(1)), int(match.group(2))) if match else (-1, -1)


@dataclass(frozen=True, slots=True)
class FrameStats:
    """What one compiled frame cost during the run: the numbers of the CLI's table and the editor's code lens."""

    frame: Frame
    label: str
    compiles: int
    recompiles: int
    graph_breaks: int
    """As :class:`~dynamo_lens.runtime.report.Counts` counts them."""
    limit_hit: str | None
    """The limit that was hit (``recompile_limit``), or None."""
    compiled_calls: int | None
    eager_calls: int | None
    calls_at_least: bool
    """As :class:`~dynamo_lens.runtime.report.Counts` counts them (None: not counted; lower bounds where some calls
    of the run could not be attributed to a frame)."""
    compile_time_s: float
    culprits: tuple[Blame, ...]
    """The last recompile blamed on each distinct line, in compile order."""


def frame_stats(report: RunReport) -> list[FrameStats]:
    """Per compiled frame (frames Dynamo skipped entirely are left out), in the report's order."""
    stats: list[FrameStats] = []
    lines = _SourceLines()
    for frame in report.frames:
        if frame.skipped:
            continue
        blames = blame_recompiles(report, frame, lines)
        last_by_line: dict[tuple[str, int], Blame] = {}
        for blame in blames:
            last_by_line.pop((blame.path, blame.line), None)
            last_by_line[(blame.path, blame.line)] = blame
        hits = [h.limit for h in report.limit_hits if h.frame is not None and report.frame(h.frame) is frame]
        counts = report.counts(frame)
        stats.append(
            FrameStats(
                frame=frame,
                label=frame_label(frame),
                compiles=counts.compiles,
                recompiles=counts.recompiles,
                graph_breaks=counts.graph_breaks,
                limit_hit=hits[0] if hits else None,
                compiled_calls=counts.compiled_calls,
                eager_calls=counts.eager_calls,
                calls_at_least=counts.calls_at_least,
                compile_time_s=sum(e.compile_time_s or 0.0 for e in frame.cache_entries),
                culprits=tuple(last_by_line.values()),
            )
        )
    return stats


# --------------------------------------------------------------------------------------------------------------------
# DL501


def _recompiled(report: RunReport, lines: _SourceLines) -> list[Finding]:
    findings: list[Finding] = []
    for frame in report.frames:
        blames = blame_recompiles(report, frame, lines)
        diffs = frame_diffs(frame)
        if not blames:
            if frame.compiles_ok > 1:
                findings.append(_recompiled_without_reasons(frame, diffs, lines))
            continue
        groups: dict[tuple[str, int], list[Blame]] = {}
        for blame in blames:
            groups.setdefault((blame.path, blame.line), []).append(blame)
        for group in groups.values():
            findings.append(_recompiled_at(frame, group, diffs, lines))
    return findings


def _recompiled_at(frame: Frame, group: list[Blame], diffs: list[EntryDiff], lines: _SourceLines) -> Finding:
    last = group[-1]
    failed = last.failed
    source = readable_source(failed.source) if failed is not None and failed.source else None
    what = f"`{last.shown}` failed ({failed.kind})" if failed is not None and failed.kind else _failure_text(failed)
    if source is not None and last.source != source:
        what += f" (Dynamo's name: `{source}`, reached through a container module)"
    made = sum(1 for blame in group if blame.recompile.compile_id in frame.produced_ids)
    refused = len(group) - made
    if made:
        message = f"recompiled {made}{_MULT}: {what} in `{frame_label(frame)}`"
        if refused:
            message += f", and refused {refused} more at the recompile limit"
    else:
        message = f"a recompile refused at the recompile limit ({refused}{_MULT}): {what} in `{frame_label(frame)}`"
    resumed = _RESUME.match(frame.name)
    if source is not None and source.startswith("___stack") and resumed is not None:
        message += f" (`{source}`: the value computed on line {resumed.group('line')}, carried across the graph break)"
    detail = _change_summary(frame, source, last.source, diffs, group, failed.kind if failed else None)
    if detail:
        message += f"; {detail}"
    span = lines.span(last.path, last.line, [source] if source else [])
    related = [_def_related(frame, lines, f"`{frame_label(frame)}` compiled {frame.compiles_ok}{_MULT}")]
    call = last.recompile.call_site
    if last.attributed_to == "guard" and call is not None:
        related.append(
            Related(lines.span(call.path, call.line), f"call that triggered recompile {last.recompile.compile_id}")
        )
    installed = _installing_guard(frame, failed)
    if last.attributed_to != "guard" and installed is not None and installed.path and installed.line:
        origin = installed.origin
        inside = origin is not None and origin != f"{installed.path}:{installed.line}"
        where = f" (inside {_short_origin(origin)})" if origin is not None and inside else ""
        related.append(
            Related(
                lines.span(installed.path, installed.line, [source] if source else []),
                f"`{source or installed.text}` guarded here{where}",
            )
        )
    data: dict[str, object] = {
        "frame": frame.name,
        "recompiles": made,
        "refused": refused,
        "compiles": frame.compiles_ok,
        "compile_ids": [b.recompile.compile_id for b in group],
        "attributed_to": last.attributed_to,
        "guard_diffs": [d.render() for d in diffs],
    }
    if failed is not None:
        data.update({"guard": readable_guard_text(failed.text), "kind": failed.kind, "entry": failed.entry})
        if source:
            data["source"] = source
        if failed.hint:
            data["hint"] = failed.hint
    finding = _finding(RECOMPILED, span, message, related, data)
    if failed is not None and failed.kind == "TENSOR_MATCH" and SIZE_MISMATCH.search(failed.text):
        earlier = [b.failed.text for b in group if b.failed is not None]
        marked = mark_dynamic_fix(failed.text, frame.path, frame.line, call.path, call.line, earlier) if call else None
        fixes = tuple(fix for fix in (marked, _dynamic_site_fix(frame, lines)) if fix is not None)
        finding = replace(finding, fixes=fixes)
    if made == 1 and not refused:  # once, then reused: a train/eval switch, a grad mode, a size before it went dynamic
        return replace(finding, severity=Severity.INFO)
    return finding


def _dynamic_site_fix(frame: Frame, lines: _SourceLines) -> Fix | None:
    """``dynamic=True`` at the compile of a frame that recompiled for a size: every size symbolic from the first
    call (measured, sizes 2 to 11 under ``dynamic=False``: 8 compiles and the limit, then 1)."""
    at = next((entry.compiled_at for entry in frame.cache_entries if entry.compiled_at is not None), None)
    source = lines.source(at.path) if at is not None else None
    if at is None or source is None:
        return None
    edit = add_keyword(at.path, at.line, source, "dynamic", "True")
    if edit is None:
        return None
    return Fix("Compile with `dynamic=True` (every size symbolic from the first call)", (edit,), safe=True)


def _user_spelling(source: str | None, line_text: str | None) -> str | None:
    """How the user's line spells a guarded attribute. A frame compiled through a container or a decorated forward
    names the module by its path from the compiled object (``fn[1].count``); the user's own class reads
    ``self.count``, and that is what the message should say."""
    if source is None or line_text is None or source.startswith("self.") or "." not in source:
        return source
    attribute = source.rsplit(".", 1)[1]
    if attribute.isidentifier() and re.search(rf"(?<![\w.])self\.{attribute}(?!\w)", line_text):
        return f"self.{attribute}"
    return source


def _installing_guard(frame: Frame, failed: FailedGuard | None) -> Guard | None:
    """The guard of the failing entry that matches a failure Dynamo reported without a line (e.g. the TENSOR_MATCH
    on ``x`` for "tensor 'x' size mismatch"): it knows where in user code the guard was installed."""
    if failed is None or failed.source is None:
        return None
    entry = next((e for e in frame.cache_entries if e.compile_id == failed.entry), None)
    if entry is None:
        return None
    candidates = [g for g in entry.guards if g.source == failed.source and g.line is not None]
    return next((g for g in candidates if g.kind == failed.kind), candidates[0] if candidates else None)


def _short_origin(origin: str) -> str:
    """``/…/site-packages/torch/nn/modules/linear.py:134`` → ``torch/nn/modules/linear.py:134``: where a guard was
    installed inside a library (the user's own line is the related location itself, never repeated as a path)."""
    for marker in ("site-packages/", "dist-packages/"):
        if marker in origin:
            return origin.rsplit(marker, 1)[1]
    return origin


def _recompiled_without_reasons(frame: Frame, diffs: list[EntryDiff], lines: _SourceLines) -> Finding:
    message = (
        f"`{frame_label(frame)}` compiled {frame.compiles_ok}{_MULT}; Dynamo's recompile reasons were not collected"
    )
    if diffs:
        message += f"; {diffs[-1].render(limit=MESSAGE_DIFF_LIMIT)}"
    span = lines.span(frame.path, frame.line)
    data = {"frame": frame.name, "compiles": frame.compiles_ok, "guard_diffs": [d.render() for d in diffs]}
    return _finding(RECOMPILED, span, message, [], data)


def _failure_text(failed: FailedGuard | None) -> str:
    if failed is None:
        return NO_REASON
    text = readable_guard_text(failed.text)
    kind = f" ({failed.kind})" if failed.kind else ""
    return f"`{text}` failed{kind}"


def _change_summary(
    frame: Frame,
    source: str | None,
    spelled: str | None,
    diffs: list[EntryDiff],
    group: list[Blame],
    kind: str | None,
) -> str:
    """The value history of the failing source when it pinned three or more values, else the guard diff that the
    group's latest recompile produced (a limit-hit attempt produced no entry, so an earlier one of the group)."""
    if source is not None:
        history = value_history(frame, source)
        if len(set(history)) >= 3 and "dynamic" not in history:
            shown = history if len(history) <= 5 else [*history[:3], "\N{HORIZONTAL ELLIPSIS}", history[-1]]
            name = spelled or source
            label = f"len({name})" if kind in LENGTH_KINDS else name
            return f"`{label}` went " + " → ".join(shown) + f" across {len(history)} entries"
    focus = GLOBAL_STATE_KEY if kind == "GLOBAL_STATE" else source
    by_newer = {diff.newer: diff for diff in diffs}
    for blame in reversed(group):
        diff = by_newer.get(blame.recompile.compile_id)
        if diff is not None:
            return diff.render(focus=focus, limit=MESSAGE_DIFF_LIMIT)
    return ""


# --------------------------------------------------------------------------------------------------------------------
# DL502


def _limit_hits(report: RunReport, lines: _SourceLines) -> list[Finding]:
    findings: list[Finding] = []
    for hit in report.limit_hits:
        frame = report.frame(hit.frame) if hit.frame is not None else None
        finding = _limit_hit(report, hit, frame, lines)
        if finding is not None:
            findings.append(finding)
    return findings


def _limit_hit(report: RunReport, hit: LimitHit, frame: Frame | None, lines: _SourceLines) -> Finding | None:
    """The DL502 finding; None when the hit names no place at all (no frame, no ``function`` text to read)."""
    blames = blame_recompiles(report, frame, lines) if frame is not None else []
    limit = f"{hit.limit} ({hit.value})" if hit.value is not None else hit.limit
    label = f"`{frame_label(frame)}`" if frame is not None else (hit.function or "a compiled frame")
    entries = frame.compiles_ok if frame is not None else None
    message = f"{limit} hit for {label}: Dynamo stopped compiling it"
    message += (
        f"; calls that match none of its {entries} cache entries run eagerly from here on"
        if entries
        else "; calls that match no cache entry run eagerly from here on"
    )
    # Per hit when the shim could count the misses at the limit's call site; else the run's total if it is this hit's.
    eager = hit.eager_calls
    if eager is None and len(report.limit_hits) == 1:
        eager = report.summary.eager_fallback_calls
    if eager:
        message += f" ({eager} such call{'s' if eager != 1 else ''} in this run)"
    data: dict[str, object] = {"limit": hit.limit, "value": hit.value, "last_reason": hit.last_reason}
    if frame is not None:
        data["frame"] = frame.name
    if blames:
        last = blames[-1]
        kind = f" ({last.failed.kind})" if last.failed is not None and last.failed.kind else ""
        message += f"; last reason: `{last.shown}` failed{kind}" if last.failed else f"; {_failure_text(None)}"
        source = readable_source(last.failed.source) if last.failed is not None and last.failed.source else None
        span = lines.span(last.path, last.line, [source] if source else [])
    elif frame is not None:
        span = lines.span(frame.path, frame.line)
    else:
        span = None
    if eager is not None:
        data["eager_fallback_calls"] = eager
    related = [_def_related(frame, lines, f"`{frame_label(frame)}` runs eagerly after the limit")] if frame else []
    if hit.call_site is not None:
        call = hit.call_site
        related.append(Related(lines.span(call.path, call.line), "first call that ran eagerly"))
    if span is None:
        place = _FUNCTION_PLACE.search(hit.function)
        if place is None:
            return None
        span = lines.span(place.group("path"), int(place.group("line")))
    return _finding(LIMIT_HIT, span, message, related, data)


# --------------------------------------------------------------------------------------------------------------------
# DL503


def _graph_breaks(report: RunReport, lines: _SourceLines) -> list[Finding]:
    findings: list[Finding] = []
    for gb in report.graph_breaks:
        frame = report.frame(gb.frame) if gb.frame is not None else None
        if gb.path is not None and gb.line is not None:
            span = lines.span(gb.path, gb.line)
        elif frame is not None:
            span = lines.span(frame.path, frame.line)
        else:
            continue
        findings.append(_graph_break(gb, frame, span, lines))
    return findings


def _graph_break(gb: GraphBreak, frame: Frame | None, span: Span, lines: _SourceLines) -> Finding:
    reason_lines = gb.reason.strip().splitlines()
    title = gb.gb_type or (reason_lines[0] if reason_lines else "unknown reason")
    head = f"graph break ({gb.gb_id})" if gb.gb_id else "graph break"
    message = f"{head}: {title}"
    if frame is not None:
        message += f" in `{frame_label(frame)}`"
    if frame is not None and frame.skipped:
        message += f"; Dynamo then skipped `{frame_label(frame)}` altogether: it runs eagerly on every call"
    if gb.explanation:
        message += f". {gb.explanation.rstrip('.')}."
    hints = " ".join(h.strip() for h in gb.hints if h.strip())
    if hints:
        message += f" Hint: {hints}"
    consequence = "runs eagerly" if frame is not None and frame.skipped else "is split here"
    related = [_def_related(frame, lines, f"`{frame_label(frame)}` {consequence}")] if frame is not None else []
    data: dict[str, object] = {
        "gb_id": gb.gb_id,
        "gb_type": gb.gb_type,
        "explanation": gb.explanation,
        "hints": list(gb.hints),
        "reason": gb.reason,
        "count": gb.count,
    }
    if frame is not None:
        data["frame"] = frame.name
    return _finding(GRAPH_BREAK, span, message, related, data)


# --------------------------------------------------------------------------------------------------------------------
# Merging with static findings


def merge_findings(static: Iterable[Finding], runtime: Iterable[Finding]) -> list[Finding]:
    """Static and runtime findings together; where a runtime finding lands on a compatible static finding (same
    file, and the same line or a line the other names as related), both are kept and both say so:
    the static one gains ``data["confirmed"]`` ("8 recompiles"), the runtime one ``data["confirms"]``, a
    "(confirmed: ..., as DL101 predicted)" note in its message and the static finding's compile site as related."""
    static_list = list(static)
    confirmed: dict[int, list[str]] = {}
    merged: list[Finding] = []
    for finding in runtime:
        matches = [i for i, s in enumerate(static_list) if _agree(s, finding)]
        if not matches:
            merged.append(finding)
            continue
        codes = sorted({static_list[i].code for i in matches})
        evidence = _evidence(finding)
        for index in matches:
            confirmed.setdefault(index, []).append(evidence)
        sites = [r for i in matches for r in static_list[i].related if r.message.startswith("compiled here")]
        merged.append(
            replace(
                finding,
                message=f"{finding.message} (confirmed: {evidence}, as {', '.join(codes)} predicted)",
                related=tuple(dict.fromkeys([*finding.related, *sites])),
                data={**finding.data, "confirms": codes},
            )
        )
    for index, finding in enumerate(static_list):
        if index in confirmed:
            finding = replace(finding, data={**finding.data, "confirmed": "; ".join(confirmed[index])})
        merged.append(finding)
    return sorted(merged, key=Finding.sort_key)


def _agree(static: Finding, runtime: Finding) -> bool:
    if static.source != "static" or static.code not in confirmations().get(runtime.code, frozenset()):
        return False
    static_lines = {(_norm(static.span.path), static.span.line)} | {
        (_norm(r.span.path), r.span.line) for r in static.related
    }
    runtime_lines = {(_norm(runtime.span.path), runtime.span.line)}
    if runtime.code != GRAPH_BREAK:
        runtime_lines |= {(_norm(r.span.path), r.span.line) for r in runtime.related if "triggered" in r.message}
    return (_norm(static.span.path), static.span.line) in runtime_lines or (
        (_norm(runtime.span.path), runtime.span.line) in static_lines
    )


def _evidence(finding: Finding) -> str:
    data = finding.data
    if finding.code == RECOMPILED:
        count = data.get("recompiles", data.get("compiles", 0))
        return f"{count} recompile{'s' if count != 1 else ''}"
    if finding.code == LIMIT_HIT:
        return f"{data.get('limit', 'recompile limit')} hit"
    if finding.code == HOOK_NEVER_RAN:
        return f"the hook ran 0 of {data.get('root_calls')} compiled calls"
    count = data.get("count", 1)
    return f"graph break observed{f' {count}{_MULT}' if isinstance(count, int) and count > 1 else ''}"


def _norm(path: str) -> str:
    return os.path.normcase(os.path.abspath(path))


# --------------------------------------------------------------------------------------------------------------------
# DL505


def _silent_hooks(report: RunReport, lines: _SourceLines) -> list[Finding]:
    findings = []
    for hook in report.silent_hooks:
        if hook.path is None or hook.line is None:
            continue
        what = "forward pre-hook" if hook.hook == "forward_pre_hook" else "forward hook"
        message = (
            f"the {what} registered here on a `{hook.module}` inside the compiled `{hook.root}` never ran: the "
            f"compiled module ran {plural(hook.root_calls, 'time')} after it was added, and Dynamo does not guard "
            "the hooks of submodules (`skip_nnmodule_hook_guards`), so compiled code runs without it"
        )
        data = {"module": hook.module, "root": hook.root, "root_calls": hook.root_calls, "hook": hook.hook}
        span = lines.span(hook.path, hook.line)
        findings.append(_finding(HOOK_NEVER_RAN, span, message, (), data))
    return findings


# --------------------------------------------------------------------------------------------------------------------
# DL506


def _costly_guards(report: RunReport, lines: _SourceLines) -> list[Finding]:
    findings = []
    for found in guard_cost.measured(report):
        if not found.costly:
            continue
        frame, entry = found.frame, found.entry
        at = entry.compiled_at
        message = (
            f"{guard_cost.describe(entry, found.cost)} in compiled `{frame_label(frame)}` (entry {entry.compile_id}):"
            " Dynamo checks every guard of the entry before each call; dropping guards that cannot change "
            "(`guard_filter_fn`) makes the calls cheaper"
        )
        data = {"compile_id": entry.compile_id, **found.cost.to_json(), "guards": guard_cost.guards_checked(entry)}
        if at is None:
            findings.append(_finding(GUARD_CHECKS_COSTLY, lines.span(frame.path, frame.line), message, (), data))
            continue
        related = [_def_related(frame, lines, f"`{frame_label(frame)}` is compiled here")]
        finding = _finding(GUARD_CHECKS_COSTLY, lines.span(at.path, at.line, ["torch.compile"]), message, related, data)
        source = lines.source(at.path)
        fix = guard_cost.guard_filter_fix(at.path, at.line, source) if source is not None else None
        findings.append(replace(finding, fixes=(fix,)) if fix is not None else finding)
    return findings


# --------------------------------------------------------------------------------------------------------------------
# DL507


def _extra_hook_calls(report: RunReport, lines: _SourceLines) -> list[Finding]:
    findings = []
    for warning in report.warnings:
        if not warning.message.startswith(EXTRA_HOOK_WARNING) or warning.path is None or warning.line is None:
            continue
        message = (
            "the global module hooks fire an extra time at each call here: the module was wrapped with "
            "`torch.compile(module)`, and its `OptimizedModule` wrapper is a module of its own that runs them too "
            "(torch warned during the run; DL402 predicts it); compile in place with `module.compile()` instead"
        )
        findings.append(_finding(GLOBAL_HOOK_FIRED_EXTRA, lines.span(warning.path, warning.line), message, (), {}))
    return findings


# --------------------------------------------------------------------------------------------------------------------
# DL504


def _diverged(divergence: Divergence, lines: _SourceLines) -> Finding:
    """On the rank ahead: the first recompile the ranks behind did not make, at the line it is blamed on (the
    frame's ``def`` for a frame the others never compiled, or an order difference)."""
    ranks = [rank for rank, _ in divergence.frames.frames]
    rank = divergence.ahead[0]
    frame = next(f for r, f in divergence.frames.frames if r is rank)
    assert frame is not None  # a rank ahead compiled the frame
    label = f"`{frame_label(frame)}`"
    counts = compile_counts(divergence.frames, ranks)
    fewest = divergence.frames.compiles(divergence.behind[0])
    blames = blame_recompiles(rank, frame, lines)
    # the first recompile the ranks behind did not make; none when they never compiled the frame at all
    blame = blames[fewest - 1] if 1 <= fewest <= len(blames) else None
    if divergence.order_only:
        message = (
            f"{rank_labels(divergence.ahead)} compiled {label} in another order than {rank_labels(divergence.behind)}"
            f" ({counts}): the ranks reach their compiles at different times and wait for each other"
        )
        span = lines.span(frame.path, frame.line)
    elif blame is not None:
        message = (
            f"{label} compiled differently across ranks ({counts}): on {rank.rank_label} `{blame.shown}` failed "
            f"and it recompiled, while {rank_labels(divergence.behind)} did not; the others wait for it at the "
            "next collective"
        )
        span = lines.span(blame.path, blame.line, [blame.source] if blame.source else [])
    else:
        message = (
            f"{label} compiled on {rank_labels(divergence.ahead)} only ({counts}): the other ranks run other code "
            "here and wait for it at the next collective"
        )
        span = lines.span(frame.path, frame.line)
    related = []
    for other in divergence.behind:
        theirs = next(f for r, f in divergence.frames.frames if r is other)
        if theirs is not None:
            call = theirs.cache_entries[-1].call_site if theirs.cache_entries else None
            at = lines.span(call.path, call.line) if call is not None else lines.span(theirs.path, theirs.line)
            related.append(Related(at, f"{other.rank_label} compiled {label} {theirs.compiles_ok}{_MULT}"))
    data: dict[str, object] = {
        "frame": frame.name,
        "compiles": {r.rank_label: divergence.frames.compiles(r) for r in ranks},
        "ahead": [r.rank_label for r in divergence.ahead],
    }
    if blame is not None and not divergence.order_only:
        data.update({"guard": blame.shown, "compile_id": blame.recompile.compile_id})
    return _finding(RANKS_DIVERGED, span, message, related[:4], data)


# --------------------------------------------------------------------------------------------------------------------
# Shared helpers


def _finding(code: str, span: Span, message: str, related: Sequence[Related], data: dict[str, object]) -> Finding:
    rule = get_rule(code)
    if rule is None:  # pragma: no cover - the catalogue test guarantees these modules exist
        raise RuntimeError(f"rule {code} missing from the catalogue")
    return Finding(
        code=code,
        severity=rule.default_severity,
        span=span,
        message=message,
        source="runtime",
        related=tuple(related),
        data={k: v for k, v in data.items() if v is not None},
    )


def _def_related(frame: Frame, lines: _SourceLines, message: str) -> Related:
    return Related(lines.span(frame.path, frame.line), message)


class _SourceLines:
    """Reads the user's files once per report to place findings on the expression, not just the line."""

    def __init__(self, read: Callable[[str], str | None] | None = None) -> None:
        self._files: dict[str, list[str] | None] = {}
        self._read = read or _read_text

    def source(self, path: str) -> str | None:
        """The whole file, as read for :meth:`text`."""
        if path not in self._files:
            content = self._read(path)
            self._files[path] = None if content is None else content.splitlines(keepends=True)
        lines = self._files[path]
        return None if lines is None else "".join(lines)

    def text(self, path: str, line: int) -> str | None:
        self.source(path)
        lines = self._files[path]
        if lines is None or not 1 <= line <= len(lines):
            return None
        return lines[line - 1].rstrip("\r\n")

    def span(self, path: str, line: int, needles: Sequence[str] = ()) -> Span:
        """The first needle found on the line (``self.steps``, then ``self.<last attribute>``), else the line's
        text without its indentation; a line we cannot read spans column 1."""
        text = self.text(path, line)
        if text is None:
            return Span(path, line, 1, line, 1)
        for needle in _needles(needles):
            found = re.search(rf"(?<![\w.]){re.escape(needle)}(?!\w)", text)
            if found is not None:
                return Span(path, line, found.start() + 1, line, found.end() + 1)
        stripped = text.rstrip()
        start = len(stripped) - len(stripped.lstrip())
        return Span(path, line, start + 1, line, len(stripped) + 1)


def _needles(sources: Sequence[str]) -> list[str]:
    """What to look for on the line, best first: the source itself (``self.drop.training``), the attribute as read
    on ``self`` (``self.training``, inside a submodule's code), then shorter prefixes (``self.drop``)."""
    needles: list[str] = []
    for source in sources:
        needles.append(source)
        parts = source.split(".")
        if len(parts) > 1 and parts[-1].isidentifier():
            needles.append(f"self.{parts[-1]}")
        needles += [".".join(parts[:end]) for end in range(len(parts) - 1, 1, -1)]
    return needles


def _read_text(path: str) -> str | None:
    """The file's text; in the process that ran it, what ``linecache`` holds for a name no file has (a notebook
    cell's ``/tmp/ipykernel_<pid>/<hash>.py``, which IPython never writes to disk)."""
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        cached = linecache.getlines(path)
        return "".join(cached) if cached else None
