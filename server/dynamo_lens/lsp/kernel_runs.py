"""What ``%load_ext dynamo_lens`` recorded in a notebook's kernel, on that notebook's cells in the editor.

The kernel streams its events to ``.dynamo-lens/kernel-<pid>.json.events.jsonl`` in its working directory, which is
the notebook's folder as Jupyter and VS Code start kernels. The server reads the newest recording next to an open
notebook when it opens and whenever the client reports that such a file changed (the kernel ran more cells), turns it
into runtime findings (DL501, DL502, DL503), and places each on the open cell whose text the kernel ran: ipykernel
names a cell's file after the hash of its text (``notebooks.kernel_cell_name``). A cell edited since it ran no longer
has that text, so its findings go until it runs again. Hovers and lenses show the guards and counts it saw
(:func:`as_recorded`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote

from dynamo_lens.lsp.compiled import Observed, Place, observed
from dynamo_lens.lsp.notebook_cells import OpenNotebook
from dynamo_lens.lsp.server import DynamoLensServer
from dynamo_lens.model import Finding, Related, Span
from dynamo_lens.notebooks import Cell, cell_at, is_kernel_cell_file, kernel_cell_name

if TYPE_CHECKING:
    from dynamo_lens.runtime.report import RunReport


def recordings_pattern() -> str:
    """The glob of kernel recordings' event streams anywhere in the workspace (for the file watcher)."""
    from dynamo_lens.runtime.kernel import RECORDING_EVENTS, RECORDINGS

    return f"**/{RECORDINGS}/{RECORDING_EVENTS}"


def is_recording(path: str) -> bool:
    """``path`` is a kernel recording's event stream."""
    from dynamo_lens.runtime.kernel import RECORDING_EVENTS, RECORDINGS

    file = Path(path)
    return file.parent.name == RECORDINGS and file.match(RECORDING_EVENTS)


def read_recordings(folder: Path) -> Recordings | None:
    """The report so far of the newest kernel recording in ``folder`` (a notebook's) that can be read: the kernel
    the notebook runs in now (older kernels' recordings stay on disk, about cells that may have run again since)."""
    from dynamo_lens.runtime.kernel import RECORDING_EVENTS, RECORDINGS
    from dynamo_lens.runtime.report import EVENTS_SUFFIX, ReportError, load_partial_report

    for events in sorted((folder / RECORDINGS).glob(RECORDING_EVENTS), key=_modified, reverse=True):
        try:
            return Recordings(load_partial_report(str(events).removesuffix(EVENTS_SUFFIX)))
        except ReportError:
            continue  # gone since, or not ours: an older one, and the next change reads them again
    return None


def _modified(file: Path) -> float:
    try:
        return file.stat().st_mtime
    except OSError:
        return 0.0  # gone since it was listed


async def refresh(server: DynamoLensServer, paths: Iterable[str]) -> None:
    """Read again the recordings next to the open notebooks ``paths``, then show them on their cells."""
    from dynamo_lens.lsp import commands, diagnostics

    try:
        loop = asyncio.get_running_loop()
        changed = []
        for path in paths:
            if path in server.notebooks:
                read = await loop.run_in_executor(server.thread_pool, read_recordings, Path(path).parent)
                if read is not None:
                    server.kernel_reports[path] = read
                    changed.append(path)
        diagnostics.publish(server, changed)
        if changed:
            commands.refresh_views(server)  # the cells' lenses and inlay hints count what the kernel saw
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        server.report_internal_error("reading a kernel's recording", exc)


@dataclass(slots=True)
class Recordings:
    """The report so far of the kernel next to one open notebook, and its findings for the cell texts last seen
    (every keystroke republishes the notebook: the attribution runs again only when a cell's text changed)."""

    report: RunReport
    texts: frozenset[str] | None = None
    """The cell files the findings were placed for (None: not yet)."""
    findings: list[Finding] = field(default_factory=list)

    def findings_for(self, sources: dict[str, str]) -> list[Finding]:
        """The findings, each placed on its expression in ``sources`` (a kernel's cell file name → its text)."""
        from dynamo_lens.runtime.attribution import findings_from_report

        names = frozenset(sources)
        if names != self.texts:
            self.texts = names
            self.findings = findings_from_report(self.report, lambda file: sources.get(_base_name(file)))
        return self.findings


