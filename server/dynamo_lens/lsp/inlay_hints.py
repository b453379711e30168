"""``textDocument/inlayHint``: after a run, "compiled 9x · 8 recompiles · limit hit · 2 graph breaks" at the end of
each compile site and compiled ``class``/``def`` line; after a "Re-run to verify", the before → after comparison on
the compile sites. The server asks the client to refresh them (``workspace/inlayHint/refresh``) when a run ends."""

from __future__ import annotations

from lsprotocol import types

from dynamo_lens.lsp.compiled import observed, places_in_file, shown_places
from dynamo_lens.lsp.positions import to_lsp_position
from dynamo_lens.lsp.server import DynamoLensServer


def register(server: DynamoLensServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_INLAY_HINT, types.InlayHintOptions(resolve_provider=False))
    @server.guarded(empty=[])
    def inlay_hints(params: types.InlayHintParams) -> list[types.InlayHint]:
        path = server.path_of(params.text_document.uri)
        result = server.runs.for_path(path) if path is not None else None
        if path is None or result is None or result.report is None or server.open_lines(path) is None:
            return []
        lines = server.lines_of(path)
        hints = []
        for place in shown_places(places_in_file(path, server.analysis.model())):
            if not params.range.start.line <= place.line - 1 <= params.range.end.line:
                continue
            seen = observed(place, result.report)
            label = seen.stats_text() if seen.frames else ""
            if place.kind == "site" and result.verification is not None:
                label = f"{label} · verified: {result.verification['text']}".lstrip(" ·")
            if label:
                end = to_lsp_position(lines, place.line, 1 << 30)
                hints.append(types.InlayHint(position=end, label=f"  {label}", padding_left=True))
        return hints
