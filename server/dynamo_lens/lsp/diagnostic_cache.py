"""Diagnostics of findings that come back unchanged, built and serialised once.

Every keystroke republishes the document's findings, and nearly all of them are the ones published last time. A
diagnostic depends on its finding and on the text of the lines its positions fall on (columns are UTF-16 offsets
into them). :class:`DiagnosticCache` keeps, per document, the entries its last publication used; the next one reuses
each entry whose finding is equal and whose lines read the same. :meth:`DiagnosticCache.install` makes the server's
converter serialise a cached diagnostic from the JSON it produced the first time instead of walking it again.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from cattrs import Converter
from lsprotocol import types

from dynamo_lens.lsp.convert import LinesOf, to_diagnostic
from dynamo_lens.model import Finding, Span

_Key = tuple[object, ...]


@dataclass(slots=True, eq=False)
class _Entry:
    key: _Key
    finding: Finding
    diagnostic: types.Diagnostic
    json: dict[str, Any] | None = None


class DiagnosticCache:
    def __init__(self) -> None:
        self._by_path: dict[str, list[_Entry]] = {}
        self._by_diagnostic: dict[int, _Entry] = {}
        """``id`` of every cached diagnostic → its entry (the entries keep the diagnostics alive)."""

    def diagnostics(
        self, path: str, findings: Iterable[tuple[Finding, bool]], lines_of: LinesOf
    ) -> list[types.Diagnostic]:
        """The diagnostics of ``(finding, stale)`` pairs of the document ``path``, reusing last time's."""
        previous = {entry.key: entry for entry in self._by_path.get(path, ())}
        used: list[_Entry] = []
        for finding, stale in findings:
            key = _key(finding, stale, lines_of)
            entry = previous.get(key)
            if entry is None or entry.finding != finding:
                entry = _Entry(key, finding, to_diagnostic(finding, lines_of, stale=stale))
                self._by_diagnostic[id(entry.diagnostic)] = entry
            used.append(entry)
        self._keep(path, used)
        return [entry.diagnostic for entry in used]

    def _keep(self, path: str, used: list[_Entry]) -> None:
        """``used`` become the entries of ``path``; the others are dropped."""
        kept = {id(entry.diagnostic) for entry in used}
        for entry in self._by_path.pop(path, ()):
            if id(entry.diagnostic) not in kept:
                self._by_diagnostic.pop(id(entry.diagnostic), None)
        if used:
            self._by_path[path] = used

    def install(self, converter: Converter) -> None:
        """Serialise cached diagnostics through their stored JSON (computed by the converter's own hook once)."""
        build = converter.get_unstructure_hook(types.Diagnostic)

        def unstructure(diagnostic: types.Diagnostic) -> Any:
            entry = self._by_diagnostic.get(id(diagnostic))
            if entry is None or entry.diagnostic is not diagnostic:
                return build(diagnostic)
            if entry.json is None:
                entry.json = build(diagnostic)
            return entry.json

        converter.register_unstructure_hook(types.Diagnostic, unstructure)


def _key(finding: Finding, stale: bool, lines_of: LinesOf) -> _Key:
    """What a diagnostic is built from, cheap to hash: the finding's identity and the lines its positions use."""
    spans = (finding.span, *(related.span for related in finding.related))
    return (finding.code, finding.message, stale, *spans, *(_line_texts(span, lines_of) for span in spans))


def _line_texts(span: Span, lines_of: LinesOf) -> tuple[str, str]:
    lines = lines_of(span.path)
    return _line(lines, span.line), _line(lines, span.end_line)


def _line(lines: Sequence[str], number: int) -> str:
    return lines[number - 1] if 0 < number <= len(lines) else ""
