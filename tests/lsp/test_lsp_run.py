"""``dynamoLens.run`` and friends with real torch in the user's interpreter (slow: each run imports torch).

A run publishes runtime diagnostics, refreshes inlay hints and code lenses, notifies ``dynamoLens/runFinished`` and
answers with its summary; hovers then show the real guards. Also: cancellation through the progress, a crashing
script, edits while a run goes, two runs at once, an untrusted workspace, and "Re-run to verify".
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest
from lsp_samples import (
    CLASS_LINE,
    COMPILE_LINE,
    COUNTER_LINE,
    CRASHER,
    FIXED,
    LOOP_BREAK,
    LOOP_BREAK_COMPILE_LINE,
    RECOMPILING,
    SHAPES,
    SHAPES_CALL_LINE,
    SLEEPER,
    SLOW_RECOMPILING,
    SLOW_SHIFT,
)
from lsp_session import Session, StartServer, uri
from lsprotocol import types

pytestmark = pytest.mark.slow


async def execute(session: Session, command: str, argument: dict[str, Any]) -> Any:
    return await session.client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=command, arguments=[argument])
    )


async def run(session: Session, path: Path, **extra: Any) -> dict[str, Any]:
    summary = await asyncio.wait_for(execute(session, "dynamoLens.run", {"uri": uri(path), **extra}), 120)
    assert isinstance(summary, dict)
    return summary


async def hover(session: Session, path: Path, line: int, character: int) -> str:
    result = await session.client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri(path)),
            position=types.Position(line=line, character=character),
        )
    )
    assert result is not None and isinstance(result.contents, types.MarkupContent)
    return result.contents.value


async def inlay_hints(session: Session, path: Path) -> dict[int, str]:
    result = await session.client.text_document_inlay_hint_async(
        types.InlayHintParams(
            text_document=types.TextDocumentIdentifier(uri=uri(path)),
            range=types.Range(start=types.Position(line=0, character=0), end=types.Position(line=100, character=0)),
        )
    )
    return {hint.position.line: str(hint.label).strip() for hint in result or ()}


def runtime(diagnostics: list[types.Diagnostic]) -> list[types.Diagnostic]:
    return [d for d in diagnostics if isinstance(d.data, dict) and d.data.get("origin") == "runtime"]


async def test_run_publishes_findings_hints_lenses_and_real_guards(lsp: StartServer, workspace: Path) -> None:
    path = workspace / "model.py"
    path.write_text(RECOMPILING, encoding="utf-8")
    session = await lsp(workspace)
    session.open(path)
    await session.diagnostics(path, 1)
    summary = await run(session, path)

    assert summary["exitCode"] == 0 and summary["error"] is None
    assert summary["recompiles"] >= 7 and summary["limitHits"] == 1
    [finished] = session.notifications["dynamoLens/runFinished"]
    assert finished._asdict() == summary
    assert session.refreshes.get(types.WORKSPACE_INLAY_HINT_REFRESH) == 1
    assert session.refreshes.get(types.WORKSPACE_CODE_LENS_REFRESH) == 1

    everything = await session.diagnostics(path)
    found = runtime(everything)
    assert {d.code for d in found} >= {"DL501", "DL502"}
    [predicted] = [d for d in everything if d.code == "DL101"]
    assert "(confirmed by the last run: " in predicted.message
    assert any("as DL101 predicted" in d.message for d in found if d.code == "DL501")
    assert {d.range.start.line for d in found if d.code == "DL501"} == {COUNTER_LINE}
    assert all(d.source == "dynamo-lens" for d in found)

    hints = await inlay_hints(session, path)
    compiles = summary["compiles"]
    assert hints[CLASS_LINE].startswith(f"compiled {compiles}\N{MULTIPLICATION SIGN} · ")
    assert "recompiles · limit hit · " in hints[CLASS_LINE]
    assert re.search(r"limit hit · \d+ calls? ran compiled code, \d+ eagerly", hints[CLASS_LINE])  # really compiled?
    assert hints[COMPILE_LINE] == hints[CLASS_LINE]

    lenses = await session.client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri(path)))
    )
    titles = {lens.range.start.line: lens.command.title for lens in lenses or () if lens.command}
    assert titles[CLASS_LINE] == f"{hints[CLASS_LINE]} · Show guards"

    text = await hover(session, path, CLASS_LINE, 7)
    assert text.startswith("**Dynamo Lens** · `Counter` · last run: compiled")
    assert "**Module attributes**" in text and "- `self.steps`: `self.steps == " in text
    assert "**Tensor arguments**\n- `x`: float32[2] stride [1]" in text
    assert "TYPE_MATCH" not in text and "\n_Collapsed: " in text
    assert "#### Recompiles (what failed → what the new entry guards)" in text
    line = COUNTER_LINE + 1
    assert f"1. 0/1: `self.steps == 0` failed (line {line}) → `self.steps` `self.steps == 0` → `== 1`" in text
    assert "predicted" not in text

    # on the hazard itself: the guard it made, with the value each cache entry held
    on_counter = await hover(session, path, COUNTER_LINE, 12)
    assert on_counter.startswith(f"**Dynamo Lens** · line {COUNTER_LINE + 1} · last run")
    assert f"#### Guard installed here ({summary['compiles']} cache entries)" in on_counter
    assert "- entry 0/0: `self.steps == 0` (EQUALS_MATCH)\n- entry 0/1: `self.steps == 1` (EQUALS_MATCH)" in on_counter
    assert "**DL501**: recompiled " in on_counter

    report = await execute(session, "dynamoLens.showReport", {"uri": uri(path)})
    assert report["schema"] == "dynamo-lens.run" and report["exit_code"] == 0

    await execute(session, "dynamoLens.clearResults", {})
    await session.until(lambda: not runtime(list(session.last_published(path).diagnostics)))
    assert await execute(session, "dynamoLens.showReport", {"uri": uri(path)}) is None
    assert "no run yet" in await hover(session, path, CLASS_LINE, 7)


async def test_rerun_to_verify_compares_before_and_after(lsp: StartServer, workspace: Path) -> None:
    path = workspace / "model.py"
    path.write_text(RECOMPILING, encoding="utf-8")
    session = await lsp(workspace)
    session.open(path)
    before = await run(session, path)
    assert before["verify"] is None
    # The user applies the buffer fix and saves; the file now offers "Re-run to verify".
    version = session.change(path, FIXED)
    path.write_text(FIXED, encoding="utf-8")
    stale = [d for d in runtime(await session.diagnostics(path, version)) if d.code == "DL501"]
    assert stale and all(
        d.message.endswith("(stale: this line changed since the run; re-run to refresh)") for d in stale
    )
    lenses = await session.client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri(path)))
    )
    [verify] = [lens.command for lens in lenses or () if lens.command and lens.command.title == "↻ Re-run to verify"]
    assert verify.arguments is not None
    after = await run(session, path, **{k: v for k, v in verify.arguments[0].items() if k != "uri"})
    assert after["recompiles"] == 0
    assert after["verify"]["text"].startswith(f"recompiles {before['recompiles']} → 0")
    assert after["verify"]["text"].endswith("limit no longer hit")
    hints = await inlay_hints(session, path)
    assert hints[COMPILE_LINE].endswith(f"verified: {after['verify']['text']}")
    report = await execute(session, "dynamoLens.showReport", {"uri": uri(path)})
    assert report["verification"] == after["verify"]


async def test_the_mark_dynamic_quick_fix_of_a_size_recompile_is_verified_by_a_rerun(
    lsp: StartServer, workspace: Path
) -> None:
    path = workspace / "shapes.py"
    path.write_text(SHAPES, encoding="utf-8")
    session = await lsp(workspace)
    session.open(path)
    before = await run(session, path)
    assert (before["compiles"], before["recompiles"], before["limitHits"]) == (8, 7, 1)
    [diagnostic] = [d for d in runtime(await session.diagnostics(path)) if d.code == "DL501"]
    assert diagnostic.range.start.line == SHAPES_CALL_LINE
    [fix] = [a for a in await session.code_actions(path, diagnostic) if a.title.startswith("Mark `batch`")]
    assert fix.edit is not None and fix.edit.changes is not None
    [edit] = fix.edit.changes[uri(path)]
    assert (edit.range.start.line, edit.new_text) == (SHAPES_CALL_LINE, "    torch._dynamo.mark_dynamic(batch, 0)\n")
    lines = SHAPES.splitlines(keepends=True)
    lines.insert(edit.range.start.line, edit.new_text)
    fixed = "".join(lines)
    session.change(path, fixed)
    path.write_text(fixed, encoding="utf-8")
    after = await run(session, path, verify=True)
    assert (after["compiles"], after["recompiles"], after["limitHits"]) == (1, 0, 0)
    assert after["verify"]["text"] == "recompiles 7 → 0, compiles 8 → 1, limit no longer hit"


async def test_a_function_dynamo_gave_up_on_is_not_said_to_be_compiled(lsp: StartServer, workspace: Path) -> None:
    path = workspace / "loop_break.py"
    path.write_text(LOOP_BREAK, encoding="utf-8")
    session = await lsp(workspace)
    session.open(path)
    summary = await run(session, path)
    assert (summary["compiles"], summary["graphBreaks"]) == (0, 1)
    hints = await inlay_hints(session, path)
    assert hints[LOOP_BREAK_COMPILE_LINE] == (
        "not compiled: Dynamo skipped it (Failed to trace builtin operator), it runs eagerly"
    )


async def test_cancel_through_progress_kills_the_run(lsp: StartServer, workspace: Path) -> None:
    path = workspace / "sleeper.py"
    path.write_text(SLEEPER, encoding="utf-8")
    session = await lsp(workspace)
    running = asyncio.ensure_future(run(session, path))

    def run_progress() -> str | None:
        for token, reports in session.client.progress_reports.items():
            if reports and isinstance(reports[0], types.WorkDoneProgressBegin) and "running" in reports[0].title:
                assert reports[0].cancellable
                return str(token)
        return None

    token = await session.until(run_progress)
    await session.until(lambda: any("sleeping" in m.message for m in session.client.log_messages), 60)
    session.client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=token))
    summary = await asyncio.wait_for(running, 30)
    assert summary["cancelled"] is True
    assert summary["exitCode"] != 0
    await session.until(lambda: session.client.progress_reports[token][-1].kind == "end")


async def test_crashing_script_is_reported_and_the_server_lives_on(lsp: StartServer, workspace: Path) -> None:
    path = workspace / "crash.py"
    path.write_text(CRASHER, encoding="utf-8")
    session = await lsp(workspace)
    session.open(path)
    summary = await run(session, path)
    assert summary["exitCode"] == 1
    assert summary["compiles"] == 1
    assert any("boom from the user's script" in m.message for m in session.client.log_messages)
    assert summary["error"].startswith("the script raised RuntimeError: boom from the user's script")
    assert any("boom" in m.message and m.type == types.MessageType.Warning for m in session.client.messages)
    assert "last run: compiled 1" in await hover(session, path, 4, 5)


async def test_edits_during_a_run_move_its_findings(lsp: StartServer, workspace: Path) -> None:
    path = workspace / "model.py"
    path.write_text(SLOW_RECOMPILING, encoding="utf-8")
    session = await lsp(workspace)
    session.open(path)
    running = asyncio.ensure_future(run(session, path))
    await asyncio.sleep(1.5)
    top = types.Range(start=types.Position(line=0, character=0), end=types.Position(line=0, character=0))
    version = session.change(path, "# one\n# two\n", top)
    await running
    last = session.last_published(path)
    assert last is not None and last.version == version
    lines = {d.range.start.line for d in runtime(list(last.diagnostics)) if d.code == "DL501"}
    assert lines == {COUNTER_LINE + SLOW_SHIFT + 2}


async def test_second_run_in_the_same_workspace_is_refused(lsp: StartServer, workspace: Path) -> None:
    path = workspace / "model.py"
    path.write_text(SLOW_RECOMPILING, encoding="utf-8")
    session = await lsp(workspace)
    first = asyncio.ensure_future(run(session, path))
    await asyncio.sleep(1.0)
    with pytest.raises(Exception, match="already in progress"):
        await run(session, path)
    assert (await first)["exitCode"] == 0


async def test_untrusted_workspace_refuses_runs_but_keeps_static(lsp: StartServer, workspace: Path) -> None:
    path = workspace / "model.py"
    path.write_text(RECOMPILING, encoding="utf-8")
    session = await lsp(workspace, options={"trusted": False, "debounceMs": 0})
    session.open(path)
    assert [d.code for d in await session.diagnostics(path, 1) if d.code == "DL101"] == ["DL101"]
    with pytest.raises(Exception, match="untrusted workspace"):
        await run(session, path)
    # The workspace's own settings cannot trust it afterwards.
    session.client.set_configuration({"trusted": True}, section="dynamoLens")
    session.client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    await asyncio.sleep(0.5)
    with pytest.raises(Exception, match="untrusted workspace"):
        await run(session, path)


async def test_a_torchrun_run_shows_every_rank_and_where_they_diverged(lsp: StartServer, workspace: Path) -> None:
    source = (Path(__file__).resolve().parents[1] / "fixtures" / "runtime" / "ranks_float_attribute.py").read_text()
    path = workspace / "ddp.py"
    path.write_text(source, encoding="utf-8")
    lines = source.splitlines()
    class_line = lines.index("class Scaled(torch.nn.Module):")
    scale_line = lines.index("        return x * self.scale")
    session = await lsp(workspace)
    session.open(path)
    await session.diagnostics(path, 1)
    summary = await run(session, path, processes=2)

    assert (summary["exitCode"], summary["ranks"], summary["compiles"], summary["recompiles"]) == (0, 2, 3, 1)
    found = runtime(await session.diagnostics(path))
    assert {(d.code, d.range.start.line) for d in found} == {("DL501", scale_line), ("DL504", scale_line)}
    [diverged] = [d for d in found if d.code == "DL504"]
    assert "(1 compile on rank 0, 2 compiles on rank 1): on rank 1 `self.scale == 1.0` failed" in diverged.message
    lenses = await session.client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri(path)))
    )
    titles = {lens.range.start.line: lens.command.title for lens in lenses or () if lens.command}
    times = "\N{MULTIPLICATION SIGN}"
    assert titles[class_line] == (
        f"rank 0: compiled 1{times} · 3 calls ran compiled code; "
        f"rank 1: compiled 2{times} · 1 recompile · 3 calls ran compiled code · Show guards"
    )
    assert (await inlay_hints(session, path))[class_line] == titles[class_line].removesuffix(" · Show guards")
    text = await hover(session, path, class_line, 7)
    assert "`self.scale == 1.0`" in text  # the first rank's guards


async def test_a_run_with_a_bad_number_of_processes_is_refused(lsp: StartServer, workspace: Path) -> None:
    path = workspace / "model.py"
    path.write_text(RECOMPILING, encoding="utf-8")
    session = await lsp(workspace)
    session.open(path)
    with pytest.raises(Exception, match="processes must be a positive number of ranks, got 0"):
        await run(session, path, processes=0)


async def test_a_guard_cost_run_shows_the_checks_and_its_fix_is_verified_by_a_rerun(
    lsp: StartServer, workspace: Path
) -> None:
    source = (Path(__file__).resolve().parents[1] / "fixtures" / "runtime" / "guard_cost_many_modules.py").read_text()
    path = workspace / "mixture.py"
    path.write_text(source, encoding="utf-8")
    lines = source.splitlines()
    compile_line = lines.index('model = torch.compile(Mixture(), backend="eager")')
    session = await lsp(workspace)
    session.open(path)
    await session.diagnostics(path, 1)
    before = await run(session, path, guardCost=True)
    assert before["guardCheckUs"] > 0
    [costly] = [d for d in runtime(await session.diagnostics(path)) if d.code == "DL506"]
    assert costly.range.start.line == compile_line
    text = await hover(session, path, lines.index("class Mixture(nn.Module):"), 7)
    assert "#### Guard checks per call (steady state, measured with torch.profiler)" in text
    assert re.search(r"- entry 0/0: guard checks [\d.]+ µs per call \(\d+% of", text)

    [fix] = [a for a in await session.code_actions(path, costly) if a.title.startswith("Skip the guards")]
    assert fix.edit is not None and fix.edit.changes is not None
    [edit] = fix.edit.changes[uri(path)]
    row = lines[compile_line]
    lines[compile_line] = row[: edit.range.start.character] + edit.new_text + row[edit.range.start.character :]
    fixed = "\n".join(lines) + "\n"
    session.change(path, fixed)
    path.write_text(fixed, encoding="utf-8")
    lenses = await session.client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri(path)))
    )
    [verify] = [lens.command for lens in lenses or () if lens.command and lens.command.title == "↻ Re-run to verify"]
    assert verify.arguments is not None and verify.arguments[0]["guardCost"] is True
    after = await run(session, path, **{k: v for k, v in verify.arguments[0].items() if k != "uri"})
    assert after["guardCheckUs"] < before["guardCheckUs"]  # measured 13.8 µs → 2.1 µs
    assert after["verify"]["text"] == (
        f"guard checks {before['guardCheckUs']:.1f} µs → {after['guardCheckUs']:.1f} µs per call"
    )
    assert not [d for d in runtime(await session.diagnostics(path)) if d.code == "DL506"]
