"""documents.py: runtime findings follow edits: shifted when the edit is elsewhere, stale when it touches them."""

from __future__ import annotations

import pytest
from lsprotocol import types

from dynamo_lens.lsp.documents import TrackedFinding, track_change
from dynamo_lens.model import Finding, Related, Severity, Span

OLD = ["a\n", "b\n", "self.steps += 1\n", "d\n"]


def tracked(line: int = 3) -> TrackedFinding:
    span = Span("m.py", line, 1, line, 16)
    related = (Related(Span("m.py", 4, 1, 4, 2), "read here"), Related(Span("other.py", 4, 1, 4, 2), "compiled"))
    return TrackedFinding(Finding("DL501", Severity.WARNING, span, "recompiled", source="runtime", related=related))


def edit(start: tuple[int, int], end: tuple[int, int], text: str) -> types.TextDocumentContentChangePartial:
    return types.TextDocumentContentChangePartial(
        range=types.Range(start=types.Position(*start), end=types.Position(*end)), text=text
    )


@pytest.mark.parametrize(
    ("change", "line", "stale"),
    [
        pytest.param(edit((0, 0), (0, 0), "new\n"), 4, False, id="line inserted above: shifted down"),
        pytest.param(edit((0, 0), (1, 0), ""), 2, False, id="line deleted above: shifted up"),
        pytest.param(edit((2, 0), (2, 0), "\n\n"), 5, False, id="Enter at the start of the line: moved, intact"),
        pytest.param(edit((2, 5), (2, 10), "count"), 3, True, id="the line itself edited: stale"),
        pytest.param(edit((1, 1), (2, 3), ""), 3, True, id="edit ending inside the line: stale"),
        pytest.param(edit((3, 0), (3, 1), "x\ny"), 3, False, id="edit below: untouched"),
        pytest.param(edit((1, 1), (1, 1), "\n"), 4, False, id="newline typed at the end of the line above"),
    ],
)
def test_partial_edits(change: types.TextDocumentContentChangePartial, line: int, stale: bool) -> None:
    [moved] = track_change([tracked()], change, OLD)
    assert (moved.finding.span.line, moved.stale) == (line, stale)
    same_file, other_file = moved.finding.related
    if not stale:
        assert same_file.span.line == 4 + (line - 3)
    assert other_file.span.line == 4


def test_whole_document_replacement_uses_a_line_diff() -> None:
    change = types.TextDocumentContentChangeWholeDocument(text="# header\n" + "".join(OLD))
    [moved] = track_change([tracked()], change, OLD)
    assert (moved.finding.span.line, moved.stale) == (4, False)
    change = types.TextDocumentContentChangeWholeDocument(text="a\nb\nself.steps += 2\nd\n")
    [edited] = track_change([tracked()], change, OLD)
    assert edited.stale
