"""Reading source files for the scan: bytes from disk, then text, with a clear message for each file that cannot be.

Regular files only (a FIFO or device named ``x.py`` would block or never end); files holding a NUL byte are
treated as binary and skipped; text is UTF-8 (a BOM is dropped) unless a PEP 263 coding declaration on the first
two lines says otherwise.
"""

from __future__ import annotations

import codecs
import os
import re
import stat
from dataclasses import dataclass

_CODING = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")
_UTF8_BOM = codecs.BOM_UTF8


@dataclass(frozen=True, slots=True)
class FileProblem:
    """A file that could not be analysed, and why (shown on stderr; the other files are still analysed)."""

    path: str
    message: str
    line: int | None = None
    column: int | None = None
    reason: str = ""
    """What ``check``'s summary line counts it under (``"binary"``, ``"syntax error"``); empty for a directory."""
    partial: bool = False
    """The file was still analysed, up to the problem (the lines above a syntax error); else it was skipped."""
    cell: int | None = None
    """In a notebook, the cell ``line`` counts in (as :attr:`model.Span.cell`)."""


def read_bytes(path: str) -> bytes | FileProblem:
    """The content of the regular file at ``path``, or why it cannot be read."""
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            return FileProblem(path, "not a regular file; skipped", reason="not a regular file")
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as exc:
        return FileProblem(path, f"cannot read: {exc.strerror or exc}", reason="unreadable")


def decode_source(path: str, data: bytes) -> str | FileProblem:
    """``data`` as text, or why it is not Python source (binary, or bytes invalid in its encoding)."""
    if b"\0" in data:
        return FileProblem(path, "binary file (contains NUL bytes); skipped", reason="binary")
    if data.startswith(_UTF8_BOM):
        data = data[len(_UTF8_BOM) :]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        utf8_error = exc
    encoding = _declared_encoding(data)
    if encoding is not None:
        try:
            return data.decode(encoding)
        except (LookupError, UnicodeDecodeError) as exc:
            return FileProblem(
                path, f"cannot decode with its declared encoding {encoding!r}: {exc}", reason="not decodable"
            )
    line = data.count(b"\n", 0, utf8_error.start) + 1
    line_start = data.rfind(b"\n", 0, utf8_error.start) + 1
    column = len(data[line_start : utf8_error.start].decode("utf-8", "replace")) + 1
    byte = data[utf8_error.start]
    return FileProblem(
        path,
        f"not valid UTF-8 (byte 0x{byte:02x}) and no coding declaration; skipped",
        line=line,
        column=column,
        reason="not decodable",
    )


def _declared_encoding(data: bytes) -> str | None:
    for line in data.split(b"\n", 2)[:2]:
        match = _CODING.match(line)
        if match is not None:
            return match.group(1).decode("ascii")
    return None