def on_cells(path: str, notebook: OpenNotebook, texts: dict[int, str], recorded: Recordings) -> list[Finding]:
    """The findings of the kernel's recording about cells that hold the text the kernel ran, in the lines of the
    notebook's module (``path``); places in cells that changed since are left out."""
    cells = {kernel_cell_name(texts[cell.index]): cell for cell in notebook.cells if cell.index in texts}
    findings = recorded.findings_for({name: texts[cell.index] for name, cell in cells.items()})

    def placed(span: Span) -> Span | None:
        if not is_kernel_cell_file(span.path):
            return span  # a file of the program, not a cell
        cell = cells.get(_base_name(span.path))
        return _in_module(span, path, cell) if cell is not None else None

    shown = []
    for finding in findings:
        span = placed(finding.span)
        if span is None or span.path != path:
            continue
        related = tuple(Related(where, r.message) for r in finding.related if (where := placed(r.span)) is not None)
        shown.append(replace(finding, span=span, related=related, fixes=()))
    return shown


def as_recorded(server: DynamoLensServer, place: Place, path: str) -> tuple[Place, RunReport] | None:
    """``place`` of the open notebook ``path`` as the newest kernel recording next to it names it (its definitions
    in the cells' files, at the cells' own lines), with that report; None without a recording."""
    notebook, recorded = server.notebooks.get(path), server.kernel_reports.get(path)
    if notebook is None or recorded is None:
        return None
    texts = cell_texts(server, notebook)
    report = recorded.report
    files = {_base_name(frame.path): frame.path for frame in report.frames if is_kernel_cell_file(frame.path)}
    defs = []
    for definition in place.defs:
        cell = cell_at(definition.line, notebook.cells) if definition.path == path else None
        file = files.get(kernel_cell_name(texts[cell.index])) if cell is not None and cell.index in texts else None
        if cell is not None and file is not None:
            definition = replace(definition, path=file, line=definition.line - cell.first_line + 1)
        defs.append(definition)
    return replace(place, defs=tuple(defs)), report


def seen(
    server: DynamoLensServer, place: Place, path: str, report: RunReport | None
) -> tuple[Observed, RunReport] | None:
    """What was seen for ``place`` of ``path``, and in which report: in an open notebook what its kernel recorded,
    else what ``report`` (the file's last run) did, or its ranks (a multi-process run); None when nothing ran it."""
    named, source = as_recorded(server, place, path) or (place, report)
    if source is None:
        return None
    found = observed(named, source)
    if found.frames:
        return found, source
    ranks = [(rank, seen) for rank in source.ranks if (seen := observed(named, rank)).frames]
    if not ranks:
        return None
    first, first_seen = ranks[0]  # a multi-process run: hovers show the first rank's guards, lenses every rank's
    return replace(first_seen, by_rank=tuple((rank.rank_label, seen) for rank, seen in ranks)), first


def cell_texts(server: DynamoLensServer, notebook: OpenNotebook) -> dict[int, str]:
    """Each Python cell's text as the editor has it now, by cell index."""
    texts = {}
    for index, uri in notebook.cell_uris.items():
        document = server.workspace.text_documents.get(unquote(uri))
        if document is not None:
            texts[index] = document.source
    return texts


def _base_name(path: str) -> str:
    return path.replace("\\", "/").rpartition("/")[2]


def _in_module(span: Span, path: str, cell: Cell) -> Span:
    offset = cell.first_line - 1
    return replace(span, path=path, line=span.line + offset, end_line=span.end_line + offset)
