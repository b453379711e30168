"""Notebooks over real JSON-RPC (LSP notebook document sync): the cells are one module, findings land on cells."""

from __future__ import annotations

import asyncio
from pathlib import Path

import nbformat
import pytest
from lsp_session import Session, StartServer, uri
from lsprotocol import types
from nbclient import NotebookClient

IMPORTS = "%matplotlib inline\nimport torch\nfrom torch import nn\n"
MODULE = """\
class Counter(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.n = 0

    def forward(self, x):
        self.n += 1
        return self.lin(x) * self.n
"""
COUNTER_LINE = 7
"""0-based line of `self.n += 1` in the cell."""
RUN = 'model = torch.compile(Counter(), backend="eager")\nfor _ in range(10):\n    model(torch.randn(2, 4))\n'
MARKDOWN = "A counter that recompiles"
CELLS = [
    (types.NotebookCellKind.Markup, "markdown", MARKDOWN),
    (types.NotebookCellKind.Code, "python", IMPORTS),
    (types.NotebookCellKind.Code, "python", MODULE),
    (types.NotebookCellKind.Code, "python", RUN),
]


def cell_uri(notebook: Path, index: int) -> str:
    """As VS Code names a cell document: a percent-encoded fragment after the notebook's path."""
    return f"vscode-notebook-cell:{notebook}#W{index}sZmlsZQ%3D%3D"


def published(session: Session, cell: str) -> list[types.Diagnostic] | None:
    """The diagnostics last pushed to the cell document ``cell``."""
    found = [p for p in session.published if p.uri == cell]
    return list(found[-1].diagnostics) if found else None


def open_notebook(session: Session, notebook: Path) -> None:
    session.client.notebook_document_did_open(
        types.DidOpenNotebookDocumentParams(
            notebook_document=types.NotebookDocument(
                uri=uri(notebook),
                notebook_type="jupyter-notebook",
                version=1,
                cells=[
                    types.NotebookCell(kind=kind, document=cell_uri(notebook, i))
                    for i, (kind, _, _) in enumerate(CELLS)
                ],
            ),
            cell_text_documents=[
                types.TextDocumentItem(uri=cell_uri(notebook, i), language_id=language, version=1, text=text)
                for i, (_, language, text) in enumerate(CELLS)
            ],
        )
    )


@pytest.fixture
async def session(lsp: StartServer, workspace: Path) -> Session:
    return await lsp(workspace)


async def test_a_hazard_in_one_cell_compiled_in_another_is_shown_on_its_cell(session: Session, workspace: Path) -> None:
    notebook = workspace / "counter.ipynb"
    assert session.capabilities.notebook_document_sync is not None
    open_notebook(session, notebook)
    module_cell = cell_uri(notebook, 2)
    diagnostics = await session.until(lambda: published(session, module_cell))
    counter = next(d for d in diagnostics if d.code == "DL101")
    assert counter.range.start == types.Position(line=COUNTER_LINE, character=8)
    assert counter.severity == types.DiagnosticSeverity.Warning
    related = {(r.location.uri, r.location.range.start.line) for r in counter.related_information or ()}
    assert (cell_uri(notebook, 3), 0) in related  # compiled here, in the next cell
    assert (module_cell, 4) in related  # `self.n = 0` in `__init__`
    assert published(session, cell_uri(notebook, 1)) == []
    assert published(session, cell_uri(notebook, 0)) is None  # a markdown cell is no document of ours

    hover = await session.client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=module_cell),
            position=types.Position(line=COUNTER_LINE, character=14),
        )
    )
    assert hover is not None and isinstance(hover.contents, types.MarkupContent)
    assert "self.n == " in hover.contents.value
    on_class = await session.client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=module_cell), position=types.Position(line=0, character=7)
        )
    )
    assert on_class is not None and isinstance(on_class.contents, types.MarkupContent)
    assert f"*predicted* · line {COUNTER_LINE + 1} · **DL101**" in on_class.contents.value  # the cell's own line

    lenses = await session.client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=module_cell))
    )
    shown = [(lens.range.start.line, lens.command.title) for lens in lenses or () if lens.command is not None]
    assert (0, "Show guards") in shown  # on `class Counter`, line 1 of its cell
    assert all(line < len(MODULE.splitlines()) for line, _ in shown)

    actions = await session.client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=module_cell),
            range=counter.range,
            context=types.CodeActionContext(diagnostics=[counter]),
        )
    )
    suppress = next(a for a in actions or () if isinstance(a, types.CodeAction) and a.title.startswith("Suppress"))
    assert suppress.edit is not None and suppress.edit.changes is not None
    assert [(e.range.start.line, e.new_text) for e in suppress.edit.changes[module_cell]] == [
        (COUNTER_LINE, "  # dynamo-lens: ignore[DL101]")
    ]

    # Two lines typed above the counter in its cell: the diagnostic follows it; then the compile cell is emptied.
    session.client.notebook_document_did_change(
        types.DidChangeNotebookDocumentParams(
            notebook_document=types.VersionedNotebookDocumentIdentifier(version=2, uri=uri(notebook)),
            change=types.NotebookDocumentChangeEvent(
                cells=types.NotebookDocumentCellChanges(
                    text_content=[
                        types.NotebookDocumentCellContentChanges(
                            document=types.VersionedTextDocumentIdentifier(uri=module_cell, version=2),
                            changes=[
                                types.TextDocumentContentChangePartial(
                                    range=types.Range(start=types.Position(6, 0), end=types.Position(6, 0)),
                                    text="    # the counter\n    # moved down\n",
                                )
                            ],
                        )
                    ]
                )
            ),
        )
    )
    moved = await session.until(
        lambda: [d for d in published(session, module_cell) or () if d.range.start.line == COUNTER_LINE + 2]
    )
    assert moved[0].code == "DL101"

    session.client.notebook_document_did_close(
        types.DidCloseNotebookDocumentParams(
            notebook_document=types.NotebookDocumentIdentifier(uri=uri(notebook)),
            cell_text_documents=[types.TextDocumentIdentifier(uri=cell_uri(notebook, i)) for i in range(len(CELLS))],
        )
    )
    await session.until(lambda: published(session, module_cell) == [])


