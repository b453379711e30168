"""Suppression comments: ``# dynamo-lens: ignore[DL101, DL203]`` or a bare ``# dynamo-lens: ignore``.

A comment silences the findings whose *first* line carries it (like ``# noqa``). Only lines that contain the
marker ``dynamo-lens:`` are looked at, so files without one cost a single substring search.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from dynamo_lens.model import Finding

MARKER = "dynamo-lens:"

_COMMENT = re.compile(r"#\s*dynamo-lens:\s*ignore\b(?:\[(?P<codes>[^\]]*)\])?")

ALL_CODES: frozenset[str] = frozenset()
"""The value stored for a bare ``ignore``: every code on that line is silenced."""

Suppressions = Mapping[int, frozenset[str]]
"""1-based line -> codes silenced on it (:data:`ALL_CODES` for a bare ignore)."""

NO_SUPPRESSIONS: Suppressions = {}
"""Shared empty value for lookups; never mutated."""


def find_suppressions(text: str) -> Suppressions:
    """Every suppression comment in ``text``, by line."""
    if MARKER not in text:
        return {}
    found: dict[int, frozenset[str]] = {}
    # Split on "\n" only: str.splitlines() also breaks on form feeds and other characters Python does not count.
    for number, line in enumerate(text.split("\n"), start=1):
        if MARKER not in line:
            continue
        codes = _line_codes(line)
        if codes is not None:
            found[number] = codes
    return found


def is_suppressed(finding: Finding, suppressions: Suppressions) -> bool:
    """Whether a comment on the finding's first line silences its code."""
    codes = suppressions.get(finding.span.line)
    return codes is not None and (not codes or finding.code in codes)


def unsuppressed(findings: Iterable[Finding], by_path: Mapping[str, Suppressions]) -> list[Finding]:
    """``findings`` without those silenced by a comment in their own file."""
    return [f for f in findings if not is_suppressed(f, by_path.get(f.span.path, NO_SUPPRESSIONS))]


def _line_codes(line: str) -> frozenset[str] | None:
    match = _COMMENT.search(line)
    if match is None:
        return None
    listed = match.group("codes")
    if listed is None:
        return ALL_CODES
    codes = frozenset(code.strip().upper() for code in listed.split(",") if code.strip())
    return codes or ALL_CODES
