"""``textDocument/hover`` on a compile site, a compiled class (its ``class`` line or ``forward``) or a compiled ``def``,
and on a hazard itself (the expression a finding sits on: ``self.steps`` of ``self.steps += 1``).

After a run: the guards Dynamo really installed, their recompile history and the graph breaks
(:mod:`dynamo_lens.lsp.report_markdown`); on a hazard, the guard it made in each cache entry with the value it held.
Before any run: the guards the static findings predict, marked as predicted.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from lsprotocol import types

from dynamo_lens.lsp import kernel_runs
from dynamo_lens.lsp.compiled import Place, body_end, place_at, places_in_file
from dynamo_lens.lsp.notebook_cells import module_line, notebook_of_cell
from dynamo_lens.lsp.positions import from_lsp_position, to_lsp_position
from dynamo_lens.lsp.server import DynamoLensServer
from dynamo_lens.model import Finding, gist
from dynamo_lens.notebooks import cell_at, locate
from dynamo_lens.torch_facts import torch_name

if TYPE_CHECKING:
    from dynamo_lens.runtime.report import RunReport


def register(server: DynamoLensServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_HOVER)
    @server.guarded()
    def hover(params: types.HoverParams) -> types.Hover | None:
        uri, position = params.text_document.uri, params.position
        path = server.path_of(uri)
        in_notebook = notebook_of_cell(server.notebooks, uri) if path is None else None
        if in_notebook is not None:  # a notebook cell: the same place in the notebook's module
            line = module_line(in_notebook[1], uri, position.line)
            if line is None:
                return None
            path, position = in_notebook[0], types.Position(line=line, character=position.character)
        if path is None or server.open_lines(path) is None:
            return None
        markdown = hover_at(server, path, position)
        if markdown is None:
            return None
        return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=markdown))


def hover_at(server: DynamoLensServer, path: str, position: types.Position) -> str | None:
    """The hover markdown at an LSP ``position`` of ``path`` (also used by the "Show guards" command)."""
    lines = server.lines_of(path)
    line, column = from_lsp_position(lines, position)
    if to_lsp_position(lines, line, column).line != position.line:
        return None  # past the end of the document
    place = place_at(places_in_file(path, server.analysis.model()), line, column)
    if place is None:
        return hazard_hover(server, path, line, column)
    result = server.runs.for_path(path)
    found = kernel_runs.seen(server, place, path, result.report if result is not None else None)
    if found is not None:
        from dynamo_lens.lsp.report_markdown import render_observed  # runtime modules load on first use

        return render_observed(place, *found)
    state = server.documents.find(path)
    static = state.static if state is not None else ()
    predicted = predicted_findings(place, static, body_end(place, server.analysis.summary(path)))
    notebook = server.notebooks.get(path)
    hovered = cell_at(line, notebook.cells) if notebook is not None else None
    if notebook is not None:  # lines as the user sees them: in cells
        predicted = [locate(finding, notebook.cells) for finding in predicted]
    return render_predicted(place, predicted, hovered.index if hovered is not None else None)


def hazard_hover(server: DynamoLensServer, path: str, line: int, column: int) -> str | None:
    """On the expression a finding sits on: the guard the last run installed there, entry by entry, or before a run
    the guard the static finding predicts; None where no finding is."""
    state = server.documents.find(path)
    if state is None:
        return None
    static = [f for f in state.static if f.code != "DL001" and _covers(f, line, column)]
    runtime = [t.finding for t in state.runtime if not t.stale and _covers(t.finding, line, column)]
    if not static and not runtime:
        return None
    result = server.runs.for_path(path)
    seen = [
        text
        for finding in runtime
        if result is not None and result.report is not None
        for text in _observed_guard(finding, result.report)
    ]
    if seen:
        from dynamo_lens.lsp.report_markdown import render_guard_history  # runtime modules load on first use

        return render_guard_history(line, seen, runtime)
    if not static:
        return None
    body = [f"- *predicted* · **{f.code}**: {predicted_guard(f)}" for f in static]
    head = f"**Dynamo Lens** · line {line} · no run yet"
    return "\n".join([head, "", *body, "\n_Predicted from the source; run with Dynamo Lens to see the real guard._"])


def _covers(finding: Finding, line: int, column: int) -> bool:
    span = finding.span
    return (span.line, span.column) <= (line, column) <= (span.end_line, span.end_column)


def _observed_guard(finding: Finding, report: RunReport) -> list[tuple[str, str, str]]:
    """(entry, guard text, kind) of the guard a recompile finding names, in each cache entry of its frame."""
    from dynamo_lens.runtime.guard_diff import readable_guard_text, readable_source

    source, compile_ids = finding.data.get("source"), finding.data.get("compile_ids")
    if not isinstance(source, str) or not isinstance(compile_ids, list):
        return []
    found: list[tuple[str, str, str]] = []
    for frame in report.frames:
        if not any(entry.compile_id in compile_ids for entry in frame.cache_entries):
            continue  # the frame whose recompiles the finding counts
        for entry in frame.cache_entries:
            for guard in entry.guards:
                if guard.source is not None and readable_source(guard.source) == source:
                    found.append((entry.compile_id, readable_guard_text(guard.text), guard.kind or ""))
    return found


def predicted_findings(place: Place, findings: Sequence[Finding], end: int) -> list[Finding]:
    """Static findings that belong to ``place``: those naming a site as related, or inside a class/``def`` body
    (which ends before line ``end``)."""
    if place.kind == "site":
        return [f for f in findings if any(r.span.path == place.path and r.span.line == place.line for r in f.related)]
    return [f for f in findings if f.path == place.path and place.line <= f.span.line < end and f.code != "DL001"]


def render_predicted(place: Place, findings: Sequence[Finding], cell: int | None = None) -> str:
    """The predicted guards of ``place``; in a notebook, whose ``cell`` is hovered, lines count within cells (the
    editor knows a cell by its place among the notebook's cells, which the server does not: only whether a finding
    is in the hovered cell is said)."""
    head = f"**Dynamo Lens** · `{place.name}` · no run yet"
    if not findings:
        return f"{head}\n\nNo guard hazards predicted. Run it with Dynamo Lens to see the real guards."
    body = [f"#### Predicted guards (static analysis, {torch_name()} behaviour)"]
    for finding in findings:
        span = finding.span
        elsewhere = span.cell is not None and span.cell.index != cell
        where = f"line {span.line}" + (" of another cell" if elsewhere else "")
        body.append(f"- *predicted* · {where} · **{finding.code}**: {predicted_guard(finding)}")
    body.append("\n_Predicted from the source; run with Dynamo Lens to see what Dynamo really guards._")
    return "\n".join([head, "", *body])


def predicted_guard(finding: Finding) -> str:
    """``will guard `self.steps == <value>` (int attribute)`` when the finding names the attribute, else its gist."""
    attribute, kind = finding.data.get("attribute"), finding.data.get("kind")
    if isinstance(attribute, str) and isinstance(kind, str):
        return f"will guard `self.{attribute} == <value>` ({kind} attribute)"
    return gist(finding.message)