async def test_a_pull_client_gets_the_cells_pushed(lsp: StartServer, workspace: Path) -> None:
    """VS Code pulls the diagnostics of files but never those of notebook cells: cells are pushed to every client,
    and a pull of a cell (which VS Code does not make) has nothing to add."""
    session = await lsp(workspace, pull=True)
    notebook = workspace / "counter.ipynb"
    open_notebook(session, notebook)
    diagnostics = await session.until(lambda: published(session, cell_uri(notebook, 2)))
    assert [(d.code, d.range.start.line) for d in diagnostics] == [("DL101", COUNTER_LINE)]
    assert published(session, cell_uri(notebook, 1)) == []
    report = await session.client.text_document_diagnostic_async(
        types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(uri=cell_uri(notebook, 2)))
    )
    assert isinstance(report, types.RelatedFullDocumentDiagnosticReport) and not report.items


@pytest.mark.slow
async def test_what_a_kernel_recorded_lands_on_the_cells_it_ran(session: Session, workspace: Path) -> None:
    """The notebook's cells run in a real kernel under ``%load_ext dynamo_lens``, started in the notebook's folder;
    once the client reports the recording changed, the recompiles show on the class's cell, at the counter."""
    notebook = workspace / "counter.ipynb"
    open_notebook(session, notebook)
    module_cell = cell_uri(notebook, 2)
    await session.until(lambda: published(session, module_cell))
    assert not [d for d in published(session, module_cell) or () if d.code == "DL501"]  # nothing ran yet

    ran = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell(text)
            for text in ("%load_ext dynamo_lens", IMPORTS.split("\n", 1)[1], MODULE, RUN)
        ]
    )
    client = NotebookClient(ran, timeout=240, kernel_name="python3", resources={"metadata": {"path": str(workspace)}})
    await asyncio.to_thread(client.execute)
    (recording,) = (workspace / ".dynamo-lens").glob("kernel-*.json.events.jsonl")
    session.client.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams(
            changes=[types.FileEvent(uri=uri(recording), type=types.FileChangeType.Changed)]
        )
    )
    recompiled = await session.until(
        lambda: [d for d in published(session, module_cell) or () if d.code == "DL501"], timeout=60
    )
    assert recompiled[0].range.start == types.Position(line=COUNTER_LINE, character=8)
    await session.until(lambda: session.refreshes.get(types.WORKSPACE_CODE_LENS_REFRESH))
    hover = await session.client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=module_cell), position=types.Position(line=0, character=7)
        )
    )
    assert hover is not None and isinstance(hover.contents, types.MarkupContent)
    assert "no run yet" not in hover.contents.value and "self.n == 7" in hover.contents.value  # the guards it saw
    lenses = await session.client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=module_cell))
    )
    titles = [lens.command.title for lens in lenses or () if lens.command is not None]
    assert any(title.startswith("compiled 8\N{MULTIPLICATION SIGN}") for title in titles), titles
    hints = await session.client.text_document_inlay_hint_async(
        types.InlayHintParams(
            text_document=types.TextDocumentIdentifier(uri=module_cell),
            range=types.Range(start=types.Position(0, 0), end=types.Position(len(MODULE.splitlines()), 0)),
        )
    )
    labels = [(hint.position.line, str(hint.label).strip()) for hint in hints or ()]
    assert any(line == 0 and label.startswith("compiled 8\N{MULTIPLICATION SIGN}") for line, label in labels), labels
    assert recompiled[0].message.startswith("recompiled 7\N{MULTIPLICATION SIGN}: `self.n == 7` failed (EQUALS_MATCH)")
    assert "(confirmed: 7 recompiles, as DL101 predicted)" in recompiled[0].message  # merged with the static scan
