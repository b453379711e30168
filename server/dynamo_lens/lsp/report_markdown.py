"""Markdown for what a run observed at one compiled place (hover and "Show guards").

* The guards of the latest cache entry that carry a *value* Dynamo checks (attribute values, tensor dtype/shape/
  stride, lengths, shape relations), grouped by what they guard: module attributes, tensor arguments, globals, other
  arguments. Structural guards (type and identity checks, dict-membership checks, module internals, imported modules
  and builtins) and ambient-state / dynamic-marking guards are collapsed into one counted line each.
* The recompile history: per recompile, the guard of the entry compiled just before that failed, with the user line,
  and what the new entry guards instead (the guard diff).
* Limit hits and graph breaks.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from dynamo_lens.lsp.compiled import TIMES, Observed, Place
from dynamo_lens.model import Finding
from dynamo_lens.runtime.guard_cost import describe
from dynamo_lens.runtime.guard_diff import (
    NOISE_KINDS,
    EntryDiff,
    frame_diffs,
    group_by_source,
    parse_tensor_guard,
    readable_guard_text,
    readable_source,
)
from dynamo_lens.runtime.report import CacheEntry, FailedGuard, Frame, Guard, Recompile, RunReport

AMBIENT = "(global state)"
MAX_HISTORY = 12
MAX_GUARDS_PER_SOURCE = 4
CATEGORIES = ("Module attributes", "Tensor arguments", "Globals", "Other arguments")
VALUE_KINDS = frozenset(
    {
        "EQUALS_MATCH",
        "CONSTANT_MATCH",
        "TRUE_MATCH",
        "FALSE_MATCH",
        "NONE_MATCH",
        "TENSOR_MATCH",
        "LENGTH_CHECK",
        "SEQUENCE_LENGTH",
        "TUPLE_ITERATOR_LEN",
        "DICT_KEYS_MATCH",
        "DICT_LENGTH",
        "RANGE_ITERATOR_MATCH",
    }
)
"""Guard kinds that check a value the user controls; every other kind is structural."""
_RELATION = re.compile(r"(<=|>=|==|!=|<|>)")
_INTERNAL_SOURCE = re.compile(r"^(__import_|__builtins__|torch\._|list\(dict\.keys\()|\bdict\.keys\(")


def render_observed(place: Place, seen: Observed, report: RunReport) -> str:
    parts = [f"**Dynamo Lens** · `{place.name}` · last run: {seen.stats_text()}"]
    for frame in seen.frames:
        if len(seen.frames) > 1:
            parts.append(f"\n### `{frame.name}` (line {frame.line})")
        latest = next((e for e in reversed(frame.cache_entries) if e.produced_code and e.guards), None)
        if latest is not None:
            parts.append(render_guards(latest, len(frame.cache_entries)))
        costs = [f"- entry {e.compile_id}: {describe(e, e.guard_cost)}" for e in frame.cache_entries if e.guard_cost]
        if costs:
            parts.append("#### Guard checks per call (steady state, measured with torch.profiler)")
            parts.extend(costs)
        history = render_history(frame, [r for r in seen.recompiles if r.frame.name == frame.name])
        if history:
            parts.append("#### Recompiles (what failed → what the new entry guards)")
            parts.extend(history)
    if seen.limit_hits:
        parts.append("#### Recompile limit")
        parts.extend(f"- `{hit.limit}` ({hit.value}) hit: later calls run eagerly" for hit in seen.limit_hits)
    if seen.graph_breaks:
        parts.append("#### Graph breaks")
        parts.extend(_graph_break_line(gb.line, gb.gb_type, gb.reason, gb.gb_id, gb.count) for gb in seen.graph_breaks)
    if report.missing:
        parts.append("\n_Not collected on this torch: " + "; ".join(report.missing) + "_")
    return "\n".join(parts)


def render_guard_history(line: int, seen: Sequence[tuple[str, str, str]], findings: Sequence[Finding]) -> str:
    """The hover on a hazard after a run: the guard it made in each cache entry (``entry 0/3: self.steps == 3``),
    the first and last few when there are many, then the runtime findings there."""
    shown = list(seen)
    if len(shown) > MAX_HISTORY:
        shown = [*shown[: MAX_HISTORY // 2], ("", "…", ""), *shown[-(MAX_HISTORY // 2) :]]
    parts = [f"**Dynamo Lens** · line {line} · last run", "", f"#### Guard installed here ({len(seen)} cache entries)"]
    parts += [
        f"- entry {entry}: `{text}`" + (f" ({kind})" if kind else "") if entry else f"- {text}"
        for entry, text, kind in shown
    ]
    parts += ["", *(f"**{f.code}**: {f.message}" for f in findings)]
    return "\n".join(parts)


def render_guards(entry: CacheEntry, attempts: int) -> str:
    """One entry's value guards grouped by what they guard; the rest collapsed into counts."""
    sections: dict[str, list[str]] = {name: [] for name in CATEGORIES}
    ambient: Counter[str] = Counter()
    structural = 0
    for raw_source, guards in group_by_source(entry.guards).items():
        source = readable_source(raw_source)
        ambient.update(g.kind for g in guards if g.kind in NOISE_KINDS or source == AMBIENT)
        if source == AMBIENT:
            continue
        shown = [g for g in guards if g.kind not in NOISE_KINDS and _checks_a_value(g, source)]
        structural += sum(1 for g in guards if g.kind not in NOISE_KINDS) - len(shown)
        if shown:
            sections[_category(source, shown)].append(_render_source(source, shown))
    lines = [f"#### Guards of the latest cache entry ({entry.compile_id}, {attempts} compile attempts)"]
    for name in CATEGORIES:
        if sections[name]:
            lines.append(f"**{name}**")
            lines.extend(sections[name])
    collapsed = []
    if structural:
        collapsed.append(f"{structural} structural guards (types, identities, module internals, imports)")
    if ambient:
        kinds = ", ".join(f"{kind} {TIMES}{n}" if n > 1 else kind for kind, n in ambient.most_common())
        collapsed.append(f"{sum(ambient.values())} ambient-state / dynamic-marking guards ({kinds})")
    if collapsed:
        lines.append("\n_Collapsed: " + "; ".join(collapsed) + "_")
    if entry.guards_omitted:
        lines.append(f"_{entry.guards_omitted} more guards not recorded_")
    return "\n".join(lines)


