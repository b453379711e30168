"""``textDocument/codeAction``: quick fixes for Dynamo Lens diagnostics, as ``WorkspaceEdit``\\ s.

* The finding's own fixes, read back from ``Diagnostic.data`` (never recomputed), offered only where they work on
  the selected interpreter's torch (``Fix.min_torch``/``max_torch``).
* **Mark module dynamic** on a module attribute Dynamo specialises on (DL101). Torch before 2.5 still specialised
  ``nn.Module`` instances: the fix sets ``self.torchdynamo_force_dynamic = True`` in ``__init__``. From 2.5 every
  module is already dynamic (``inline_inbuilt_nn_modules``); the action says so in its title and does what is left:
  ``torch._dynamo.config.allow_unspec_int_on_nn_module = True`` after the imports, so int attributes become dynamic.
* A suppression comment ``# dynamo-lens: ignore[CODE]`` (added to an existing one on that line).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from lsprotocol import types

from dynamo_lens.lsp.convert import SOURCE, LinesOf, fixes_from_data, to_workspace_edit
from dynamo_lens.lsp.interpreter import TorchVersion, in_range, selected_torch
from dynamo_lens.lsp.positions import from_lsp_position
from dynamo_lens.lsp.server import DynamoLensServer
from dynamo_lens.model import Edit, Fix, Span
from dynamo_lens.static.summary import ClassSummary, FileSummary

MARK_DYNAMIC_CODES = frozenset({"DL101"})
MODULES_DYNAMIC_SINCE: TorchVersion = (2, 5)
UNSPEC_INT_FLAG = "torch._dynamo.config.allow_unspec_int_on_nn_module = True"
_SUPPRESSION = re.compile(r"#\s*dynamo-lens:\s*ignore\b(?P<codes>\[[^\]]*\])?")
_IMPORT = re.compile(r"^(import|from)\s+\S")
_SELF_ATTR = re.compile(r"self\.(?P<name>\w+)")


def register(server: DynamoLensServer) -> None:
    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix])
    )
    @server.guarded(empty=[])
    async def code_action(params: types.CodeActionParams) -> list[types.CodeAction]:
        path = server.path_of(params.text_document.uri)
        lines = server.open_lines(path) if path is not None else None
        if path is None or lines is None:
            return []
        ours = [d for d in params.context.diagnostics if d.source == SOURCE and isinstance(d.code, str)]
        if not ours:
            return []
        torch = await selected_torch(server)
        summary = server.analysis.summary(path)
        return [action for d in ours for action in actions_for(d, path, lines, summary, torch, server.lines_of)]


def actions_for(
    diagnostic: types.Diagnostic,
    path: str,
    lines: Sequence[str],
    summary: FileSummary | None,
    torch: TorchVersion,
    lines_of: LinesOf,
) -> list[types.CodeAction]:
    """The quick fixes for one diagnostic: "Mark module dynamic" first, then the finding's fixes, then suppression."""
    line, column = from_lsp_position(lines, diagnostic.range.start)
    fixes: list[Fix] = []
    if diagnostic.code in MARK_DYNAMIC_CODES and summary is not None:
        dynamic = mark_module_dynamic(path, lines, summary, line, column, torch)
        fixes += [dynamic] if dynamic is not None else []
    fixes += applicable(fixes_from_data(diagnostic.data), torch)
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


def applicable(fixes: Sequence[Fix], torch: TorchVersion) -> list[Fix]:
    return [fix for fix in fixes if in_range(torch, fix.min_torch, fix.max_torch)]


def mark_module_dynamic(
    path: str, lines: Sequence[str], summary: FileSummary, line: int, column: int, torch: TorchVersion
) -> Fix | None:
    """The version-aware "Mark module dynamic" fix for a hazard at 1-based ``line``/``column``, or None."""
    cls = _enclosing_class(summary, line)
    if cls is None:
        return None
    name = cls.qualname.rpartition(".")[2]
    if torch < MODULES_DYNAMIC_SINCE:
        return _force_dynamic(path, lines, cls, name, torch)
    attr = _SELF_ATTR.search(_line(lines, line)[column - 1 :])
    init = cls.init_attr(attr.group("name")) if attr is not None else None
    if init is not None and init.kind not in ("int", "unknown"):
        return None  # the flag only makes int attributes dynamic
    if any(UNSPEC_INT_FLAG in text for text in lines):
        return None
    insert_at = _after_imports(lines)
    title = (
        f"Mark module dynamic: `{name}` is already dynamic on torch {torch[0]}.{torch[1]}; "
        f"make its int attributes dynamic (`allow_unspec_int_on_nn_module = True`)"
    )
    edit = Edit(Span(path, insert_at, 1, insert_at, 1), UNSPEC_INT_FLAG + "\n")
    return Fix(title=title, edits=(edit,), safe=False, min_torch="2.5")


def _force_dynamic(path: str, lines: Sequence[str], cls: ClassSummary, name: str, torch: TorchVersion) -> Fix | None:
    init = cls.method("__init__")
    if cls.init_attrs:
        after = cls.init_attrs[0].statement
        indent = _indent(_line(lines, after.line))
        at = after.end_line + 1
    elif init is not None:
        indent = _indent(_line(lines, init.span.line)) + "    "
        at = init.span.line + 1
    else:
        return None
    edit = Edit(Span(path, at, 1, at, 1), f"{indent}self.torchdynamo_force_dynamic = True\n")
    version = f"{torch[0]}.{torch[1]}"
    title = f"Mark module dynamic: set `self.torchdynamo_force_dynamic = True` in `{name}.__init__` (torch {version})"
    return Fix(title=title, edits=(edit,), safe=False, max_torch="2.4")


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


def _enclosing_class(summary: FileSummary, line: int) -> ClassSummary | None:
    before = [c for c in summary.classes if c.span.line <= line]
    return max(before, key=lambda c: c.span.line, default=None)


def _after_imports(lines: Sequence[str]) -> int:
    """1-based line after the last top-level import of the file's import block (1 when there is none)."""
    last = 0
    for index, text in enumerate(lines, start=1):
        if _IMPORT.match(text):
            last = index
        elif text.strip() and not text.startswith("#") and last and not text[:1].isspace() and not text.startswith(")"):
            break
    return last + 1 if last else 1


def _line(lines: Sequence[str], line: int) -> str:
    return lines[line - 1].rstrip("\r\n") if 0 < line <= len(lines) else ""


def _indent(text: str) -> str:
    return text[: len(text) - len(text.lstrip())]
