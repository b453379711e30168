"""Per-document state: the findings shown for each file, and runtime findings carried along as the user edits.

Static findings are recomputed for every version, so they are simply replaced. Runtime findings come from a run of
an older text: :func:`track_change` moves them with each edit. An edit entirely above a finding shifts it by the number
of lines added or removed; an edit that touches the finding's lines marks it stale (it is still shown, saying so, until
the next run), because what the run measured may no longer be what the line says.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from lsprotocol import types

from dynamo_lens.model import Finding, Related, Span


@dataclass(frozen=True, slots=True)
class TrackedFinding:
    """A runtime finding whose span follows the text; ``stale`` once the text it points at was edited."""

    finding: Finding
    stale: bool = False


@dataclass(slots=True)
class DocumentState:
    """What the server shows for one file. Mutated only on the event loop."""

    path: str
    open: bool = False
    version: int | None = None
    lines: list[str] = field(default_factory=list)
    """The editor's text (open documents only), kept to carry runtime findings across whole-text replacements."""
    static: tuple[Finding, ...] = ()
    static_version: int | None = None
    """The document version the static findings were computed for (``None``: not yet analysed)."""
    static_snapshot: int = 0
    """The snapshot of the workspace analyses the static findings were linked from (``analysis.Linked``): a link
    of an older snapshot, finishing later, must not replace them."""
    runtime: tuple[TrackedFinding, ...] = ()
    published: int = 0
    """Bumped each time the visible findings change; part of the pull-diagnostics result id."""
    last_change: float = 0.0
    """Event-loop time of the last edit (for the debounce)."""
    pending: Any = None
    """The scheduled analysis (an ``asyncio.Task``), cancelled when a newer edit arrives."""


class DocumentStore:
    """Document states keyed by file path, for open documents and for files that only have findings."""

    def __init__(self) -> None:
        self._states: dict[str, DocumentState] = {}

    def get(self, path: str) -> DocumentState:
        state = self._states.get(path)
        if state is None:
            state = self._states[path] = DocumentState(path=path)
        return state

    def find(self, path: str) -> DocumentState | None:
        return self._states.get(path)

    def paths(self) -> list[str]:
        return list(self._states)

    def drop(self, path: str) -> None:
        self._states.pop(path, None)


def shift_span(span: Span, delta: int) -> Span:
    return replace(span, line=span.line + delta, end_line=span.end_line + delta)


def _shift_finding(finding: Finding, delta: int) -> Finding:
    if delta == 0:
        return finding
    related = tuple(
        Related(shift_span(r.span, delta), r.message) if r.span.path == finding.path and r.span.line > 0 else r
        for r in finding.related
    )
    return replace(finding, span=shift_span(finding.span, delta), related=related)


def track_change(
    tracked: Sequence[TrackedFinding], change: types.TextDocumentContentChangeEvent, old_lines: Sequence[str]
) -> tuple[TrackedFinding, ...]:
    """Carry ``tracked`` findings across one content change (``old_lines``: the text before the change)."""
    if not tracked:
        return ()
    if isinstance(change, types.TextDocumentContentChangePartial):
        return tuple(_track_partial(t, change.range, change.text) for t in tracked)
    new_lines = change.text.splitlines(keepends=True)
    return _track_full(tracked, old_lines, new_lines)


def _track_partial(item: TrackedFinding, edited: types.Range, text: str) -> TrackedFinding:
    first = item.finding.span.line - 1
    last = item.finding.span.end_line - 1
    # The edit rewrites old lines start..end. The old end line survives whole when the edit stops at its first
    # character and what comes before it still ends a line (typing Enter at the start of a line moves it down).
    end_line_intact = edited.end.character == 0 and (
        text.endswith("\n") or (text == "" and edited.start.character == 0)
    )
    untouched_from = edited.end.line if end_line_intact else edited.end.line + 1
    delta = text.count("\n") - (edited.end.line - edited.start.line)
    if last < edited.start.line:
        return item
    if first >= untouched_from:
        return TrackedFinding(_shift_finding(item.finding, delta), item.stale)
    return TrackedFinding(item.finding, stale=True)


def _track_full(
    tracked: Sequence[TrackedFinding], old_lines: Sequence[str], new_lines: Sequence[str]
) -> tuple[TrackedFinding, ...]:
    """A whole-document replacement: map each old line to its new place through a line diff."""
    matcher = difflib.SequenceMatcher(a=list(old_lines), b=list(new_lines), autojunk=False)
    moved: dict[int, int] = {}
    for block in matcher.get_matching_blocks():
        for offset in range(block.size):
            moved[block.a + offset] = block.b + offset
    out = []
    for item in tracked:
        span = item.finding.span
        lines = range(span.line - 1, span.end_line)
        targets = [moved.get(i) for i in lines]
        if any(t is None for t in targets):
            out.append(TrackedFinding(item.finding, stale=True))
        else:
            out.append(TrackedFinding(_shift_finding(item.finding, (targets[0] or 0) - (span.line - 1)), item.stale))
    return tuple(out)
