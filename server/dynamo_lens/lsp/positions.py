"""The one place that converts between our positions and LSP's.

Conventions (nothing else in ``lsp/`` does this arithmetic):

* **Ours** (:class:`dynamo_lens.model.Span`): lines are 1-based, columns are 1-based and count Unicode code points
  (characters); ``end_column`` is exclusive.
* **LSP** (``lsprotocol.types.Position``): lines are 0-based, ``character`` is a 0-based offset in **UTF-16 code
  units** (the default ``positionEncoding``, and the only one VS Code speaks). A character outside the Basic
  Multilingual Plane (an emoji) counts 2 units; everything else counts 1.

Both directions clamp instead of raising: a line past the end maps to the end of the document, a column past the end
of its line maps to the end of that line, and a UTF-16 offset that falls inside a surrogate pair rounds down to the
character that contains it. Editors send such positions while a file is being typed; answering them is not an error.
"""

from __future__ import annotations

from collections.abc import Sequence

from lsprotocol import types

from dynamo_lens.model import Span


def utf16_length(text: str) -> int:
    """Number of UTF-16 code units in ``text``."""
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


def char_to_utf16(line_text: str, char_index: int) -> int:
    """0-based character index in ``line_text`` → 0-based UTF-16 offset (clamped to the line)."""
    char_index = max(0, min(char_index, len(line_text)))
    prefix = line_text[:char_index]
    return char_index if prefix.isascii() else utf16_length(prefix)


def utf16_to_char(line_text: str, utf16_offset: int) -> int:
    """0-based UTF-16 offset → 0-based character index in ``line_text`` (clamped; rounds down in a surrogate pair)."""
    if line_text.isascii():
        return max(0, min(utf16_offset, len(line_text)))
    units = 0
    for index, ch in enumerate(line_text):
        units += 2 if ord(ch) > 0xFFFF else 1
        if units > utf16_offset:
            return index
    return len(line_text)


def _line_text(lines: Sequence[str], index: int) -> str:
    """The text of 0-based line ``index`` without its line ending ("" past the end)."""
    if 0 <= index < len(lines):
        return lines[index].rstrip("\r\n")
    return ""


def to_lsp_position(lines: Sequence[str], line: int, column: int) -> types.Position:
    """1-based ``line``/character ``column`` (ours) → LSP position in the document made of ``lines``."""
    index = line - 1
    if index >= len(lines):
        last = len(lines) - 1
        return types.Position(line=max(last, 0), character=utf16_length(_line_text(lines, last)))
    index = max(index, 0)
    return types.Position(line=index, character=char_to_utf16(_line_text(lines, index), column - 1))


def from_lsp_position(lines: Sequence[str], position: types.Position) -> tuple[int, int]:
    """LSP position → our 1-based ``(line, column)`` in the document made of ``lines`` (clamped)."""
    if position.line >= len(lines):
        last = max(len(lines) - 1, 0)
        return last + 1, len(_line_text(lines, last)) + 1
    text = _line_text(lines, position.line)
    return position.line + 1, utf16_to_char(text, position.character) + 1


def span_to_range(lines: Sequence[str], span: Span) -> types.Range:
    """Our :class:`Span` → LSP range in the document made of ``lines``."""
    start = to_lsp_position(lines, span.line, span.column)
    end = to_lsp_position(lines, span.end_line, span.end_column)
    if (end.line, end.character) < (start.line, start.character):
        end = start
    return types.Range(start=start, end=end)
