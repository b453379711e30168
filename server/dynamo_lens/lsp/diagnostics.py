"""Diagnostics: static findings for open documents and the workspace, runtime findings from the last run, merged.

* ``didOpen`` analyses at once; ``didChange`` is debounced: an edit after a quiet period is analysed at once, an edit
  inside a burst waits until ``debounceMs`` of quiet. The analysis runs in a worker thread on a snapshot of
  ``(version, text)``; its result is dropped when a newer version arrived or the document was closed meanwhile, so
  nothing stale is ever published.
* Push (``textDocument/publishDiagnostics``) by default. When the client declares pull diagnostics
  (``textDocument/diagnostic``), it is answered instead and ``workspace/diagnostic/refresh`` asks the client to pull
  again after a run or the workspace scan.
* The workspace scan runs once after ``initialized`` in a worker, with ``window/workDoneProgress``; requests keep being
  answered meanwhile. Afterwards ``workspace/didChangeWatchedFiles`` (registered for ``**/*.py``, ``*.pyi`` and
  ``*.ipynb`` where the client allows it) keeps files that are not open in step with the disk: a ``git checkout`` or
  another tool's edit relinks.
* An open notebook's findings go to its cell documents (``notebook_documents``); a closed notebook shows none.
"""

from __future__ import annotations

import asyncio
import gc
import uuid
from collections.abc import Iterable, Mapping, Sequence
from functools import partial
from pathlib import Path

from lsprotocol import types

from dynamo_lens.config import Settings
from dynamo_lens.discovery import PYTHON_SUFFIXES, discover, is_python_file
from dynamo_lens.lsp import kernel_runs
from dynamo_lens.lsp.analysis import Linked
from dynamo_lens.lsp.convert import path_to_uri
from dynamo_lens.lsp.documents import DocumentState, TrackedFinding, track_change
from dynamo_lens.lsp.notebook_cells import OpenNotebook, cell_findings
from dynamo_lens.lsp.server import DynamoLensServer
from dynamo_lens.lsp.settings import effective_rules
from dynamo_lens.model import Finding
from dynamo_lens.notebooks import is_notebook

IDENTIFIER = "dynamo-lens"
SCAN_BATCH = 500
"""Files per step of the workspace scan (one progress report each)."""


