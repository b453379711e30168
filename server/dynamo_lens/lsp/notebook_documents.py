"""Notebooks open in the editor (LSP notebook document sync): analysed as one module, shown on their cells.

A notebook is one entry of the document store, under its file path, like a Python file: its "text" is the module its
Python code cells make in order (``notebooks.module_of_cells``), rebuilt from pygls' copy of the cells after every
``notebookDocument/didChange``, and analysed and linked on the same debounced path as a text document. Only when
diagnostics leave the server are positions turned into cell positions: each cell document (``vscode-notebook-cell:``
URI) gets the findings inside it, with lines counted within the cell.
"""

from __future__ import annotations

import asyncio
from urllib.parse import unquote

from lsprotocol import types

from dynamo_lens import notebooks
from dynamo_lens.lsp import diagnostics, kernel_runs
from dynamo_lens.lsp.notebook_cells import OpenNotebook
from dynamo_lens.lsp.server import DynamoLensServer


def register(server: DynamoLensServer) -> None:
    @server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
    @server.guarded()
    def did_open(params: types.DidOpenNotebookDocumentParams) -> None:
        path = server.path_of(params.notebook_document.uri)
        if path is not None:
            server.analysis.pin(path)
            _read(server, path, params.notebook_document.uri, params.notebook_document.version)
            diagnostics.schedule(server, path, immediate=True)
            server.kernel_refresh = asyncio.ensure_future(kernel_runs.refresh(server, [path]))

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    @server.guarded()
    def did_change(params: types.DidChangeNotebookDocumentParams) -> None:
        path = server.path_of(params.notebook_document.uri)
        if path is not None and path in server.notebooks:
            _read(server, path, params.notebook_document.uri, params.notebook_document.version)
            diagnostics.schedule(server, path)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
    @server.guarded()
    def did_close(params: types.DidCloseNotebookDocumentParams) -> None:
        path = server.path_of(params.notebook_document.uri)
        notebook = server.notebooks.get(path) if path is not None else None
        if path is None or notebook is None:
            return
        for cell_uri in notebook.cell_uris.values():  # the cells' squiggles go with the notebook
            server.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=cell_uri, diagnostics=[]))
        del server.notebooks[path]
        server.kernel_reports.pop(path, None)
        diagnostics.close_document(server, path)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
    @server.guarded()
    def did_save(params: types.DidSaveNotebookDocumentParams) -> None:
        """Nothing to do: the open notebook's cells, not the file, are what the server analyses."""


def _read(server: DynamoLensServer, path: str, uri: str, version: int) -> None:
    """The notebook's module as pygls now holds its cells: the document state's text, and the cell layout."""
    document = server.workspace.get_notebook_document(notebook_uri=uri)
    if document is None:
        return
    sources: list[tuple[int, str]] = []
    cell_uris: dict[int, str] = {}
    for index, cell in enumerate(document.cells):
        text = server.workspace.text_documents.get(unquote(cell.document))  # pygls keys documents unquoted
        if cell.kind != types.NotebookCellKind.Code or text is None or text.language_id not in (None, "python"):
            continue
        sources.append((index, text.source))
        cell_uris[index] = cell.document
    module = notebooks.module_of_cells(sources)
    server.notebooks[path] = OpenNotebook(uri, module.cells, cell_uris)
    state = server.documents.get(path)
    state.open, state.version = True, version
    state.lines = module.text.splitlines(keepends=True)
