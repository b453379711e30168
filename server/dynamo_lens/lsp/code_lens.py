"""``textDocument/codeLens``: "▶ Run with Dynamo Lens" above ``if __name__ == "__main__":`` and pytest tests, "Show
guards" on compiled places (with the last run's counts), and "↻ Re-run to verify" in a file edited since its run.

Every lens carries its command, so no resolve step is needed; the server asks for a refresh
(``workspace/codeLens/refresh``) when a run ends.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types

from dynamo_lens.lsp import kernel_runs
from dynamo_lens.lsp.compiled import places_in_file, shown_places
from dynamo_lens.lsp.notebook_cells import line_in_cell, notebook_of_cell
from dynamo_lens.lsp.runs import RunResult
from dynamo_lens.lsp.server import DynamoLensServer

if TYPE_CHECKING:
    from dynamo_lens.static.summary import FileSummary

RUN = "dynamoLens.run"
SHOW_GUARDS = "dynamoLens.showGuards"
MAIN_GUARD = re.compile(r"""^if\s+__name__\s*==\s*(['"])__main__\1\s*:""")


def register(server: DynamoLensServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_CODE_LENS, types.CodeLensOptions(resolve_provider=False))
    @server.guarded(empty=[])
    def code_lens(params: types.CodeLensParams) -> list[types.CodeLens]:
        uri = params.text_document.uri
        path = server.path_of(uri)
        in_notebook = notebook_of_cell(server.notebooks, uri) if path is None else None
        if in_notebook is not None:  # a notebook cell: the compiled places in it
            notebook_path, notebook = in_notebook
            return guard_lenses(server, uri, notebook_path, None, partial(line_in_cell, notebook, uri))
        lines = server.open_lines(path) if path is not None else None
        if path is None or lines is None:
            return []
        summary = server.analysis.summary(path)
        lenses = run_lenses(uri, path, lines, summary)
        result = server.runs.for_path(path)
        lenses += guard_lenses(server, uri, path, result)
        if result is not None and result.versions.get(path, -1) != server.documents.get(path).version:
            lenses += verify_lenses(result, lenses)
        return sorted(lenses, key=lambda lens: lens.range.start.line)


def run_lenses(uri: str, path: str, lines: Sequence[str], summary: FileSummary | None) -> list[types.CodeLens]:
    lenses = [
        _lens(index, "▶ Run with Dynamo Lens", RUN, {"uri": uri, "args": []})
        for index, line in enumerate(lines)
        if MAIN_GUARD.match(line)
    ]
    if summary is not None and _is_test_file(path):
        for line, node_id in _tests(path, summary):
            lenses.append(
                _lens(line - 1, "▶ Run test with Dynamo Lens", RUN, {"uri": uri, "args": [], "test": node_id})
            )
    return lenses


def guard_lenses(
    server: DynamoLensServer,
    uri: str,
    path: str,
    result: RunResult | None,
    in_document: Callable[[int], int | None] = lambda line: line,
) -> list[types.CodeLens]:
    """ "Show guards" on the compiled places of ``path``, at their lines in the document ``uri`` (``in_document``:
    a line of ``path`` as a line of the document, None where the document does not show it)."""
    lenses = []
    for place in shown_places(places_in_file(path, server.analysis.model())):
        line = in_document(place.line)
        if line is None:
            continue
        title = "Show guards"
        found = kernel_runs.seen(server, place, path, result.report if result is not None else None)
        if found is not None:
            title = f"{found[0].stats_text()} · Show guards"
        arguments = {"uri": uri, "line": line - 1, "character": place.column - 1}
        lenses.append(_lens(line - 1, title, SHOW_GUARDS, arguments))
    return lenses


def verify_lenses(result: RunResult, lenses: Sequence[types.CodeLens]) -> list[types.CodeLens]:
    """One "Re-run to verify" above the first lens (or the top of the file)."""
    request = result.request
    arguments: dict[str, object] = {"uri": request.uri, "args": list(request.args), "test": request.test}
    arguments |= {"verify": True, "processes": request.processes, "guardCost": request.guard_cost}
    line = min((lens.range.start.line for lens in lenses), default=0)
    return [_lens(line, "↻ Re-run to verify", RUN, arguments)]


def _lens(line: int, title: str, command: str, argument: Mapping[str, object]) -> types.CodeLens:
    position = types.Position(line=line, character=0)
    return types.CodeLens(
        range=types.Range(start=position, end=position),
        command=types.Command(title=title, command=command, arguments=[argument]),
    )


def _is_test_file(path: str) -> bool:
    name = Path(path).name
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))


def _tests(path: str, summary: FileSummary) -> list[tuple[int, str]]:
    """``(def line, pytest node id)`` of the test functions pytest collects by default."""
    found = [(f.span.line, f"{path}::{f.qualname}") for f in summary.functions if _is_test_name(f.qualname)]
    for cls in summary.classes:
        if cls.qualname.startswith("Test") and "." not in cls.qualname:
            found += [
                (m.span.line, f"{path}::{cls.qualname}::{m.name}") for m in cls.methods if m.name.startswith("test")
            ]
    return found


def _is_test_name(qualname: str) -> bool:
    return "." not in qualname and qualname.startswith("test")
