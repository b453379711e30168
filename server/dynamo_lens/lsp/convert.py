"""Findings → LSP objects. The one converter module: nothing else builds a ``Diagnostic`` or a ``WorkspaceEdit``.

A diagnostic carries everything its code actions need in ``Diagnostic.data`` (ruff's habit): the finding's fixes as
findings-JSON v1 fix objects (1-based, character columns), so a code action converts them against the text the
editor has *now* instead of re-running the analysis.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from lsprotocol import types
from pygls.uris import from_fs_path

from dynamo_lens.codes import get_rule
from dynamo_lens.lsp.positions import span_to_range
from dynamo_lens.model import Edit, Finding, Fix, Severity

SOURCE = "dynamo-lens"
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+:")
"""A URI's scheme (two characters at least: ``C:`` starts a Windows path)."""
STALE_NOTE = " (stale: this line changed since the run; re-run to refresh)"

LinesOf = Callable[[str], Sequence[str]]
"""Gives the current lines of a file by path (the editor's text when it is open, else the file on disk)."""

_SEVERITY = {
    Severity.ERROR: types.DiagnosticSeverity.Error,
    Severity.WARNING: types.DiagnosticSeverity.Warning,
    Severity.INFO: types.DiagnosticSeverity.Information,
    Severity.HINT: types.DiagnosticSeverity.Hint,
}


def path_to_uri(path: str) -> str:
    """The ``file:`` URI of ``path``; a document that is no file (a notebook cell) stands for itself by its URI."""
    if _URI.match(path):
        return path
    uri = from_fs_path(path)
    return uri if uri is not None else path


def to_diagnostic(finding: Finding, lines_of: LinesOf, *, stale: bool = False) -> types.Diagnostic:
    """One finding → one diagnostic, positions in UTF-16 against the current text of each file involved."""
    rule = get_rule(finding.code)
    related = [
        types.DiagnosticRelatedInformation(
            location=types.Location(uri=path_to_uri(r.span.path), range=span_to_range(lines_of(r.span.path), r.span)),
            message=r.message,
        )
        for r in finding.related
    ]
    message = finding.message
    confirmed = finding.data.get("confirmed") if finding.source == "static" else None
    if confirmed:
        message += f" (confirmed by the last run: {confirmed})"
    return types.Diagnostic(
        range=span_to_range(lines_of(finding.path), finding.span),
        message=message + (STALE_NOTE if stale else ""),
        severity=_SEVERITY[finding.severity],
        code=finding.code,
        code_description=types.CodeDescription(href=rule.docs_url) if rule is not None else None,
        source=SOURCE,
        related_information=related or None,
        data=diagnostic_data(finding, stale=stale),
    )


def diagnostic_data(finding: Finding, *, stale: bool) -> dict[str, Any]:
    """What code actions read back: the fixes, the finding's facts (``attribute``, ``kind``, ``class`` ...), where it
    came from, and whether it is stale (a stale finding offers no fix: the text it was computed for is gone)."""
    return {
        "origin": finding.source,
        "stale": stale,
        "fixes": [fix.to_json() for fix in finding.fixes],
        "facts": dict(finding.data),
    }


def facts_from_data(data: Any) -> Mapping[str, Any]:
    """The finding's facts stashed by :func:`diagnostic_data` (empty for data some other tool put there)."""
    facts = data.get("facts") if isinstance(data, Mapping) else None
    return facts if isinstance(facts, Mapping) else {}


def fixes_from_data(data: Any) -> list[Fix]:
    """The fixes stashed by :func:`diagnostic_data`; an empty list for data that some other tool put there."""
    if not isinstance(data, Mapping) or data.get("stale"):
        return []
    fixes = []
    for raw in data.get("fixes", ()):
        try:
            fixes.append(Fix.from_json(raw))
        except (KeyError, TypeError, ValueError):
            continue
    return fixes


def to_workspace_edit(edits: Iterable[Edit], lines_of: LinesOf) -> types.WorkspaceEdit:
    """Edits (possibly in several files) → one ``WorkspaceEdit`` keyed by document URI."""
    changes: dict[str, list[types.TextEdit]] = {}
    for edit in edits:
        text_edit = types.TextEdit(range=span_to_range(lines_of(edit.span.path), edit.span), new_text=edit.new_text)
        changes.setdefault(path_to_uri(edit.span.path), []).append(text_edit)
    return types.WorkspaceEdit(changes=changes)
