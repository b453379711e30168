"""The server never dies: bad documents, odd requests, huge files and documents closed while being analysed."""

from __future__ import annotations

import asyncio
from pathlib import Path

from lsp_samples import RECOMPILING
from lsp_session import Session, StartServer, uri
from lsprotocol import types


def text_document(path: Path) -> types.TextDocumentIdentifier:
    return types.TextDocumentIdentifier(uri=uri(path))


async def still_answers(session: Session, path: Path) -> None:
    """A request that needs the whole server: it must be answered normally."""
    lenses = await session.client.text_document_code_lens_async(types.CodeLensParams(text_document=text_document(path)))
    assert lenses is not None
    assert not [m for m in session.client.log_messages if m.type == types.MessageType.Error]


async def test_requests_for_unknown_documents_get_empty_answers(lsp: StartServer, workspace: Path) -> None:
    session = await lsp(workspace)
    ghost = text_document(workspace / "ghost.py")
    everywhere = types.Range(start=types.Position(line=0, character=0), end=types.Position(line=99, character=0))
    position = types.Position(line=3, character=3)
    assert await session.client.text_document_hover_async(types.HoverParams(ghost, position)) is None
    assert not await session.client.text_document_code_lens_async(types.CodeLensParams(ghost))
    assert not await session.client.text_document_inlay_hint_async(types.InlayHintParams(ghost, everywhere))
    actions = await session.client.text_document_code_action_async(
        types.CodeActionParams(ghost, everywhere, types.CodeActionContext(diagnostics=[]))
    )
    assert not actions
    untitled = types.TextDocumentItem(uri="untitled:Untitled-1", language_id="python", version=1, text=RECOMPILING)
    session.client.text_document_did_open(types.DidOpenTextDocumentParams(untitled))
    assert (
        await session.client.text_document_hover_async(
            types.HoverParams(types.TextDocumentIdentifier(uri=untitled.uri), position)
        )
        is None
    )
    for bad in ({}, {"uri": 42}, {"uri": uri(workspace / "x.py"), "args": "not a list"}):
        try:
            await session.client.workspace_execute_command_async(
                types.ExecuteCommandParams(command="dynamoLens.run", arguments=[bad])
            )
        except Exception as exc:  # the error response itself is the expected answer
            assert "dynamoLens.run" in str(exc)
        else:
            raise AssertionError(f"{bad} was accepted")


async def test_syntax_errors_and_half_typed_code(lsp: StartServer, workspace: Path) -> None:
    path = workspace / "model.py"
    path.write_text(RECOMPILING, encoding="utf-8")
    session = await lsp(workspace)
    session.open(path)
    await session.diagnostics(path, 1)
    for cut in (10, 100, 200, len(RECOMPILING) - 3):
        version = session.change(path, RECOMPILING[:cut] + "\n    def broken(:\n")
        await session.diagnostics(path, version)
    version = session.change(path, "\x00\x01 not python at all ((((\n" * 3)
    assert await session.diagnostics(path, version) == []
    await still_answers(session, path)


async def test_positions_past_the_end(lsp: StartServer, workspace: Path) -> None:
    path = workspace / "model.py"
    path.write_text(RECOMPILING, encoding="utf-8")
    session = await lsp(workspace)
    session.open(path)
    await session.diagnostics(path, 1)
    far = types.Position(line=10_000, character=10_000)
    assert await session.client.text_document_hover_async(types.HoverParams(text_document(path), far)) is None
    hints = await session.client.text_document_inlay_hint_async(
        types.InlayHintParams(text_document(path), types.Range(start=far, end=far))
    )
    assert not hints
    # An edit whose range lies past the end (clients send these while the text is changing under them).
    version = session.change(path, "x = 1\n", types.Range(start=far, end=far))
    await session.diagnostics(path, version)
    await still_answers(session, path)


async def test_a_50000_line_file(lsp: StartServer, workspace: Path) -> None:
    body = "".join(f"value_{i} = {i}  # filler line with text é\n" for i in range(50_000))
    path = workspace / "huge.py"
    text = RECOMPILING + body
    path.write_text(text, encoding="utf-8")
    session = await lsp(workspace)
    session.open(path)
    codes = {d.code for d in await session.diagnostics(path, 1)}
    assert "DL101" in codes
    end = types.Position(line=50_000, character=0)
    version = session.change(path, "y = 2\n", types.Range(start=end, end=end))
    assert "DL101" in {d.code for d in await session.diagnostics(path, version)}
    await still_answers(session, path)


async def test_document_closed_while_being_analysed(lsp: StartServer, workspace: Path) -> None:
    body = "".join(f"value_{i} = {i}\n" for i in range(30_000))
    path = workspace / "model.py"
    path.write_text("x = 1\n", encoding="utf-8")  # what is on disk: nothing to report
    session = await lsp(workspace)
    session.open(path, RECOMPILING + body)  # the editor's unsaved text has a hazard
    session.close(path)
    await asyncio.sleep(1.0)
    last = session.last_published(path)
    assert last is not None and last.version is None
    assert not last.diagnostics
    assert all(p.version is None or p.version == 1 for p in session.published if p.uri == uri(path))
    await still_answers(session, path)


async def test_a_failing_handler_logs_its_traceback_and_answers_empty(lsp: StartServer, workspace: Path) -> None:
    path = workspace / "model.py"
    path.write_text(RECOMPILING, encoding="utf-8")
    session = await lsp(workspace)
    session.open(path)
    await session.diagnostics(path, 1)
    for _ in range(2):
        answer = await session.client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="dynamoLens.showGuards", arguments=[{"uri": uri(path), "line": "x"}])
        )
        assert answer is None
    errors = [m.message for m in session.client.log_messages if m.type == types.MessageType.Error]
    assert len(errors) == 2 and all("Traceback" in e and "ValueError" in e for e in errors)
    shown = [m.message for m in session.client.messages if m.type == types.MessageType.Error]
    assert len(shown) == 1 and "see the Dynamo Lens output log" in shown[0]
    lenses = await session.client.text_document_code_lens_async(types.CodeLensParams(text_document=text_document(path)))
    assert lenses
