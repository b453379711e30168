"""diagnostics.apply_static: links run in parallel with analyses and can finish out of order. A file keeps the
findings of the newest snapshot of the workspace it was given (seen on CI: the workspace scan's link, which read the
workspace before the open document was analysed, finished last and published an empty list for version 1)."""

from __future__ import annotations

from dynamo_lens.lsp.diagnostics import apply_static
from dynamo_lens.lsp.server import DynamoLensServer
from dynamo_lens.model import Finding, Severity, Span

PATH = "/w/model.py"
FINDING = Finding("DL101", Severity.WARNING, Span(PATH, 5, 9, 5, 24), "the counter recompiles")


def opened() -> DynamoLensServer:
    server = DynamoLensServer()
    state = server.documents.get(PATH)
    state.open, state.version = True, 1
    # the open document's own link read snapshot 2, with its text, and finished first
    assert apply_static(server, {PATH: [FINDING]}, {PATH: 1}, snapshot=2) == [PATH]
    return server


def test_an_older_link_finishing_last_leaves_the_newer_findings() -> None:
    server = opened()
    assert apply_static(server, {}, {}, snapshot=1) == []
    assert server.documents.get(PATH).static == (FINDING,)


def test_a_newer_link_replaces_them() -> None:
    server = opened()
    assert apply_static(server, {}, {}, snapshot=3) == [PATH]
    assert server.documents.get(PATH).static == ()
