"""Jupyter notebooks as Python modules: the code cells in order, one after the other, as one text; and the way
back from a line of that text to its cell.

The analyzer reads a notebook as the module its kernel builds up when the cells run top to bottom (a class defined
in cell 2 and compiled in cell 4 is one compile site reaching one class). Positions stay in that module's lines
until they reach the user: :func:`locate` turns them into a cell and a line within it (the CLI's
``nb.ipynb:cell 3:12:5``, the ``cell`` of a JSON span, an editor's cell document).

IPython's own syntax is not Python: a line magic (``%timeit f()``), a shell escape (``!pip install x``, ``files = !ls``)
and a help request (``obj?``) become ``pass`` at their indentation, and a cell magic blanks its cell (``%%bash``) or
just its own line (``%%time``, whose cell runs as Python), so the other lines keep their numbers and the module
still parses.

Reading a notebook file is ``scan_sources.decode_notebook``'s; this module needs nothing but the findings model, so
the language server loads it at start without the analyzer.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from dynamo_lens.model import CellRef, Edit, Finding, Related, Span

NOTEBOOK_SUFFIX = ".ipynb"
_IPYTHON_LINE = re.compile(r"^([ \t]*)(?:[%!]|[\w.]+[ \t]*=[ \t]*[%!]|[\w.\[\]()]+\?{1,2}[ \t]*$)")
"""A line magic, a shell escape (alone or assigned), or a help request; group 1 is the indentation."""
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug"})
"""Cell magics that run the rest of their cell as Python code in the kernel."""


@dataclass(frozen=True, slots=True)
class Cell:
    """One code cell inside the module text."""

    index: int
    """Its place among the notebook's cells (0-based): among all of them in a file (markdown cells counted, as
    nbformat numbers them; ``check`` shows it counted from 1), among those the editor syncs in the language server."""
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
    return replace(span, line=span.line - offset, end_line=span.end_line - offset, cell=CellRef(cell.index))


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


KERNEL_CELL_SEED = 0xC70F6907
"""The seed ipykernel hashes a cell's text with to name the file the cell runs as."""


def kernel_cell_name(source: str) -> str:
    """The base name of the file ipykernel (6.x, 7.x) runs a cell with this text as (``/tmp/ipykernel_<pid>/<name>``):
    the 32-bit MurmurHash2 of its UTF-8 text, seeded with :data:`KERNEL_CELL_SEED`."""
    return f"{murmur2_32(source.encode('utf-8'), KERNEL_CELL_SEED)}.py"


def is_kernel_cell_file(path: str) -> bool:
    """``path`` names a cell's file of an ipykernel (a directory ``ipykernel_<pid>``, a ``<hash>.py`` in it)."""
    directory, _, name = path.replace("\\", "/").rpartition("/")
    return directory.rpartition("/")[2].startswith("ipykernel_") and name.removesuffix(".py").isdigit()


def murmur2_32(data: bytes, seed: int) -> int:
    """MurmurHash2, 32-bit (Austin Appleby's public-domain hash): little-endian 4-byte blocks, then the tail."""
    multiplier, mask = 0x5BD1E995, 0xFFFFFFFF
    value = (seed ^ len(data)) & mask
    whole = len(data) - len(data) % 4
    for start in range(0, whole, 4):
        block = int.from_bytes(data[start : start + 4], "little") * multiplier & mask
        block ^= block >> 24
        value = (value * multiplier & mask) ^ (block * multiplier & mask)
    tail = data[whole:]
    if tail:
        value = (value ^ int.from_bytes(tail, "little")) * multiplier & mask
    value ^= value >> 13
    value = value * multiplier & mask
    return value ^ (value >> 15)
