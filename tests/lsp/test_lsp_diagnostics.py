"""Diagnostics over real JSON-RPC: push on open/change, pull, cross-file severity, the workspace scan, settings."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

from lsp_session import Session, StartServer, uri
from lsprotocol import types

from dynamo_lens.codes import get_rule

COUNTER = """\
import torch


class Counter(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.steps = 0

    def forward(self, x):
        label = "é😀"; print(x)
        self.steps += 1
        return x * 2


model = torch.compile(Counter())
"""
HAZARD = "DL301"  # `print(x)` breaks the graph
HAZARD_LINE = 9  # 0-based line of `print(x)`
# `print` starts after 8 spaces and `label = "é😀"; ` (14 characters, but 15 UTF-16 units: 😀 counts 2).
HAZARD_CHARACTER = 8 + 15
COMPILE_LINE = 14

UNCOMPILED_MODEL = COUNTER.replace("\n\nmodel = torch.compile(Counter())\n", "\n")
TRAIN = "import torch\nfrom model import Counter\n\nmodel = torch.compile(Counter())\n"


def by_code(diagnostics: list[types.Diagnostic], code: str) -> list[types.Diagnostic]:
    return [d for d in diagnostics if d.code == code]


async def test_open_publishes_finding_with_code_link_related_and_utf16_position(
    lsp: StartServer, workspace: Path
) -> None:
    path = workspace / "model.py"
    path.write_text(COUNTER, encoding="utf-8")
    session = await lsp(workspace)
    version = session.open(path)
    [diagnostic] = by_code(await session.diagnostics(path, version), HAZARD)
    rule = get_rule(HAZARD)
    assert rule is not None
    assert diagnostic.range.start == types.Position(line=HAZARD_LINE, character=HAZARD_CHARACTER)
    assert diagnostic.range.end.line == HAZARD_LINE and diagnostic.range.end.character > HAZARD_CHARACTER
    assert diagnostic.source == "dynamo-lens"
    assert diagnostic.severity == types.DiagnosticSeverity.Warning
    assert diagnostic.code_description is not None and diagnostic.code_description.href == rule.docs_url
    related_lines = {(r.location.uri, r.location.range.start.line) for r in diagnostic.related_information or ()}
    assert (uri(path), COMPILE_LINE) in related_lines
    assert isinstance(diagnostic.data, dict) and diagnostic.data["origin"] == "static"


async def test_change_republishes_for_the_new_version(lsp: StartServer, workspace: Path) -> None:
    path = workspace / "model.py"
    path.write_text(COUNTER, encoding="utf-8")
    session = await lsp(workspace)
    session.open(path)
    assert by_code(await session.diagnostics(path, 1), HAZARD)
    fixed = COUNTER.replace('label = "é😀"; print(x)', "pass")
    version = session.change(path, fixed)
    assert by_code(await session.diagnostics(path, version), HAZARD) == []
    # An incremental edit that brings the hazard back two lines lower.
    version = session.change(
        path,
        "\n\n",
        types.Range(start=types.Position(line=0, character=0), end=types.Position(line=0, character=0)),
    )
    version = session.change(
        path,
        "print(x)",
        types.Range(
            start=types.Position(line=HAZARD_LINE + 2, character=8),
            end=types.Position(line=HAZARD_LINE + 2, character=12),
        ),
    )
    [diagnostic] = by_code(await session.diagnostics(path, version), HAZARD)
    assert diagnostic.range.start == types.Position(line=HAZARD_LINE + 2, character=8)


async def test_a_wider_character_before_an_unchanged_finding_moves_its_utf16_column(
    lsp: StartServer, workspace: Path
) -> None:
    """The finding stays the same (same character columns); only its line's text changes: é (1 UTF-16 unit)
    becomes 😀 (2 units), and the diagnostic must not be the one built for the old line."""
    path = workspace / "model.py"
    path.write_text(COUNTER, encoding="utf-8")
    session = await lsp(workspace)
    session.open(path)
    [before] = by_code(await session.diagnostics(path, 1), HAZARD)
    version = session.change(path, COUNTER.replace('"é😀"', '"😀😀"'))
    [after] = by_code(await session.diagnostics(path, version), HAZARD)
    assert after.range.start == types.Position(line=HAZARD_LINE, character=before.range.start.character + 1)
    assert after.message == before.message


async def test_a_burst_of_edits_publishes_only_the_latest_version(lsp: StartServer, workspace: Path) -> None:
    path = workspace / "model.py"
    path.write_text(COUNTER, encoding="utf-8")
    session = await lsp(workspace, options={"debounceMs": 300})
    session.open(path)
    await session.diagnostics(path, 1)
    first_burst_publish = len(session.published)
    texts = [COUNTER.replace("print(x)", f"print(x, {n})") for n in range(2, 8)]
    versions = [session.change(path, text) for text in texts]
    await session.diagnostics(path, versions[-1])
    await asyncio.sleep(0.5)
    published = [p.version for p in session.published[first_burst_publish:] if p.uri == uri(path)]
    assert published == sorted(published)
    assert published[-1] == versions[-1]
    # The first edit of the burst may go out at once (leading edge); the rest are coalesced into the last one.
    assert len(published) <= 2


async def test_pull_diagnostics_when_the_client_declares_them(lsp: StartServer, workspace: Path) -> None:
    path = workspace / "model.py"
    path.write_text(COUNTER, encoding="utf-8")
    session = await lsp(workspace, pull=True)
    provider = session.capabilities.diagnostic_provider
    assert isinstance(provider, types.DiagnosticOptions) and provider.inter_file_dependencies
    session.open(path)
    params = types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(uri=uri(path)))
    report = await session.client.text_document_diagnostic_async(params)
    assert isinstance(report, types.RelatedFullDocumentDiagnosticReport)
    [diagnostic] = by_code(list(report.items), HAZARD)
    assert diagnostic.range.start.line == HAZARD_LINE
    params.previous_result_id = report.result_id
    again = await session.client.text_document_diagnostic_async(params)
    assert isinstance(again, types.RelatedUnchangedDocumentDiagnosticReport)
    session.change(path, COUNTER.replace('label = "é😀"; print(x)', "pass"))
    changed = await session.client.text_document_diagnostic_async(params)
    assert isinstance(changed, types.RelatedFullDocumentDiagnosticReport)
    assert by_code(list(changed.items), HAZARD) == []
    assert not [p for p in session.published if p.diagnostics], "a pull client gets no pushed diagnostics"


async def test_workspace_pull_reports_unopened_files_then_only_what_changed(lsp: StartServer, workspace: Path) -> None:
    opened, unopened = workspace / "model.py", workspace / "other.py"
    opened.write_text(COUNTER, encoding="utf-8")
    unopened.write_text(COUNTER, encoding="utf-8")
    (workspace / "clean.py").write_text("x = 1\n", encoding="utf-8")
    session = await lsp(workspace, pull=True)
    provider = session.capabilities.diagnostic_provider
    assert isinstance(provider, types.DiagnosticOptions) and provider.workspace_diagnostics
    session.open(opened)

    async def pull(held: dict[str, str]) -> dict[str, types.WorkspaceDocumentDiagnosticReport]:
        previous = [types.PreviousResultId(uri=u, value=v) for u, v in held.items()]
        report = await session.client.workspace_diagnostic_async(types.WorkspaceDiagnosticParams(previous))
        return {item.uri: item for item in report.items}

    first = await pull({})  # answered once the workspace scan is done: the unopened file is in it
    assert set(first) == {uri(opened), uri(unopened)}
    for item in first.values():
        assert isinstance(item, types.WorkspaceFullDocumentDiagnosticReport)
        assert [d.range.start.line for d in by_code(list(item.items), HAZARD)] == [HAZARD_LINE]
    assert first[uri(opened)].version == 1 and first[uri(unopened)].version is None
    held = {u: item.result_id for u, item in first.items() if item.result_id is not None}
    gone = uri(workspace / "deleted.py")
    again = await pull({**held, gone: "1:1"})
    assert all(isinstance(again[u], types.WorkspaceUnchangedDocumentDiagnosticReport) for u in held)
    assert isinstance(again[gone], types.WorkspaceFullDocumentDiagnosticReport) and not again[gone].items

    unopened.write_text(COUNTER.replace('label = "é😀"; print(x)', "pass"), encoding="utf-8")
    session.client.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams([types.FileEvent(uri(unopened), types.FileChangeType.Changed)])
    )

    async def changed() -> types.WorkspaceDocumentDiagnosticReport:
        while True:
            report = (await pull(held))[uri(unopened)]
            if isinstance(report, types.WorkspaceFullDocumentDiagnosticReport):
                return report
            await asyncio.sleep(0.05)

    report = await asyncio.wait_for(changed(), 20)
    assert isinstance(report, types.WorkspaceFullDocumentDiagnosticReport) and by_code(list(report.items), HAZARD) == []


async def test_push_server_does_not_advertise_pull(lsp: StartServer, workspace: Path) -> None:
    session = await lsp(workspace)
    assert session.capabilities.diagnostic_provider is None


async def test_compile_site_in_another_file_makes_the_hazard_a_warning(lsp: StartServer, workspace: Path) -> None:
    model = workspace / "model.py"
    model.write_text(UNCOMPILED_MODEL, encoding="utf-8")
    session = await lsp(workspace)
    session.open(model)
    await session.until(lambda: session.last_published(model) and session.last_published(model).version == 1)
    train = workspace / "train.py"
    session.open(train, TRAIN)  # the compile site appears in the editor, not on disk

    def warning() -> list[types.Diagnostic]:
        last = session.last_published(model)
        diagnostics = by_code(list(last.diagnostics), HAZARD) if last else []
        return [d for d in diagnostics if d.severity == types.DiagnosticSeverity.Warning]

    [diagnostic] = await session.until(warning)
    assert any(r.location.uri == uri(train) for r in diagnostic.related_information or ())


async def test_workspace_scan_publishes_unopened_files_with_progress(lsp: StartServer, workspace: Path) -> None:
    (workspace / "model.py").write_text(COUNTER, encoding="utf-8")
    (workspace / "clean.py").write_text("x = 1\n", encoding="utf-8")
    (workspace / ".venv").mkdir()
    (workspace / ".venv" / "pyvenv.cfg").write_text("home = /usr\n")
    (workspace / ".venv" / "hidden.py").write_text(COUNTER, encoding="utf-8")
    session = await lsp(workspace)
    diagnostics = await session.diagnostics(workspace / "model.py")
    assert [d.range.start.line for d in by_code(diagnostics, HAZARD)] == [HAZARD_LINE]
    assert session.last_published(workspace / ".venv" / "hidden.py") is None
    [(_token, reports)] = await session.until(lambda: [(t, r) for t, r in session.client.progress_reports.items()
                                                       if r and r[-1].kind == "end"])  # fmt: skip
    assert reports[0].kind == "begin" and "scanning" in reports[0].title


async def test_settings_select_ignore_and_severity(lsp: StartServer, workspace: Path) -> None:
    path = workspace / "model.py"
    path.write_text(COUNTER, encoding="utf-8")
    session = await lsp(workspace, options={"debounceMs": 0, "ignore": [HAZARD]})
    session.open(path)
    assert by_code(await session.diagnostics(path, 1), HAZARD) == []
    session.client.set_configuration({"ignore": [], "severity": {HAZARD: "hint"}}, section="dynamoLens")
    session.client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))

    def hint() -> list[types.Diagnostic]:
        last = session.last_published(path)
        return [d for d in by_code(list(last.diagnostics), HAZARD) if d.severity == types.DiagnosticSeverity.Hint]

    assert await session.until(hint)
    session.client.set_configuration({"enableStatic": False}, section="dynamoLens")
    session.client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    await session.until(lambda: not session.last_published(path).diagnostics)


async def test_bad_settings_are_reported_and_defaults_kept(lsp: StartServer, workspace: Path) -> None:
    path = workspace / "model.py"
    path.write_text(COUNTER, encoding="utf-8")
    session = await lsp(workspace, options={"debounceMs": "soon", "select": ["NOPE"]})
    session.open(path)
    assert by_code(await session.diagnostics(path, 1), HAZARD)
    logged = "\n".join(m.message for m in session.client.log_messages)
    assert "debounceMs" in logged and "NOPE" in logged
    assert any("invalid" in m.message for m in session.client.messages)


async def diagnostics_after(session: Session, path: Path, text: str) -> list[types.Diagnostic]:
    version = session.open(path, text)
    return await session.diagnostics(path, version)


async def test_files_changed_on_disk_are_read_again(lsp: StartServer, workspace: Path) -> None:
    model = workspace / "model.py"
    model.write_text(UNCOMPILED_MODEL, encoding="utf-8")
    session = await lsp(workspace)

    def severity_of_hazard() -> types.DiagnosticSeverity | None:
        last = session.last_published(model)
        found = by_code(list(last.diagnostics), HAZARD) if last else []
        return found[0].severity if found else None

    assert await session.until(severity_of_hazard) == types.DiagnosticSeverity.Hint
    train = workspace / "train.py"
    train.write_text(TRAIN, encoding="utf-8")  # e.g. a `git checkout` brings a compile site in
    session.client.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams(changes=[types.FileEvent(uri=uri(train), type=types.FileChangeType.Created)])
    )
    await session.until(lambda: severity_of_hazard() == types.DiagnosticSeverity.Warning)
    train.unlink()
    session.client.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams(changes=[types.FileEvent(uri=uri(train), type=types.FileChangeType.Deleted)])
    )
    await session.until(lambda: severity_of_hazard() == types.DiagnosticSeverity.Hint)
    assert not [m for m in session.client.log_messages if m.type == types.MessageType.Error]


def fake_torch_python(home: Path, version: str, item_id: str) -> str:
    """An interpreter whose package metadata says torch ``version`` is installed, with a graph-break registry that
    numbers the ``.item()`` break ``item_id`` (the server reads both without importing torch)."""
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--without-pip", str(home)], check=True)
    [site] = home.glob("lib/python*/site-packages")
    (site / f"torch-{version}.dist-info").mkdir()
    (site / f"torch-{version}.dist-info" / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: torch\nVersion: {version}\n", encoding="utf-8"
    )
    registry = site / "torch" / "_dynamo" / "graph_break_registry.json"
    registry.parent.mkdir(parents=True)
    item = "Unsupported Tensor.item() call with capture_scalar_outputs=False"
    registry.write_text(json.dumps({item_id: [{"Gb_type": item}]}), encoding="utf-8")
    return str(home / "bin" / "python")


async def test_messages_describe_the_selected_interpreters_torch(
    lsp: StartServer, workspace: Path, tmp_path: Path
) -> None:
    path = workspace / "step.py"
    path.write_text("import torch\n\n\n@torch.compile\ndef step(x):\n    return x * x.sum().item()\n", encoding="utf-8")
    session = await lsp(workspace, options={"debounceMs": 0, "trusted": True})
    session.open(path)
    [found] = by_code(await session.diagnostics(path, 1), HAZARD)
    assert '(torch 2.13: GB0124 "Unsupported Tensor.item() call' in found.message
    newer = fake_torch_python(tmp_path / "venv-2.14", "2.14.1", "GB9999")
    session.client.set_configuration({"interpreter": newer, "trusted": True}, section="dynamoLens")
    session.client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))

    def described() -> str:
        last = session.last_published(path)
        return "".join(d.message for d in by_code(list(last.diagnostics), HAZARD)) if last else ""

    assert await session.until(lambda: '(torch 2.14: GB9999 "Unsupported Tensor.item() call' in described())
    # the workspace names the release: no registry of it is readable, so no id
    (workspace / "pyproject.toml").write_text('[tool.dynamo-lens]\ntorch-version = "2.15"\n', encoding="utf-8")
    session.client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    assert await session.until(lambda: '(torch 2.15, as measured on 2.14: "Unsupported Tensor.item()' in described())