def register(server: DynamoLensServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    @server.guarded()
    def did_open(params: types.DidOpenTextDocumentParams) -> None:
        path = server.path_of(params.text_document.uri)
        if path is None:
            return
        state = server.documents.get(path)
        state.open, state.version = True, params.text_document.version
        state.lines = params.text_document.text.splitlines(keepends=True)
        server.analysis.pin(path)
        schedule(server, path, immediate=True)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    @server.guarded()
    def did_change(params: types.DidChangeTextDocumentParams) -> None:
        path = server.path_of(params.text_document.uri)
        state = server.documents.find(path) if path is not None else None
        if path is None or state is None or not state.open:
            return
        for change in params.content_changes:
            state.runtime = track_change(state.runtime, change, state.lines)
        state.version = params.text_document.version
        state.lines = list(server.workspace.get_text_document(params.text_document.uri).lines)
        schedule(server, path)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    @server.guarded()
    def did_close(params: types.DidCloseTextDocumentParams) -> None:
        path = server.path_of(params.text_document.uri)
        if path is not None:
            close_document(server, path)

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    @server.guarded()
    def did_change_watched_files(params: types.DidChangeWatchedFilesParams) -> None:
        changed = [p for p in (server.path_of(change.uri) for change in params.changes) if p]
        folders = {str(Path(p).parent.parent) for p in changed if kernel_runs.is_recording(p)}
        if folders:  # a kernel recorded more: the open notebooks next to it show it
            notebooks = [p for p in server.notebooks if str(Path(p).parent) in folders]
            server.kernel_refresh = asyncio.ensure_future(kernel_runs.refresh(server, notebooks))
        paths = [p for p in changed if is_python_file(p)]
        closed = [p for p in paths if not (server.documents.find(p) and server.documents.get(p).open)]
        if closed and server.settings.enable_static:
            server.relink = asyncio.ensure_future(_reread_from_disk(server, closed))


def close_document(server: DynamoLensServer, path: str) -> None:
    """The document ``path`` (a file or a notebook) was closed: its findings go, and the file on disk takes its place
    in the workspace."""
    state = server.documents.find(path)
    if state is None:
        return
    if state.pending is not None:
        state.pending.cancel()
    state.open, state.version, state.lines = False, None, []
    state.static, state.static_version = (), None
    server.analysis.unpin(path)
    publish(server, [path])
    state.pending = asyncio.ensure_future(_reread_from_disk(server, [path]))


async def watch_python_files(server: DynamoLensServer) -> None:
    """Ask the client to report changes to Python files on disk, when it supports registering that dynamically."""
    workspace = server.client_capabilities.workspace
    watched = workspace.did_change_watched_files if workspace is not None else None
    if watched is None or not watched.dynamic_registration:
        return
    patterns = [f"**/*{suffix}" for suffix in PYTHON_SUFFIXES] + [kernel_runs.recordings_pattern()]
    watchers = [types.FileSystemWatcher(glob_pattern=pattern) for pattern in patterns]
    options = types.DidChangeWatchedFilesRegistrationOptions(watchers=watchers)
    registration = types.Registration(
        id=f"dynamo-lens-watch-{uuid.uuid4().hex}",
        method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
        register_options=options,
    )
    try:
        await server.client_register_capability_async(types.RegistrationParams(registrations=[registration]))
    except Exception as exc:  # the client declared it but refused: files on disk are then read only at startup
        server.log(f"dynamo-lens: the client did not register file watching ({exc})", types.MessageType.Warning)


def register_pull(server: DynamoLensServer) -> None:
    """``textDocument/diagnostic`` and ``workspace/diagnostic``, registered at ``initialize`` only for clients that
    declare pull diagnostics."""

    @server.feature(
        types.TEXT_DOCUMENT_DIAGNOSTIC,
        types.DiagnosticOptions(identifier=IDENTIFIER, inter_file_dependencies=True, workspace_diagnostics=True),
    )
    @server.guarded(empty=types.RelatedFullDocumentDiagnosticReport(items=[]))
    async def pull(params: types.DocumentDiagnosticParams) -> types.DocumentDiagnosticReport:
        path = server.path_of(params.text_document.uri)
        state = server.documents.find(path) if path is not None else None
        if state is None:
            return types.RelatedFullDocumentDiagnosticReport(items=[])
        if state.open and state.static_version != state.version and server.settings.enable_static:
            schedule(server, state.path, immediate=True)
            await _analysed(state)
        result_id = _result_id(state)
        if params.previous_result_id == result_id:
            return types.RelatedUnchangedDocumentDiagnosticReport(result_id=result_id)
        return types.RelatedFullDocumentDiagnosticReport(items=current_diagnostics(server, state), result_id=result_id)

    @server.feature(types.WORKSPACE_DIAGNOSTIC)
    @server.guarded(empty=types.WorkspaceDiagnosticReport(items=[]))
    async def pull_workspace(params: types.WorkspaceDiagnosticParams) -> types.WorkspaceDiagnosticReport:
        """Every file the server has findings for (the workspace scan's too, once it is done, and the open documents'
        once their analyses are): unchanged reports for the result ids the client already holds, and empty ones for
        files it shows that no longer have any."""
        await server.workspace_known.wait()
        for path in server.documents.paths():  # and for the open documents' own analyses, as a document pull does
            state = server.documents.get(path)
            if state.open:
                await _analysed(state)
        held = {previous.uri: previous.value for previous in params.previous_result_ids}
        items: list[types.WorkspaceDocumentDiagnosticReport] = []
        for path in server.documents.paths():
            if is_notebook(path):
                continue  # its cells are documents of their own, pulled one by one while it is open
            state = server.documents.get(path)
            uri, result_id = path_to_uri(path), _result_id(state)
            version = state.version if state.open else None
            if held.pop(uri, None) == result_id:
                items.append(types.WorkspaceUnchangedDocumentDiagnosticReport(uri, result_id, version=version))
            elif state.published or state.static or state.runtime:
                diagnostics = current_diagnostics(server, state)
                report = types.WorkspaceFullDocumentDiagnosticReport(
                    uri, diagnostics, version=version, result_id=result_id
                )
                items.append(report)
        items += [types.WorkspaceFullDocumentDiagnosticReport(uri, [], result_id="gone") for uri in held]
        return types.WorkspaceDiagnosticReport(items=items)


async def _analysed(state: DocumentState) -> None:
    """Wait for the analysis of the open document, and for the one that replaces it when another starts first (the
    workspace scan finishing reschedules open documents, cancelling the analysis a pull was waiting for)."""
    while state.pending is not None:
        awaited = state.pending
        try:
            await asyncio.shield(awaited)
            return
        except asyncio.CancelledError:
            if state.pending is awaited:
                raise  # the request itself was cancelled, not the analysis replaced


def _result_id(state: DocumentState) -> str:
    """Changes whenever the document's visible findings or its version do."""
    return f"{state.version}:{state.published}"


# -- analysis ------------------------------------------------------------------------------------------------------


def schedule(server: DynamoLensServer, path: str, *, immediate: bool = False) -> None:
    """(Re)start the analysis of the open document ``path``, debounced unless ``immediate``."""
    state = server.documents.get(path)
    if state.pending is not None:
        state.pending.cancel()
    loop = asyncio.get_running_loop()
    now = loop.time()
    quiet = now - state.last_change >= server.settings.debounce_ms / 1000
    state.last_change = now
    delay = 0.0 if immediate or quiet else server.settings.debounce_ms / 1000
    state.pending = asyncio.ensure_future(_analyse_open(server, path, delay))


async def _analyse_open(server: DynamoLensServer, path: str, delay: float) -> None:
    try:
        if delay:
            await asyncio.sleep(delay)
        state = server.documents.find(path)
        if state is None or not state.open:
            return
        version, text = state.version, "".join(state.lines)
        generation = server.analysis.next_generation()
        rules = current_rules(server) if server.settings.enable_static else None
        loop = asyncio.get_running_loop()
        work = partial(server.analysis.update_and_link, path, text, generation, rules)
        linked = await loop.run_in_executor(server.thread_pool, work)
        if state.version != version or not state.open:
            return  # a newer edit or a close won: its own analysis publishes
        _install(server, linked, {path: version})
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        server.report_internal_error(f"analysis of {path}", exc)


async def _reread_from_disk(server: DynamoLensServer, paths: Sequence[str]) -> None:
    """Files that are not open changed (or went away) on disk: read them again and relink the workspace."""
    try:
        present = [p for p in paths if Path(p).is_file()]
        for gone in set(paths) - set(present):
            server.analysis.forget(gone)
        generation = server.analysis.next_generation()
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(server.thread_pool, server.analysis.update_from_disk, present, generation)
        await _relink(server, {})
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        server.report_internal_error("re-reading changed files", exc)


async def _relink(server: DynamoLensServer, analysed: Mapping[str, int | None]) -> None:
    """Link the workspace and publish every file whose findings changed; ``analysed`` gives the versions just read."""
    rules = current_rules(server) if server.settings.enable_static else None
    loop = asyncio.get_running_loop()
    linked = await loop.run_in_executor(server.thread_pool, server.analysis.findings, rules)
    _install(server, linked, analysed)


def _install(server: DynamoLensServer, linked: Linked, analysed: Mapping[str, int | None]) -> None:
    for error in linked.internal_errors:
        server.log(f"dynamo-lens: {error}", types.MessageType.Error)
    publish(server, apply_static(server, linked.grouped, analysed, linked.snapshot), pulled=analysed)


def current_rules(server: DynamoLensServer) -> Settings:
    """The effective select/ignore/severity settings, computed once per settings change (not per keystroke)."""
    if server.rules is None:
        server.rules = effective_rules(server.settings, workspace_root(server))
    return server.rules


def apply_static(
    server: DynamoLensServer, grouped: Mapping[str, list[Finding]], analysed: Mapping[str, int | None], snapshot: int
) -> list[str]:
    """Install linked static findings; returns the paths to publish (changed ones, and every analysed version).
    A file keeps findings linked from a newer snapshot than ``snapshot`` (that link finished first)."""
    changed = []
    for path in set(grouped) | set(analysed) | {p for p in server.documents.paths() if server.documents.get(p).static}:
        state = server.documents.get(path)
        if snapshot < state.static_snapshot:
            continue
        if path in analysed:
            state.static_version = analysed[path]
        elif state.open and state.static_version != state.version:
            continue  # its own analysis of a newer version is on the way
        findings = tuple(sorted(grouped.get(path, ()), key=Finding.sort_key))
        state.static_snapshot = snapshot
        if findings != state.static or path in analysed:
            state.static = findings
            changed.append(path)
    return changed


def reanalyse_open_documents(server: DynamoLensServer) -> None:
    """Settings changed: every open document again (the workspace follows through the link)."""
    for path in server.documents.paths():
        state = server.documents.get(path)
        if state.open:
            schedule(server, path, immediate=True)
    if not any(server.documents.get(p).open for p in server.documents.paths()):
        server.relink = asyncio.ensure_future(_relink(server, {}))


def set_runtime_findings(server: DynamoLensServer, findings: Iterable[TrackedFinding]) -> None:
    """Replace the runtime findings of every file with those of the last run (or none) and publish."""
    grouped: dict[str, list[TrackedFinding]] = {}
    for tracked in findings:
        grouped.setdefault(tracked.finding.path, []).append(tracked)
    changed = []
    for path in set(grouped) | {p for p in server.documents.paths() if server.documents.get(p).runtime}:
        server.documents.get(path).runtime = tuple(grouped.get(path, ()))
        changed.append(path)
    publish(server, changed)


# -- publishing ----------------------------------------------------------------------------------------------------


def current_diagnostics(server: DynamoLensServer, state: DocumentState) -> list[types.Diagnostic]:
    """Static findings and the last run's, merged: where the run confirms a static finding, both say so; runtime
    findings whose text was edited since the run are shown stale."""
    return server.diagnostic_cache.diagnostics(state.path, _shown(server, state), server.lines_of)


def cell_diagnostics(
    server: DynamoLensServer, state: DocumentState, notebook: OpenNotebook
) -> dict[str, list[types.Diagnostic]]:
    """:func:`current_diagnostics` of an open notebook, by the cell document they are on."""
    by_cell = cell_findings(notebook, _shown(server, state))
    return {uri: server.diagnostic_cache.diagnostics(uri, found, server.lines_of) for uri, found in by_cell.items()}


def _shown(server: DynamoLensServer, state: DocumentState) -> list[tuple[Finding, bool]]:
    """The findings of the document, each with whether it is stale."""
    runtime = state.runtime if server.settings.enable_runtime else ()
    fresh = [item.finding for item in runtime if not item.stale]
    notebook = server.notebooks.get(state.path)
    recorded = server.kernel_reports.get(state.path) if server.settings.enable_runtime else None
    if notebook is not None and recorded:
        fresh += kernel_runs.on_cells(state.path, notebook, kernel_runs.cell_texts(server, notebook), recorded)
    merged = list(state.static)
    if fresh:
        from dynamo_lens.runtime.attribution import merge_findings  # loaded with the first run's results

        merged = merge_findings(state.static, fresh)
    return [(finding, False) for finding in merged] + [(item.finding, True) for item in runtime if item.stale]


def publish(server: DynamoLensServer, paths: Sequence[str], pulled: Iterable[str] = ()) -> None:
    """Push the diagnostics of ``paths``. A pull client is asked to pull again instead, unless the only changes are
    to documents whose edits it is pulling for anyway (``pulled``). An open notebook's diagnostics are pushed to its
    cell documents whatever the client pulls: VS Code pulls files, never the cells of a notebook (seen in its
    trace), so a notebook is push-only."""
    if not paths or server.stopping:
        return
    for path in paths:
        server.documents.get(path).published += 1
    for path in paths:
        notebook = server.notebooks.get(path)
        for cell_uri, found in (
            cell_diagnostics(server, server.documents.get(path), notebook).items() if notebook else ()
        ):
            server.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=cell_uri, diagnostics=found))
    files = [path for path in paths if not is_notebook(path)]  # a closed notebook's JSON lines are no places
    if server.client_supports_pull_diagnostics:
        refresh = server.client_capabilities.workspace
        supported = refresh is not None and refresh.diagnostics is not None and refresh.diagnostics.refresh_support
        if supported and set(files) - set(pulled):
            server.workspace_diagnostic_refresh(None)
        return
    for path in files:
        state = server.documents.get(path)
        server.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(
                uri=path_to_uri(path),
                diagnostics=current_diagnostics(server, state),
                version=state.version if state.open else None,
            )
        )


