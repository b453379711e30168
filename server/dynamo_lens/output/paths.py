"""Display paths: relative to the working directory when below it (like ruff), else absolute."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from dynamo_lens.model import Edit, Finding, Related, Span


def display_path(path: str, cwd: Path) -> str:
    """``path`` relative to ``cwd`` with ``/`` separators when it lies below ``cwd``; otherwise unchanged."""
    base = str(cwd)
    prefix = base if base.endswith(os.sep) else base + os.sep
    if path.startswith(prefix):
        path = path[len(prefix) :]
    return path.replace(os.sep, "/") if os.sep != "/" else path


def relative_finding(finding: Finding, cwd: Path) -> Finding:
    """``finding`` with every path (its span, related locations, fix edits) made a display path."""

    def span(s: Span) -> Span:
        return replace(s, path=display_path(s.path, cwd))

    return replace(
        finding,
        span=span(finding.span),
        related=tuple(Related(span(r.span), r.message) for r in finding.related),
        fixes=tuple(
            replace(fix, edits=tuple(Edit(span(e.span), e.new_text) for e in fix.edits)) for fix in finding.fixes
        ),
    )
