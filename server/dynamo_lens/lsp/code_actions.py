"""``textDocument/codeAction``: quick fixes for Dynamo Lens diagnostics, as workspace edits.

* **Mark module dynamic** first, on an int module attribute Dynamo specialises on (DL101), because users ask for
  it by that name: ``torch._dynamo.config.allow_unspec_int_on_nn_module = True`` (the finding's own fix, retitled
  to say so), offered only on a torch that has the setting (``torch_facts.UNSPEC_INT_FLAG_SINCE``; setting it
  on an older one raises). Older releases get no setting to flip: ``self.torchdynamo_force_dynamic = True``
  changed nothing for a counter on 2.4.1 (measured), and the tensor buffer works everywhere.
* The finding's other fixes, read back from ``Diagnostic.data`` (never recomputed), offered only where they work on
  the selected interpreter's torch (``Fix.min_torch``/``max_torch``).
* A suppression comment ``# dynamo-lens: ignore[CODE]`` (merged into an existing one on that line).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from lsprotocol import types

from dynamo_lens.lsp.convert import SOURCE, LinesOf, facts_from_data, fixes_from_data, to_workspace_edit
from dynamo_lens.lsp.interpreter import selected_torch
from dynamo_lens.lsp.notebook_cells import notebook_of_cell
from dynamo_lens.lsp.positions import from_lsp_position
from dynamo_lens.lsp.server import DynamoLensServer
from dynamo_lens.model import Edit, Fix, Span
from dynamo_lens.torch_facts import PINNED, TorchTarget

MARK_DYNAMIC_CODES = frozenset({"DL101"})
UNSPEC_INT_FLAG = "allow_unspec_int_on_nn_module"
_SUPPRESSION = re.compile(r"#\s*dynamo-lens:\s*ignore\b(?P<codes>\[[^\]]*\])?")


def register(server: DynamoLensServer) -> None:
    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix])
    )
    @server.guarded(empty=[])
    async def code_action(params: types.CodeActionParams) -> list[types.CodeAction]:
        uri = params.text_document.uri
        path = server.path_of(uri)
        lines = server.open_lines(path) if path is not None else None
        if path is None and notebook_of_cell(server.notebooks, uri) is not None:
            path, lines = uri, server.lines_of(uri)  # a notebook cell: its document stands for itself
        if path is None or lines is None:
            return []
        ours = [d for d in params.context.diagnostics if d.source == SOURCE and isinstance(d.code, str)]
        if not ours:
            return []
        torch = await selected_torch(server)
        return [action for d in ours for action in actions_for(d, path, lines, torch, server.lines_of)]


def actions_for(
    diagnostic: types.Diagnostic,
    path: str,
    lines: Sequence[str],
    torch: TorchTarget,
    lines_of: LinesOf,
) -> list[types.CodeAction]:
    """The quick fixes for one diagnostic: "Mark module dynamic" first, then the finding's fixes, then suppression."""
    line, _column = from_lsp_position(lines, diagnostic.range.start)
    fixes = applicable(fixes_from_data(diagnostic.data), torch)
    if diagnostic.code in MARK_DYNAMIC_CODES:
        fixes = mark_module_dynamic(facts_from_data(diagnostic.data), fixes, torch)
    suppress = suppression(path, lines, line, str(diagnostic.code))
    fixes += [suppress] if suppress is not None else []
    return [
        types.CodeAction(
            title=fix.title,
            kind=types.CodeActionKind.QuickFix,
            diagnostics=[diagnostic],
            edit=to_workspace_edit(fix.edits, lines_of),
            is_preferred=fix.safe and fix is not suppress,
        )
        for fix in fixes
    ]


def applicable(fixes: Sequence[Fix], torch: TorchTarget) -> list[Fix]:
    return [fix for fix in fixes if fix.works_on(torch.release)]


def mark_module_dynamic(facts: Mapping[str, Any], fixes: list[Fix], torch: TorchTarget) -> list[Fix]:
    """``fixes`` with "Mark module dynamic" put first (taking over the fix it retitles)."""
    short = str(facts.get("class", "")).rpartition(".")[2] or "the module"
    version = str(torch.release or PINNED)
    flag = next((f for f in fixes if any(UNSPEC_INT_FLAG in e.new_text for e in f.edits)), None)
    if flag is None or facts.get("kind") != "int":
        return fixes
    title = (
        f"Mark module dynamic: let the int attributes of `{short}` vary (`{UNSPEC_INT_FLAG} = True`, torch {version})"
    )
    marked = Fix(title=title, edits=flag.edits, safe=flag.safe, min_torch=flag.min_torch, max_torch=flag.max_torch)
    return [marked, *(f for f in fixes if f is not flag)]


def suppression(path: str, lines: Sequence[str], line: int, code: str) -> Fix | None:
    """``# dynamo-lens: ignore[CODE]`` on 1-based ``line``, merged into an existing suppression comment."""
    text = _line(lines, line)
    match = _SUPPRESSION.search(text)
    if match is None:
        end = len(text) + 1
        edit = Edit(Span(path, line, end, line, end), f"  # dynamo-lens: ignore[{code}]")
    elif match.group("codes") is None:
        return None  # a bare ignore already silences every code
    else:
        codes = [c.strip() for c in match.group("codes")[1:-1].split(",") if c.strip()]
        if code in codes:
            return None
        start, end = match.start("codes") + 1, match.end("codes") + 1
        edit = Edit(Span(path, line, start, line, end), "[" + ", ".join([*codes, code]) + "]")
    return Fix(title=f"Suppress {code} on this line (# dynamo-lens: ignore[{code}])", edits=(edit,), safe=True)


def _line(lines: Sequence[str], line: int) -> str:
    return lines[line - 1].rstrip("\r\n") if 0 < line <= len(lines) else ""


def _indent(text: str) -> str:
    return text[: len(text) - len(text.lstrip())]
