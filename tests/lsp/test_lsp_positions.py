"""positions.py: 1-based characters ↔ 0-based UTF-16, clamped at the edges."""

from __future__ import annotations

import pytest
from lsprotocol import types

from dynamo_lens.lsp.positions import (
    char_to_utf16,
    from_lsp_position,
    span_to_range,
    to_lsp_position,
    utf16_to_char,
)
from dynamo_lens.model import Span

LINES = ["x = 1\n", 'y = "é😀"; self.n += 1\n', "z\n"]


@pytest.mark.parametrize(
    ("line", "column", "expected"),
    [
        pytest.param(1, 1, (0, 0), id="start of file"),
        pytest.param(2, 12, (1, 12), id="after an astral character: one more UTF-16 unit"),
        pytest.param(2, 7, (1, 6), id="the astral character itself starts at its UTF-16 offset"),
        pytest.param(2, 8, (1, 8), id="right after the astral character"),
        pytest.param(2, 200, (1, 22), id="column past the end of the line: end of line"),
        pytest.param(9, 1, (2, 1), id="line past the end of the file: end of file"),
        pytest.param(0, 5, (0, 4), id="line 0 is clamped to the first line"),
    ],
)
def test_to_lsp_position(line: int, column: int, expected: tuple[int, int]) -> None:
    position = to_lsp_position(LINES, line, column)
    assert (position.line, position.character) == expected


@pytest.mark.parametrize(
    ("line", "character", "expected"),
    [
        pytest.param(1, 12, (2, 12), id="after the astral character"),
        pytest.param(1, 7, (2, 7), id="inside the surrogate pair: rounds down to the character"),
        pytest.param(1, 99, (2, 22), id="past the end of the line"),
        pytest.param(7, 0, (3, 2), id="past the end of the file"),
    ],
)
def test_from_lsp_position(line: int, character: int, expected: tuple[int, int]) -> None:
    assert from_lsp_position(LINES, types.Position(line=line, character=character)) == expected


def test_round_trip_on_every_character() -> None:
    text = 'a = "é😀"; b = "👩‍👩‍👧"; c\n'
    for index in range(len(text.rstrip("\n")) + 1):
        position = to_lsp_position([text], 1, index + 1)
        assert from_lsp_position([text], position) == (1, index + 1)
        assert utf16_to_char(text, char_to_utf16(text, index)) == index


def test_span_to_range_never_ends_before_it_starts() -> None:
    span = Span("f.py", 2, 10, 1, 1)
    rng = span_to_range(LINES, span)
    assert rng.end == rng.start


def test_empty_document() -> None:
    assert to_lsp_position([], 3, 3) == types.Position(line=0, character=0)
    assert from_lsp_position([], types.Position(line=4, character=4)) == (1, 1)