# -- workspace scan ------------------------------------------------------------------------------------------------


def workspace_root(server: DynamoLensServer) -> Path | None:
    root = server.workspace.root_path
    return Path(root) if root else None


def start_workspace_scan(server: DynamoLensServer) -> None:
    if server.settings.enable_static and workspace_root(server) is not None:
        server.workspace_scan = asyncio.ensure_future(scan_workspace(server))
        server.workspace_scan.add_done_callback(lambda _: server.workspace_known.set())
    else:
        server.workspace_known.set()


async def scan_workspace(server: DynamoLensServer) -> None:
    """Analyse every Python file under the workspace root in a worker, with progress, then link and publish."""
    root = workspace_root(server)
    if root is None:
        return
    token = await begin_progress(server, "Dynamo Lens: scanning the workspace")
    try:
        loop = asyncio.get_running_loop()
        files = (await loop.run_in_executor(server.thread_pool, discover, [str(root)], current_rules(server))).files
        generation = server.analysis.next_generation()
        for start in range(0, len(files), SCAN_BATCH):
            chunk = files[start : start + SCAN_BATCH]
            problems = await loop.run_in_executor(
                server.thread_pool, server.analysis.update_from_disk, chunk, generation
            )
            for problem in problems:
                server.log(f"dynamo-lens: {problem.path}: {problem.message}", types.MessageType.Warning)
            done = min(start + SCAN_BATCH, len(files))
            _report_progress(server, token, f"{done}/{len(files)} files", done, len(files))
        await _relink(server, {})
        # What the scan loaded lives as long as the server and holds no reference cycles: out of the collector's
        # sight, it no longer makes every full collection walk the whole workspace (per-keystroke spikes).
        gc.freeze()
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        server.report_internal_error("workspace scan", exc)
    finally:
        end_progress(server, token)


async def begin_progress(server: DynamoLensServer, title: str, cancellable: bool = False) -> str | None:
    """A server-initiated ``window/workDoneProgress`` (None when the client does not support it)."""
    window = server.client_capabilities.window
    if window is None or not window.work_done_progress:
        return None
    token = f"dynamo-lens-{uuid.uuid4().hex}"
    await server.work_done_progress.create_async(token)
    begin = types.WorkDoneProgressBegin(title=title, percentage=0, cancellable=cancellable)
    server.work_done_progress.begin(token, begin)
    return token


def _report_progress(server: DynamoLensServer, token: str | None, message: str, done: int, total: int) -> None:
    if token is not None:
        percentage = int(100 * done / total) if total else 100
        server.work_done_progress.report(token, types.WorkDoneProgressReport(message=message, percentage=percentage))


def end_progress(server: DynamoLensServer, token: str | None) -> None:
    if token is not None and not server.stopping:
        server.work_done_progress.end(token, types.WorkDoneProgressEnd())
        server.work_done_progress.tokens.pop(token, None)
