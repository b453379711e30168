"""The server object, its capabilities and the error policy every handler shares.

Layout: this module builds :class:`DynamoLensServer` and asks each feature module (``diagnostics``, ``hover``, ...) to
register its handlers. Handlers are thin: they convert params, call a pure function, convert the result back.

Error policy (written once, here): every handler is wrapped by :meth:`DynamoLensServer.guarded`. If it raises, the
traceback goes to the client's log through ``window/logMessage``, the user is told once through
``window/showMessage`` to look at the log, and the request gets its empty answer (``None`` or ``[]``) so the editor
keeps working. A deliberate refusal (:class:`RequestRefused`, e.g. a run in an untrusted workspace) is not an
internal error: it goes back to the client as a JSON-RPC error whose message says why. Nothing is ever written to
stdout: stdout carries the protocol.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import os
import traceback
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast
from urllib.parse import unquote

from cattrs import Converter
from lsprotocol import types
from pygls.exceptions import FeatureRequestError, JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.protocol import default_converter
from pygls.uris import to_fs_path

from dynamo_lens import __version__
from dynamo_lens.config import Settings
from dynamo_lens.lsp.analysis import WorkspaceAnalysis
from dynamo_lens.lsp.diagnostic_cache import DiagnosticCache
from dynamo_lens.lsp.documents import DocumentStore
from dynamo_lens.lsp.notebook_cells import OpenNotebook
from dynamo_lens.lsp.runs import RunStore
from dynamo_lens.lsp.settings import ServerSettings

if TYPE_CHECKING:
    from dynamo_lens.lsp.kernel_runs import Recordings

F = TypeVar("F", bound=Callable[..., Any])

logger = logging.getLogger(__name__)

NAME = "dynamo-lens"
NOTEBOOK_SYNC = types.NotebookDocumentSyncOptions(
    notebook_selector=[
        types.NotebookDocumentFilterWithCells(
            notebook=types.NotebookDocumentFilterNotebookType(notebook_type="jupyter-notebook"),
            cells=[types.NotebookCellLanguage(language="python")],
        )
    ],
    save=True,
)
"""What the server asks the client to sync: Jupyter notebooks, with their Python cells."""


class RequestRefused(JsonRpcException):
    """The request is understood and refused; the message tells the user why (LSP ``RequestFailed``)."""

    CODE = -32803


class DynamoLensServer(LanguageServer):
    """pygls server plus the state the features share. All state is touched only on the event loop."""

    def __init__(self) -> None:
        self.diagnostic_cache = DiagnosticCache()
        super().__init__(
            NAME,
            __version__,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            notebook_document_sync=NOTEBOOK_SYNC,
            converter_factory=self._converter,
        )
        self.settings = ServerSettings()
        self.rules: Settings | None = None
        """The effective select/ignore/severity (editor over ``pyproject.toml``); None until computed."""
        self.documents = DocumentStore()
        self.notebooks: dict[str, OpenNotebook] = {}
        """Notebooks open in the editor, by path (their module's state is in ``documents`` under that path)."""
        self.kernel_reports: dict[str, Recordings] = {}
        """What the kernels recorded next to each open notebook (``kernel_runs``), by the notebook's path."""
        self.analysis = WorkspaceAnalysis()
        self.runs = RunStore()
        self.workspace_scan: asyncio.Future[None] | None = None
        self.workspace_known = asyncio.Event()
        """Set once the first workspace scan is over (or was not needed): workspace pulls wait for it."""
        self.kernel_refresh: asyncio.Future[None] | None = None
        """The last reading of kernel recordings (``kernel_runs.refresh``)."""
        self.relink: asyncio.Future[None] | None = None
        """The last workspace-wide re-link (after a settings change with no open document)."""
        self._error_shown = False
        self._reporting = False
        self.stopping = False
        """Set on ``shutdown``: background work stops talking to the client (its stream is about to close)."""
        self._disk_lines: dict[str, tuple[float, list[str]]] = {}

    def _converter(self) -> Converter:
        converter: Converter = default_converter()  # type: ignore[no-untyped-call]
        self.diagnostic_cache.install(converter)
        return converter

    # -- logging -----------------------------------------------------------------------------------------------
    def log(self, message: str, kind: types.MessageType = types.MessageType.Log) -> None:
        """A line in the client's output log (``window/logMessage``); never stdout."""
        self.window_log_message(types.LogMessageParams(type=kind, message=message))

    def show(self, message: str, kind: types.MessageType = types.MessageType.Info) -> None:
        self.window_show_message(types.ShowMessageParams(type=kind, message=message))

    def report_internal_error(self, where: str, error: BaseException) -> None:
        text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
        logger.error("%s failed:\n%s", where, text)
        if self.stopping or self._reporting:
            return  # the client is going away, or reporting itself failed: stderr only
        self._reporting = True
        try:
            self.log(f"dynamo-lens: {where} failed:\n{text}", types.MessageType.Error)
            if not self._error_shown:
                self._error_shown = True
                message = f"Dynamo Lens: {where} failed ({error}); see the Dynamo Lens output log."
                self.show(message, types.MessageType.Error)
        finally:
            self._reporting = False

    def report_server_error(self, error: Exception, source: Any) -> None:
        """pygls' hook for errors outside a handler's answer (a failed notification handler, a failed write). A
        failed request has already been answered with its error, so it is only logged."""
        if source is FeatureRequestError:
            logger.info("request failed: %s", error)
            return
        self.report_internal_error(getattr(source, "__name__", "the server"), error)

    def guarded(self, empty: Any = None) -> Callable[[F], F]:
        """Decorator: the error policy above, for sync and async handlers alike."""

        def decorate(handler: F) -> F:
            where = handler.__name__
            if inspect.iscoroutinefunction(handler):

                @functools.wraps(handler)
                async def run_async(*args: Any, **kwargs: Any) -> Any:
                    try:
                        return await cast(Callable[..., Awaitable[Any]], handler)(*args, **kwargs)
                    except JsonRpcException:
                        raise
                    except Exception as exc:
                        self.report_internal_error(where, exc)
                        return empty

                return cast(F, run_async)

            @functools.wraps(handler)
            def run_sync(*args: Any, **kwargs: Any) -> Any:
                try:
                    return handler(*args, **kwargs)
                except JsonRpcException:
                    raise
                except Exception as exc:
                    self.report_internal_error(where, exc)
                    return empty

            return cast(F, run_sync)

        return decorate

    # -- text --------------------------------------------------------------------------------------------------
    def path_of(self, uri: str) -> str | None:
        """The file system path of ``uri`` (``None`` for non-file URIs such as ``untitled:``)."""
        return to_fs_path(uri) if uri.startswith("file:") else None

    def open_lines(self, path: str) -> Sequence[str] | None:
        """The editor's current lines of ``path`` when it is open, else ``None``."""
        state = self.documents.find(path)
        return state.lines if state is not None and state.open else None

    def lines_of(self, path: str) -> Sequence[str]:
        """Current lines of ``path``: the editor's text when open, else the file on disk (cached by mtime); for a
        notebook cell, the ``vscode-notebook-cell:`` URI of its document, that document's lines."""
        cell = self.workspace.text_documents.get(unquote(path)) if not path.startswith("/") else None
        if cell is not None:
            return list(cell.lines)
        lines = self.open_lines(path)
        if lines is not None:
            return lines
        try:
            mtime = os.stat(path).st_mtime
        except OSError:
            return []
        cached = self._disk_lines.get(path)
        if cached is not None and cached[0] == mtime:
            return cached[1]
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                disk = handle.read().splitlines(keepends=True)
        except OSError:
            return []
        self._disk_lines[path] = (mtime, disk)
        return disk

    @property
    def client_supports_pull_diagnostics(self) -> bool:
        text_document = self.client_capabilities.text_document
        return text_document is not None and text_document.diagnostic is not None


def create_server() -> DynamoLensServer:
    """A server with every feature registered. Imports stay light: no torch, no runtime work at import."""
    from dynamo_lens.lsp import (
        code_actions,
        code_lens,
        commands,
        diagnostics,
        hover,
        inlay_hints,
        lifecycle,
        notebook_documents,
    )

    server = DynamoLensServer()
    features = (lifecycle, diagnostics, notebook_documents, hover, inlay_hints, code_lens, code_actions, commands)
    for feature in features:
        feature.register(server)
    return server
