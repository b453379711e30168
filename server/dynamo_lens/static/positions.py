"""``ast`` positions (1-based lines, 0-based UTF-8 *byte* columns) → :class:`~dynamo_lens.model.Span` (1-based
*character* columns, exclusive end). The only place in ``static`` that knows about bytes."""

from __future__ import annotations

import ast
import io
from collections.abc import Sequence

from dynamo_lens.model import Span


def split_lines(text: str) -> list[str]:
    """The lines of ``text`` with their endings, broken where Python's tokenizer breaks them (``\\n``, ``\\r\\n``,
    ``\\r``; unlike ``str.splitlines``, not at form feeds and other separators): line ``n`` of an ``ast`` node is
    ``lines[n - 1]``."""
    return io.StringIO(text, newline="").readlines()


class LineIndex:
    """Converts byte columns of one file to character columns; free for ASCII text, cached per line otherwise."""

    __slots__ = ("_ascii", "_encoded", "_lines", "_text", "path")

    def __init__(self, path: str, text: str, lines: Sequence[str] | None = None) -> None:
        """``lines``: ``split_lines(text)`` when the caller already has them."""
        self.path = path
        self._text = text
        self._ascii = text.isascii()
        self._lines = lines
        self._encoded: dict[int, bytes | None] = {}

    @property
    def lines(self) -> Sequence[str]:
        """The file's lines with their endings, as ``ast`` counts them (see :func:`split_lines`)."""
        if self._lines is None:
            self._lines = split_lines(self._text)
        return self._lines

    def column(self, line: int, byte_column: int) -> int:
        """1-based character column of ``byte_column`` (0-based, UTF-8) on 1-based ``line``."""
        if self._ascii or byte_column == 0:
            return byte_column + 1
        encoded = self._line_bytes(line)
        if encoded is None:
            return byte_column + 1  # an ASCII line of a non-ASCII file
        return len(encoded[:byte_column].decode("utf-8", "replace")) + 1

    def span(self, node: ast.AST) -> Span:
        """The span of an ``ast`` expression or statement."""
        line: int = node.lineno  # type: ignore[attr-defined]
        end_line: int = node.end_lineno or line  # type: ignore[attr-defined]
        start: int = node.col_offset  # type: ignore[attr-defined]
        end: int | None = node.end_col_offset  # type: ignore[attr-defined]
        return Span(
            self.path,
            line,
            self.column(line, start),
            end_line,
            self.column(end_line, start if end is None else end),
        )

    def source(self, node: ast.AST, limit: int = 80) -> str:
        """The source text of ``node`` on one line (cut to ``limit`` characters)."""
        line: int = node.lineno  # type: ignore[attr-defined]
        end_line = node.end_lineno  # type: ignore[attr-defined]
        end = node.end_col_offset  # type: ignore[attr-defined]
        if end_line == line and end is not None:
            encoded = self._line_bytes(line) if not self._ascii else None
            start: int = node.col_offset  # type: ignore[attr-defined]
            if encoded is None:
                lines = self.lines
                segment = lines[line - 1][start:end] if 0 < line <= len(lines) else ""
            else:
                segment = encoded[start:end].decode("utf-8", "replace")
        else:
            try:
                segment = " ".join(ast.unparse(node).split())
            except Exception:  # a node the unparser does not accept
                return ""
        return segment if len(segment) <= limit else segment[: limit - 1] + "…"

    def _line_bytes(self, line: int) -> bytes | None:
        """The UTF-8 bytes of ``line``, or None when the line is ASCII (bytes and characters coincide)."""
        if line in self._encoded:
            return self._encoded[line]
        lines = self.lines
        text = lines[line - 1] if 0 < line <= len(lines) else ""
        encoded = None if text.isascii() else text.encode("utf-8", "surrogatepass")
        self._encoded[line] = encoded
        return encoded
