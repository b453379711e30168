"""Code actions: "Mark module dynamic" (torch-version aware), the finding's own fixes, and suppression comments."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from lsp_samples import COUNTER_LINE, INIT_ATTR_LINE, RECOMPILING
from lsp_session import Session, StartServer, uri
from lsprotocol import types


async def actions_for(session: Session, path: Path, code: str) -> list[types.CodeAction]:
    [diagnostic] = [d for d in await session.diagnostics(path, 1) if d.code == code]
    actions = await session.code_actions(path, diagnostic)
    assert actions and all(
        a.kind == types.CodeActionKind.QuickFix and list(a.diagnostics or ()) == [diagnostic] for a in actions
    )
    return actions


def edits(action: types.CodeAction, path: Path) -> list[tuple[int, int, int, int, str]]:
    assert action.edit is not None and action.edit.changes is not None
    assert set(action.edit.changes) == {uri(path)}
    return [
        (e.range.start.line, e.range.start.character, e.range.end.line, e.range.end.character, e.new_text)
        for e in action.edit.changes[uri(path)]
    ]


def fake_python(directory: Path, torch_version: str) -> str:
    """An "interpreter" that answers the server's torch-version probe like a Python with that torch would."""
    script = directory / "python-with-old-torch"
    script.write_text(f"#!/bin/sh\necho {torch_version}\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


async def test_torch_2_13_mark_module_dynamic_explains_and_sets_the_flag(lsp: StartServer, workspace: Path) -> None:
    path = workspace / "model.py"
    path.write_text(RECOMPILING, encoding="utf-8")
    session = await lsp(workspace)
    session.open(path)
    actions = await actions_for(session, path, "DL101")
    assert [a.title for a in actions] == [
        "Mark module dynamic: let the int attributes of `Counter` vary (`allow_unspec_int_on_nn_module = True`, "
        "torch 2.13)",
        "Keep the counter in a tensor buffer",
        "Suppress DL101 on this line (# dynamo-lens: ignore[DL101])",
    ]
    mark, buffer, suppress = actions
    assert edits(mark, path) == [(1, 0, 1, 0, "torch._dynamo.config.allow_unspec_int_on_nn_module = True\n")]
    assert edits(buffer, path) == [
        (INIT_ATTR_LINE, 8, INIT_ATTR_LINE, 22, 'self.register_buffer("steps", torch.zeros((), dtype=torch.long))'),
        (COUNTER_LINE, 8, COUNTER_LINE, 23, "self.steps.add_(1)"),
    ]
    end = len(RECOMPILING.splitlines()[COUNTER_LINE])
    assert edits(suppress, path) == [(COUNTER_LINE, end, COUNTER_LINE, end, "  # dynamo-lens: ignore[DL101]")]


@pytest.mark.parametrize("version", ["2.4.1+cpu", "2.6.0"])
async def test_a_torch_without_the_setting_is_not_offered_it(
    lsp: StartServer, workspace: Path, tmp_path: Path, version: str
) -> None:
    """`allow_unspec_int_on_nn_module` raises on 2.6 (it came in 2.7), and `torchdynamo_force_dynamic` did nothing
    for a counter on 2.4.1: only the tensor buffer, which compiled once on every release, is offered."""
    path = workspace / "model.py"
    path.write_text(RECOMPILING, encoding="utf-8")
    session = await lsp(workspace, options={"debounceMs": 0, "interpreter": fake_python(tmp_path, version)})
    session.open(path)
    actions = await actions_for(session, path, "DL101")
    assert [a.title for a in actions] == [
        "Keep the counter in a tensor buffer",
        "Suppress DL101 on this line (# dynamo-lens: ignore[DL101])",
    ]


async def test_suppression_merges_into_an_existing_comment(lsp: StartServer, workspace: Path) -> None:
    path = workspace / "model.py"
    lines = RECOMPILING.splitlines(keepends=True)
    lines[COUNTER_LINE] = "        self.steps += 1  # dynamo-lens: ignore[DL204]\n"
    path.write_text("".join(lines), encoding="utf-8")
    session = await lsp(workspace)
    session.open(path)
    suppress = (await actions_for(session, path, "DL101"))[-1]
    start = lines[COUNTER_LINE].index("[")
    end = lines[COUNTER_LINE].index("]") + 1
    assert edits(suppress, path) == [(COUNTER_LINE, start, COUNTER_LINE, end, "[DL204, DL101]")]


async def test_no_actions_for_other_sources(lsp: StartServer, workspace: Path) -> None:
    path = workspace / "model.py"
    path.write_text(RECOMPILING, encoding="utf-8")
    session = await lsp(workspace)
    session.open(path)
    foreign = types.Diagnostic(
        range=types.Range(start=types.Position(line=COUNTER_LINE, character=8), end=types.Position(COUNTER_LINE, 9)),
        message="something else",
        source="pyright",
        code="DL101",
    )
    assert not await session.code_actions(path, foreign)


async def test_untrusted_workspace_never_runs_the_configured_interpreter(
    lsp: StartServer, workspace: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "interpreter-was-run"
    script = tmp_path / "python-from-the-workspace"
    script.write_text(f"#!/bin/sh\ntouch {marker}\necho 2.4.1\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    path = workspace / "model.py"
    path.write_text(RECOMPILING, encoding="utf-8")
    options = {"debounceMs": 0, "interpreter": str(script), "trusted": False}
    session = await lsp(workspace, options=options)
    session.open(path)
    actions = await actions_for(session, path, "DL101")
    assert actions[0].title.endswith("(`allow_unspec_int_on_nn_module = True`, torch 2.13)")
    assert not marker.exists()
