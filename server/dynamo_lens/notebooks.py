"""Jupyter notebooks as Python modules: the code cells in order, one after the other, as one text; and the way
back from a line of that text to its cell.

The analyzer reads a notebook as the module its kernel builds up when the cells run top to bottom (a class defined
in cell 2 and compiled in cell 4 is one compile site reaching one class). Positions stay in that module's lines
until they reach the user: :func:`locate` turns them into a cell and a line within it (the CLI's
``nb.ipynb:cell 3:12:5``, the ``cell`` of a JSON span, an editor's cell document).

IPython's own syntax is not Python: a line magic (``%timeit f()``), a shell escape (``!pip install x``, ``files = !ls``)
and a help request (``obj?``) become ``pass`` at their indentation, and a cell magic (``%%time``) blanks its cell,
so the other lines keep their numbers and the module still parses.

Standard library only: the language server imports this without the analyzer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from dynamo_lens.model import Edit, Finding, Related, Span
from dynamo_lens.scan_sources import FileProblem

NOTEBOOK_SUFFIX = ".ipynb"
_IPYTHON_LINE = re.compile(r"^([ \t]*)(?:[%!]|[\w.]+[ \t]*=[ \t]*[%!]|[\w.\[\]()]+\?{1,2}[ \t]*$)")
"""A line magic, a shell escape (alone or assigned), or a help request; group 1 is the indentation."""
_MESSAGE_LINE = re.compile(r"\(line (\d+)\)$")
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug"})
"""Cell magics that run the rest of their cell as Python code in the kernel."""


@dataclass(frozen=True, slots=True)
class Cell:
    """One code cell inside the module text."""

    index: int
    """Its place among all the notebook's cells (0-based, markdown cells counted), as nbformat and editors number
    them; the text output shows it counted from 1."""
    first_line: int
    """The module line its first line is on (1-based)."""
    lines: int
    """How many module lines it takes."""


@dataclass(frozen=True, slots=True)
class NotebookModule:
    """The module a notebook's code cells make, and where each cell lies in it."""

    text: str
    cells: tuple[Cell, ...]


def is_notebook(path: str) -> bool:
    return path.endswith(NOTEBOOK_SUFFIX)


def module_of_cells(cells: Iterable[tuple[int, str]]) -> NotebookModule:
    """The module of the code cells ``(index, source)``, in the order given (the notebook's)."""
    parts: list[str] = []
    placed: list[Cell] = []
    line = 1
    for index, source in cells:
        lines = _python_lines(source)
        placed.append(Cell(index, line, len(lines)))
        parts.extend(lines)
        line += len(lines)
    return NotebookModule("".join(f"{text}\n" for text in parts), tuple(placed))


def read_notebook(path: str, data: bytes) -> NotebookModule | FileProblem:
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
    return module_of_cells(code)


def locate(finding: Finding, cells: Sequence[Cell]) -> Finding:
    """``finding`` with each of its spans in the notebook ``cells`` made cell-relative (its ``cell`` set)."""

    def place(span: Span) -> Span:
        return locate_span(span, cells) if span.path == finding.path else span

    return replace(
        finding,
        span=place(finding.span),
        related=tuple(Related(place(r.span), r.message) for r in finding.related),
        fixes=tuple(replace(f, edits=tuple(Edit(place(e.span), e.new_text) for e in f.edits)) for f in finding.fixes),
    )


def locate_span(span: Span, cells: Sequence[Cell]) -> Span:
    """``span`` (module lines) as a span within its cell; unchanged when it lies in no cell or spans two."""
    cell = cell_at(span.line, cells)
    if cell is None or span.cell is not None or span.end_line >= cell.first_line + cell.lines:
        return span
    offset = cell.first_line - 1
    return replace(span, line=span.line - offset, end_line=span.end_line - offset, cell=cell.index)


def locate_problem(problem: FileProblem, cells: Sequence[Cell]) -> FileProblem:
    """A problem at a module line (a syntax error: ``... (line 12)`` in its message) at its line within its cell."""
    found = _MESSAGE_LINE.search(problem.message)
    line = int(found.group(1)) if found is not None else problem.line
    cell = cell_at(line, cells) if line is not None else None
    if cell is None or line is None:
        return problem
    within = line - cell.first_line + 1
    message = problem.message
    if found is not None:
        message = f"{message[: found.start()]}(cell {cell.index + 1}, line {within})"
    return replace(problem, message=message, line=within if problem.line is not None else None, cell=cell.index)


def cell_at(line: int, cells: Sequence[Cell]) -> Cell | None:
    """The cell the module line ``line`` is in."""
    for cell in cells:
        if cell.first_line <= line < cell.first_line + cell.lines:
            return cell
    return None


def _python_lines(source: str) -> list[str]:
    """The cell's lines with IPython syntax replaced (one line out for each line in)."""
    lines = source.splitlines()
    out: list[str] = []
    if lines and lines[0].lstrip().startswith("%%"):
        if lines[0].lstrip()[2:].split(" ", 1)[0] not in PYTHON_CELL_MAGICS:
            return [""] * len(lines)  # `%%bash`, `%%writefile x.py`: not run as Python here
        out.append("")  # `%%time`: the rest of the cell runs as Python
        lines = lines[1:]
    python_continues = magic_continues = False
    for line in lines:
        if magic_continues:  # `%magic a \` goes on here
            out.append("")
            magic_continues = line.endswith("\\")
            continue
        match = None if python_continues else _IPYTHON_LINE.match(line)
        out.append(f"{match.group(1)}pass" if match is not None else line)
        magic_continues = match is not None and line.endswith("\\")
        python_continues = match is None and line.endswith("\\")
    return out


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
