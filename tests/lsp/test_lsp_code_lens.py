"""Code lenses before any run: run lenses on `__main__` blocks and pytest tests, "Show guards" on compiled places."""

from __future__ import annotations

from pathlib import Path

from lsp_samples import CLASS_LINE, COMPILE_LINE, MAIN_LINE, RECOMPILING, TEST_FILE
from lsp_session import Session, StartServer, uri
from lsprotocol import types


async def lenses(session: Session, path: Path) -> list[tuple[int, str, str, dict[str, object]]]:
    result = await session.client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri(path)))
    )
    out = []
    for lens in result or ():
        assert lens.command is not None and lens.command.arguments is not None
        out.append((lens.range.start.line, lens.command.title, lens.command.command, lens.command.arguments[0]))
    return out


async def test_script_lenses(lsp: StartServer, workspace: Path) -> None:
    path = workspace / "model.py"
    path.write_text(RECOMPILING, encoding="utf-8")
    session = await lsp(workspace)
    assert session.capabilities.code_lens_provider is not None
    session.open(path)
    await session.diagnostics(path, 1)
    found = await lenses(session, path)
    assert found == [
        (CLASS_LINE, "Show guards", "dynamoLens.showGuards", {"uri": uri(path), "line": CLASS_LINE, "character": 6}),
        (
            COMPILE_LINE,
            "Show guards",
            "dynamoLens.showGuards",
            {"uri": uri(path), "line": COMPILE_LINE, "character": 8},
        ),
        (MAIN_LINE, "▶ Run with Dynamo Lens", "dynamoLens.run", {"uri": uri(path), "args": []}),
    ]
    guards = await session.client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="dynamoLens.showGuards", arguments=[found[0][3]])
    )
    assert isinstance(guards, str) and "will guard `self.steps == <value>`" in guards


async def test_pytest_lenses(lsp: StartServer, workspace: Path) -> None:
    path = workspace / "test_things.py"
    path.write_text(TEST_FILE, encoding="utf-8")
    session = await lsp(workspace)
    session.open(path)
    await session.diagnostics(path, 1)
    run_lenses = [lens for lens in await lenses(session, path) if lens[2] == "dynamoLens.run"]
    assert run_lenses == [
        (
            3,
            "▶ Run test with Dynamo Lens",
            "dynamoLens.run",
            {"uri": uri(path), "args": [], "test": f"{path}::test_plain"},
        ),
        (
            8,
            "▶ Run test with Dynamo Lens",
            "dynamoLens.run",
            {"uri": uri(path), "args": [], "test": f"{path}::TestGroup::test_method"},
        ),
    ]


async def test_no_test_lenses_outside_test_files(lsp: StartServer, workspace: Path) -> None:
    path = workspace / "helpers.py"
    path.write_text(TEST_FILE, encoding="utf-8")
    session = await lsp(workspace)
    session.open(path)
    await session.diagnostics(path, 1)
    assert not [lens for lens in await lenses(session, path) if lens[2] == "dynamoLens.run"]