def render_history(frame: Frame, recompiles: Sequence[Recompile]) -> list[str]:
    """One numbered line per recompile: the failed guard of the previous entry, then the diff to the new entry."""
    diffs: dict[str, EntryDiff] = {d.newer: d for d in frame_diffs(frame)}
    lines: list[str] = []
    for recompile in recompiles[:MAX_HISTORY]:
        culprit = _culprit(recompile.failed_guards)
        text = f"{recompile.compile_id}: "
        if culprit is not None:
            where = f" (line {culprit.line})" if culprit.line is not None else ""
            text += f"`{readable_guard_text(culprit.text)}` failed{where}"
        diff = diffs.get(recompile.compile_id)
        if diff is not None and diff.changes:
            text += " → " + "; ".join(change.render() for change in diff.changes)
        lines.append(f"{len(lines) + 1}. {text}")
    if len(recompiles) > MAX_HISTORY:
        lines.append(f"\n_…and {len(recompiles) - MAX_HISTORY} more_")
    return lines


def _checks_a_value(guard: Guard, source: str) -> bool:
    if _INTERNAL_SOURCE.search(source):
        return False
    if guard.kind == "LAMBDA_GUARD":  # shape relations (`2 <= x.size()[0]`) are values; `a is a` aliasing is not
        return bool(_RELATION.search(readable_guard_text(guard.text)))
    return guard.kind in VALUE_KINDS


def _culprit(failed: Sequence[FailedGuard]) -> FailedGuard | None:
    """The failure of the newest earlier entry: Dynamo repeats every older entry's reason on each recompile."""
    return max(failed, key=lambda f: _compile_order(f.entry), default=None)


def _compile_order(compile_id: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", compile_id)) or (-1,)


def _category(source: str, guards: Sequence[Guard]) -> str:
    if source == "self" or source.startswith(("self.", "self[")):
        return "Module attributes"
    if any(g.kind == "TENSOR_MATCH" for g in guards):
        return "Tensor arguments"
    if any((g.source or "").startswith("G[") for g in guards):
        return "Globals"
    return "Other arguments"


def _render_source(source: str, guards: Sequence[Guard]) -> str:
    texts = []
    for guard in guards[:MAX_GUARDS_PER_SOURCE]:
        facts = parse_tensor_guard(guard.text) if guard.kind == "TENSOR_MATCH" else None
        if facts is not None:
            size = ", ".join(d or "s" for d in facts.size)
            stride = ", ".join(d or "?" for d in facts.stride)
            texts.append(f"{facts.dtype}[{size}] stride [{stride}]")
        else:
            where = f" · line {guard.line}" if guard.line is not None else ""
            texts.append(f"`{readable_guard_text(guard.text)}` ({guard.kind}{where})")
    more = f" (+{len(guards) - MAX_GUARDS_PER_SOURCE} more)" if len(guards) > MAX_GUARDS_PER_SOURCE else ""
    return f"- `{source}`: " + "; ".join(texts) + more


def _graph_break_line(line: int | None, gb_type: str | None, reason: str, gb_id: str | None, count: int) -> str:
    where = f"line {line}" if line is not None else "unknown line"
    title = gb_type or (reason.splitlines() or ["graph break"])[0]
    return f"- {where}: {title}" + (f" ({gb_id})" if gb_id else "") + (f" {TIMES}{count}" if count > 1 else "")
