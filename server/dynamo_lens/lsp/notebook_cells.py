"""Open notebooks' cells as documents: which cell a position of the notebook's module is in, and the findings of
each cell document with positions counted in it (the language server's edge of ``notebooks``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from dynamo_lens import notebooks
from dynamo_lens.model import Edit, Finding, Related, Span
from dynamo_lens.notebooks import Cell


@dataclass(frozen=True, slots=True)
class OpenNotebook:
    """Where the cells of an open notebook lie in its module, and the document each cell is."""

    uri: str
    cells: tuple[Cell, ...]
    cell_uris: dict[int, str]
    """Cell index → its cell document's URI. The index counts the cells the editor syncs (VS Code: the Python ones
    only), not every cell of the file as ``check`` does."""


def notebook_of_cell(open_notebooks: Mapping[str, OpenNotebook], cell_uri: str) -> tuple[str, OpenNotebook] | None:
    """The open notebook a cell document belongs to, with its path."""
    for path, notebook in open_notebooks.items():
        if cell_uri in notebook.cell_uris.values():
            return path, notebook
    return None


def module_line(notebook: OpenNotebook, cell_uri: str, line: int) -> int | None:
    """The line of the notebook's module (0-based, as LSP counts) that line ``line`` of a cell document is."""
    cell = _cell_of(notebook, cell_uri)
    return cell.first_line - 1 + line if cell is not None and 0 <= line < cell.lines else None


def line_in_cell(notebook: OpenNotebook, cell_uri: str, line: int) -> int | None:
    """The line of the cell document (1-based) that line ``line`` (1-based) of the notebook's module is, if any."""
    cell = _cell_of(notebook, cell_uri)
    return line - cell.first_line + 1 if cell is not None and 0 <= line - cell.first_line < cell.lines else None


def _cell_of(notebook: OpenNotebook, cell_uri: str) -> Cell | None:
    index = next((i for i, uri in notebook.cell_uris.items() if uri == cell_uri), None)
    return next((c for c in notebook.cells if c.index == index), None)


def cell_findings(
    notebook: OpenNotebook, findings: Iterable[tuple[Finding, bool]]
) -> dict[str, list[tuple[Finding, bool]]]:
    """``(finding, stale)`` pairs of the notebook's module, by the cell document they are in, their spans in that
    document's lines (a related place, or a fix's edit, in no one cell is left out: it has nowhere to point)."""
    by_cell: dict[str, list[tuple[Finding, bool]]] = {uri: [] for uri in notebook.cell_uris.values()}
    for finding, stale in findings:
        located = notebooks.locate(finding, notebook.cells)
        span = _in_cell_document(located.span, notebook)
        if span is None:
            continue
        related = tuple(
            Related(where, r.message)
            for r in located.related
            if (where := _in_cell_document(r.span, notebook) if r.span.path == finding.path else r.span) is not None
        )
        fixes = tuple(
            replace(fix, edits=edits) for fix in located.fixes if (edits := _edits_in_cells(fix.edits, notebook))
        )
        by_cell[span.path].append((replace(located, span=span, related=related, fixes=fixes), stale))
    return by_cell


def _edits_in_cells(edits: Iterable[Edit], notebook: OpenNotebook) -> tuple[Edit, ...]:
    """The edits in cell documents; none when one of them is in no one cell (half a fix is no fix)."""
    placed = []
    for edit in edits:
        where = _in_cell_document(edit.span, notebook)
        if where is None:
            return ()
        placed.append(Edit(where, edit.new_text))
    return tuple(placed)


def _in_cell_document(span: Span, notebook: OpenNotebook) -> Span | None:
    """A cell-relative span as a span of the cell's document (its URI standing for the path)."""
    index = span.cell.index if span.cell is not None else None
    uri = notebook.cell_uris.get(index) if index is not None else None
    return replace(span, path=uri, cell=None) if uri is not None else None
