"""Drive ``dynamo-lens serve`` over real JSON-RPC (stdio) with pytest-lsp's client.

``lsp`` is a factory: ``await lsp(root, pull=False, options={...}, configuration={...})`` starts a server process,
initialises it with ``root`` as the workspace and returns a :class:`Session`. Client capabilities are pytest-lsp's
VS Code profile extended with what that old profile lacks (inlay hints, refresh requests, notebook document sync, pull
diagnostics on demand).
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from lsprotocol import types
from pygls.uris import from_fs_path
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities, make_test_lsp_client

SERVER_COMMAND = [sys.executable, "-m", "dynamo_lens", "serve"]
TIMEOUT = 20.0


def capabilities(*, pull: bool) -> types.ClientCapabilities:
    caps = client_capabilities("visual-studio-code")
    assert caps.text_document is not None and caps.workspace is not None
    caps.text_document.inlay_hint = types.InlayHintClientCapabilities(dynamic_registration=False)
    caps.text_document.diagnostic = (
        types.DiagnosticClientCapabilities(dynamic_registration=False, related_document_support=True) if pull else None
    )
    caps.workspace.inlay_hint = types.InlayHintWorkspaceClientCapabilities(refresh_support=True)
    caps.workspace.code_lens = types.CodeLensWorkspaceClientCapabilities(refresh_support=True)
    caps.workspace.diagnostics = types.DiagnosticWorkspaceClientCapabilities(refresh_support=True)
    caps.workspace.configuration = True
    caps.window = types.WindowClientCapabilities(work_done_progress=True)
    caps.notebook_document = types.NotebookDocumentClientCapabilities(
        synchronization=types.NotebookDocumentSyncClientCapabilities()
    )
    return caps


def uri(path: Path) -> str:
    value = from_fs_path(str(path))
    assert value is not None
    return value


class Session:
    """One server process and its client, with the notifications it received."""

    def __init__(self, client: LanguageClient, root: Path) -> None:
        self.client = client
        self.root = root
        self.capabilities = types.ServerCapabilities()
        self.published: list[types.PublishDiagnosticsParams] = []
        self.notifications: dict[str, list[Any]] = {}
        self.refreshes: dict[str, int] = {}
        self._changed = asyncio.Event()
        self._versions: dict[str, int] = {}

    # -- bookkeeping of what the server sent ---------------------------------------------------------------------
    def on_publish(self, params: types.PublishDiagnosticsParams) -> None:
        self.published.append(params)
        self._poke()

    def on_notification(self, method: str, params: Any) -> None:
        self.notifications.setdefault(method, []).append(params)
        self._poke()

    def on_refresh(self, method: str) -> None:
        self.refreshes[method] = self.refreshes.get(method, 0) + 1
        self._poke()

    def _poke(self) -> None:
        self._changed.set()

    async def until(self, predicate: Callable[[], Any], timeout: float = TIMEOUT) -> Any:
        """Wait until ``predicate()`` is truthy; returns its value."""
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"timed out waiting for {predicate}")
            self._changed.clear()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._changed.wait(), min(remaining, 0.2))

    def last_published(self, path: Path) -> types.PublishDiagnosticsParams | None:
        target = uri(path)
        for params in reversed(self.published):
            if params.uri == target:
                return params
        return None

    async def diagnostics(self, path: Path, version: int | None = None) -> list[types.Diagnostic]:
        """The diagnostics published for ``path`` (for exactly ``version`` when given)."""

        def found() -> types.PublishDiagnosticsParams | None:
            last = self.last_published(path)
            if last is None or (version is not None and last.version != version):
                return None
            return last

        params = await self.until(found)
        return list(params.diagnostics)

    async def code_actions(self, path: Path, diagnostic: types.Diagnostic) -> list[types.CodeAction]:
        """The code actions the server offers for ``diagnostic`` of ``path`` (asked for its range, as editors do)."""
        result = await self.client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=uri(path)),
                range=diagnostic.range,
                context=types.CodeActionContext(diagnostics=[diagnostic]),
            )
        )
        return [a for a in result or () if isinstance(a, types.CodeAction)]

    # -- documents -----------------------------------------------------------------------------------------------
    def open(self, path: Path, text: str | None = None) -> int:
        text = path.read_text(encoding="utf-8") if text is None else text
        self._versions[uri(path)] = 1
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(uri=uri(path), language_id="python", version=1, text=text)
            )
        )
        return 1

    def change(self, path: Path, text: str, range_: types.Range | None = None) -> int:
        """Replace ``range_`` (the whole text when ``None``); returns the new version."""
        version = self._versions[uri(path)] = self._versions[uri(path)] + 1
        change: types.TextDocumentContentChangeEvent = (
            types.TextDocumentContentChangeWholeDocument(text=text)
            if range_ is None
            else types.TextDocumentContentChangePartial(range=range_, text=text)
        )
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri(path), version=version),
                content_changes=[change],
            )
        )
        return version

    def close(self, path: Path) -> None:
        self.client.text_document_did_close(
            types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri(path)))
        )


def _client_for(session_box: list[Session]) -> LanguageClient:
    client = make_test_lsp_client()

    def session() -> Session:
        return session_box[0]

    # The default handler only keeps the diagnostics; ours keeps the version and the order as well.
    client.protocol.fm.features.pop(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS, None)

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def publish(params: types.PublishDiagnosticsParams) -> None:
        session().on_publish(params)

    @client.feature("dynamoLens/runFinished")
    def run_finished(params: Any) -> None:
        session().on_notification("dynamoLens/runFinished", params)

    for method in (
        types.WORKSPACE_INLAY_HINT_REFRESH,
        types.WORKSPACE_CODE_LENS_REFRESH,
        types.WORKSPACE_DIAGNOSTIC_REFRESH,
    ):

        def refresh(params: Any, method: str = method) -> None:
            session().on_refresh(method)

        client.protocol.fm.features.pop(method, None)
        client.feature(method)(refresh)
    return client


StartServer = Callable[..., Awaitable[Session]]


@pytest_asyncio.fixture
async def lsp() -> AsyncIterator[StartServer]:
    sessions: list[Session] = []

    async def start(
        root: Path,
        *,
        pull: bool = False,
        options: dict[str, Any] | None = None,
        configuration: dict[str, Any] | None = None,
    ) -> Session:
        box: list[Session] = []
        config = ClientServerConfig(server_command=SERVER_COMMAND, client_factory=lambda: _client_for(box))
        client = await config.start()
        assert isinstance(client, LanguageClient)
        session = Session(client, root)
        box.append(session)
        sessions.append(session)
        client.set_configuration(configuration or {}, section="dynamoLens")
        result = await asyncio.wait_for(
            client.initialize_session(
                types.InitializeParams(
                    capabilities=capabilities(pull=pull),
                    root_uri=uri(root),
                    workspace_folders=[types.WorkspaceFolder(uri=uri(root), name=root.name)],
                    initialization_options=options or {"debounceMs": 0},
                )
            ),
            TIMEOUT,
        )
        session.capabilities = result.capabilities
        return session

    yield start
    for session in sessions:
        try:
            await asyncio.wait_for(session.client.shutdown_session(), TIMEOUT)
        finally:
            await session.client.stop()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root
