"""Reading source files for the scan: bytes from disk, then text (or a notebook's module), with a clear message for
each file that cannot be.

Regular files only (a FIFO or device named ``x.py`` would block or never end); files holding a NUL byte are
treated as binary and skipped; text is UTF-8 (a BOM is dropped) unless a PEP 263 coding declaration on the first
two lines says otherwise.
"""

from __future__ import annotations

import codecs
import json
import os
import re
import stat
from collections.abc import Sequence
from dataclasses import dataclass, replace

from dynamo_lens import notebooks
from dynamo_lens.model import CellRef
from dynamo_lens.notebooks import Cell, NotebookModule

_CODING = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")
_UTF8_BOM = codecs.BOM_UTF8
_MESSAGE_LINE = re.compile(r"\(line (\d+)\)$")
"""Where the analyzer's message of a syntax error says it is."""


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
    cell: CellRef | None = None
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


def decode_notebook(path: str, data: bytes) -> NotebookModule | FileProblem:
    """The module of the notebook file ``path`` holding ``data`` (nbformat 4 JSON), or why it is not one."""
    try:
        document = json.loads(data.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        return FileProblem(path, f"not a notebook: not valid UTF-8 ({exc.reason}); skipped", reason="not a notebook")
    except json.JSONDecodeError as exc:
        return FileProblem(
            path,
            f"not a notebook: invalid JSON ({exc.msg}); skipped",
            line=exc.lineno,
            column=exc.colno,
            reason="not a notebook",
        )
    cells = document.get("cells") if isinstance(document, dict) else None
    if not isinstance(cells, list):
        return FileProblem(path, "not a notebook: no list of cells; skipped", reason="not a notebook")
    language = _language(document)
    if language not in ("", "python"):
        return FileProblem(path, f"a {language} notebook, not Python; skipped", reason="not Python")
    code: list[tuple[int, str]] = []
    for index, cell in enumerate(cells):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        if isinstance(source, list) and all(isinstance(part, str) for part in source):
            source = "".join(source)
        if not isinstance(source, str):
            problem = f"not a notebook: cell {index + 1} has no text source; skipped"
            return FileProblem(path, problem, reason="not a notebook")
        code.append((index, source))
    return notebooks.module_of_cells(code)


def problem_in_cell(problem: FileProblem, cells: Sequence[Cell]) -> FileProblem:
    """A problem at a module line (a syntax error: ``... (line 12)`` in its message) at its line within its cell."""
    found = _MESSAGE_LINE.search(problem.message)
    line = int(found.group(1)) if found is not None else problem.line
    cell = notebooks.cell_at(line, cells) if line is not None else None
    if cell is None or line is None:
        return problem
    within = line - cell.first_line + 1
    message = problem.message
    if found is not None:
        message = f"{message[: found.start()]}(cell {cell.index + 1}, line {within})"
    line = within if problem.line is not None else None
    return replace(problem, message=message, line=line, cell=CellRef(cell.index))


def _declared_encoding(data: bytes) -> str | None:
    for line in data.split(b"\n", 2)[:2]:
        match = _CODING.match(line)
        if match is not None:
            return match.group(1).decode("ascii")
    return None


def _language(document: dict[str, object]) -> str:
    """The notebook's language as its metadata says (``""`` when it does not)."""
    metadata = document.get("metadata")
    if not isinstance(metadata, dict):
        return ""
    kernel, info = metadata.get("kernelspec"), metadata.get("language_info")
    for value in (
        kernel.get("language") if isinstance(kernel, dict) else None,
        info.get("name") if isinstance(info, dict) else None,
    ):
        if isinstance(value, str) and value:
            return value.lower()
    return ""
