"""Markdown for what a run observed at one compiled place (hover and "Show guards").

The guards of the latest cache entry, grouped by what they guard (module attributes, tensor arguments with
dtype/shape/stride, globals, other arguments), with ambient-state and dynamic-marking guards collapsed into one line;
the recompile history with the guard diff between consecutive entries; why each recompile happened; limit hits and
graph breaks.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from dynamo_lens.lsp.compiled import Observed, Place
from dynamo_lens.runtime.guard_diff import (
    NOISE_KINDS,
    frame_diffs,
    group_by_source,
    parse_tensor_guard,
    readable_guard_text,
)
from dynamo_lens.runtime.report import CacheEntry, Guard, RunReport

AMBIENT = "(global state)"
TIMES = "\N{MULTIPLICATION SIGN}"
MAX_HISTORY = 12
MAX_GUARDS_PER_SOURCE = 4
CATEGORIES = ("Module attributes", "Tensor arguments", "Globals", "Other arguments")


def render_observed(place: Place, seen: Observed, report: RunReport) -> str:
    parts = [f"**Dynamo Lens** · `{place.name}` · last run: {seen.stats_text()}"]
    for frame in seen.frames:
        entries = [e for e in frame.cache_entries if e.produced_code]
        latest = next((e for e in reversed(entries) if e.guards), None)
        if len(seen.frames) > 1:
            parts.append(f"\n### `{frame.name}` (line {frame.line})")
        if latest is not None:
            parts.append(render_guards(latest, len(frame.cache_entries)))
        history = [d.render() for d in frame_diffs(frame)]
        if history:
            parts.append("#### Recompiles (guard diff between consecutive entries)")
            parts.extend(f"{i}. {text}" for i, text in enumerate(history[:MAX_HISTORY], start=1))
            if len(history) > MAX_HISTORY:
                parts.append(f"\n_…and {len(history) - MAX_HISTORY} more_")
    failed = _failed_guards(seen)
    if failed:
        parts.append("#### Why it recompiled")
        parts.extend(failed)
    if seen.limit_hits:
        parts.append("#### Recompile limit")
        parts.extend(f"- `{hit.limit}` ({hit.value}) hit: later calls run eagerly" for hit in seen.limit_hits)
    if seen.graph_breaks:
        parts.append("#### Graph breaks")
        for gb in seen.graph_breaks:
            where = f"line {gb.line}" if gb.line is not None else "unknown line"
            title = gb.gb_type or (gb.reason.splitlines() or ["graph break"])[0]
            parts.append(
                f"- {where}: {title}"
                + (f" ({gb.gb_id})" if gb.gb_id else "")
                + (f" {TIMES}{gb.count}" if gb.count > 1 else "")
            )
    if report.missing:
        parts.append("\n_Not collected on this torch: " + "; ".join(report.missing) + "_")
    return "\n".join(parts)


def render_guards(entry: CacheEntry, attempts: int) -> str:
    """One entry's guards grouped by what they guard; noise collapsed into a count."""
    groups = group_by_source(entry.guards)
    sections: dict[str, list[str]] = {name: [] for name in CATEGORIES}
    noise: Counter[str] = Counter()
    for source, guards in groups.items():
        shown = [g for g in guards if g.kind not in NOISE_KINDS]
        noise.update(g.kind for g in guards if g.kind in NOISE_KINDS)
        if source == AMBIENT:
            noise.update(g.kind for g in shown)
            continue
        if shown:
            sections[_category(source, shown)].append(_render_source(source, shown))
    lines = [f"#### Guards of the latest cache entry ({entry.compile_id}, {attempts} compile attempts)"]
    for name in CATEGORIES:
        if sections[name]:
            lines.append(f"**{name}**")
            lines.extend(sections[name])
    if noise:
        collapsed = ", ".join(f"{kind} {TIMES}{n}" if n > 1 else kind for kind, n in noise.most_common())
        lines.append(f"\n_{sum(noise.values())} ambient-state / dynamic-marking guards collapsed: {collapsed}_")
    if entry.guards_omitted:
        lines.append(f"_{entry.guards_omitted} more guards not recorded_")
    return "\n".join(lines)


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


def _failed_guards(seen: Observed) -> list[str]:
    out = []
    for recompile in seen.recompiles[:MAX_HISTORY]:
        failed = recompile.failed_guards[-1] if recompile.failed_guards else None
        if failed is None:
            continue
        where = f" (line {failed.line})" if failed.line is not None else ""
        out.append(f"- {recompile.compile_id}: `{readable_guard_text(failed.text)}` failed{where}")
    return out
