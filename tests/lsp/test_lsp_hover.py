"""Hover before any run: the guards the static findings predict, marked as predicted; nothing elsewhere."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsp_samples import CLASS_LINE, COMPILE_LINE, COUNTER_LINE, FORWARD_LINE, RECOMPILING
from lsp_session import Session, StartServer, uri
from lsprotocol import types


async def hover(session: Session, path: Path, line: int, character: int) -> str | None:
    result = await session.client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri(path)),
            position=types.Position(line=line, character=character),
        )
    )
    if result is None:
        return None
    assert isinstance(result.contents, types.MarkupContent)
    assert result.contents.kind == types.MarkupKind.Markdown
    return result.contents.value


@pytest.fixture
async def opened(lsp: StartServer, workspace: Path) -> tuple[Session, Path]:
    path = workspace / "model.py"
    path.write_text(RECOMPILING, encoding="utf-8")
    session = await lsp(workspace)
    session.open(path)
    await session.diagnostics(path, 1)
    return session, path


@pytest.mark.parametrize(
    ("line", "character", "name"),
    [
        pytest.param(CLASS_LINE, 7, "Counter", id="class line"),
        pytest.param(FORWARD_LINE, 9, "Counter.forward", id="forward"),
        pytest.param(COMPILE_LINE, 12, "Counter", id="compile site"),
    ],
)
async def test_predicted_guards_before_any_run(
    opened: tuple[Session, Path], line: int, character: int, name: str
) -> None:
    session, path = opened
    text = await hover(session, path, line, character)
    assert text is not None
    assert text.startswith(f"**Dynamo Lens** · `{name}` · no run yet")
    assert "#### Predicted guards" in text
    assert (
        f"- *predicted* · line {COUNTER_LINE + 1} · **DL101**: will guard `self.steps == <value>` (int attribute)"
        in text
    )


async def test_the_hazard_itself_shows_the_guard_it_will_make(opened: tuple[Session, Path]) -> None:
    session, path = opened
    text = await hover(session, path, COUNTER_LINE, 12)  # on `self.steps` of `self.steps += 1`
    assert text is not None
    assert text.startswith(f"**Dynamo Lens** · line {COUNTER_LINE + 1} · no run yet")
    assert "- *predicted* · **DL101**: will guard `self.steps == <value>` (int attribute)" in text


@pytest.mark.parametrize(
    ("line", "character"),
    [
        pytest.param(0, 3, id="an import"),
        pytest.param(COUNTER_LINE + 1, 12, id="inside forward's body, where no finding is"),
        pytest.param(COMPILE_LINE, 0, id="before the compile call on its line"),
        pytest.param(400, 0, id="past the end of the document"),
    ],
)
async def test_no_hover_elsewhere(opened: tuple[Session, Path], line: int, character: int) -> None:
    session, path = opened
    assert await hover(session, path, line, character) is None


async def test_no_hover_for_an_unknown_document(opened: tuple[Session, Path], workspace: Path) -> None:
    session, _ = opened
    assert await hover(session, workspace / "never_opened.py", CLASS_LINE, 7) is None


GRAPH_BREAK = """import torch


class Scorer(torch.nn.Module):
    def forward(self, x):
        return x.sum().item()


compiled = torch.compile(Scorer())
"""


async def test_a_predicted_guard_keeps_the_colons_inside_its_parentheses(lsp: StartServer, workspace: Path) -> None:
    path = workspace / "scorer.py"
    path.write_text(GRAPH_BREAK, encoding="utf-8")
    session = await lsp(workspace)
    session.open(path)
    [diagnostic] = [d for d in await session.diagnostics(path, 1) if d.code == "DL301"]
    text = await hover(session, path, 3, 7)
    assert text is not None
    assert "(torch 2.13: GB0124" in diagnostic.message
    assert f"- *predicted* · line 6 · **DL301**: {diagnostic.message}\n" in text
