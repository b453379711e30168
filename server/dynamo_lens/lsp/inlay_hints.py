"""``textDocument/inlayHint``: after a run, "compiled 9x · 8 recompiles · limit hit · 2 graph breaks" at the end of
each compile site and compiled ``class``/``def`` line; after a "Re-run to verify", the before → after comparison on
the compile sites; in a notebook's cells, what its kernel recorded (``kernel_runs``). The server asks the client to
refresh them (``workspace/inlayHint/refresh``) when a run ends."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial

from lsprotocol import types

from dynamo_lens.lsp import kernel_runs
from dynamo_lens.lsp.compiled import places_in_file, shown_places
from dynamo_lens.lsp.notebook_cells import line_in_cell, notebook_of_cell
from dynamo_lens.lsp.positions import to_lsp_position
from dynamo_lens.lsp.runs import RunResult
from dynamo_lens.lsp.server import DynamoLensServer


def register(server: DynamoLensServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_INLAY_HINT, types.InlayHintOptions(resolve_provider=False))
    @server.guarded(empty=[])
    def inlay_hints(params: types.InlayHintParams) -> list[types.InlayHint]:
        uri = params.text_document.uri
        path = server.path_of(uri)
        in_notebook = notebook_of_cell(server.notebooks, uri) if path is None else None
        if in_notebook is not None:  # a notebook cell: what its kernel recorded, at the cell's own lines
            notebook_path, notebook = in_notebook
            return _hints(
                server, notebook_path, server.lines_of(uri), params.range, None, partial(line_in_cell, notebook, uri)
            )
        result = server.runs.for_path(path) if path is not None else None
        if path is None or result is None or result.report is None or server.open_lines(path) is None:
            return []
        return _hints(server, path, server.lines_of(path), params.range, result)


def _hints(
    server: DynamoLensServer,
    path: str,
    lines: Sequence[str],
    shown: types.Range,
    result: RunResult | None,
    in_document: Callable[[int], int | None] = lambda line: line,
) -> list[types.InlayHint]:
    """The hints of the compiled places of ``path`` at their lines of the document (``in_document``, as for lenses)
    within ``shown``: what the notebook's kernel recorded, else the last run of the file."""
    hints = []
    for place in shown_places(places_in_file(path, server.analysis.model())):
        line = in_document(place.line)
        if line is None or not shown.start.line <= line - 1 <= shown.end.line:
            continue
        found = kernel_runs.seen(server, place, path, result.report if result is not None else None)
        label = found[0].stats_text() if found is not None else ""
        if place.kind == "site" and result is not None and result.verification is not None:
            label = f"{label} · verified: {result.verification['text']}".lstrip(" ·")
        if label:
            end = to_lsp_position(lines, line, 1 << 30)
            hints.append(types.InlayHint(position=end, label=f"  {label}", padding_left=True))
    return hints
