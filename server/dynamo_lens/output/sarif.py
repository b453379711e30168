"""``--format sarif``: SARIF 2.1.0 as GitHub code scanning reads it.

One run whose ``tool.driver.rules`` is the whole catalogue (id, kebab-case name, descriptions, help text and link,
default level); one result per finding with its rule, level, message, a 1-based region (``endColumn`` exclusive,
columns counted in Unicode code points), the related locations, the fixes, and a ``partialFingerprints`` entry
that survives lines moving. Paths below the working directory are relative to ``%SRCROOT%``; files that could not
be analysed become tool execution notifications.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from dynamo_lens import __version__
from dynamo_lens.codes import Rule, all_rules
from dynamo_lens.model import Finding, Severity, Span
from dynamo_lens.output.paths import display_path, relative_finding
from dynamo_lens.scan_sources import FileProblem

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
SOURCE_ROOT = "%SRCROOT%"
INFORMATION_URI = "https://github.com/dynamo-lens/dynamo-lens"
FINGERPRINT_KEY = "dynamoLens/v1"

MAX_DESCRIPTION = 1000
"""GitHub code scanning rejects rule descriptions longer than 1,024 characters."""

LEVELS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note", Severity.HINT: "note"}


def render_sarif(findings: Sequence[Finding], problems: Sequence[FileProblem], cwd: Path) -> str:
    return json.dumps(sarif_log(findings, problems, cwd), indent=2) + "\n"


def sarif_log(findings: Sequence[Finding], problems: Sequence[FileProblem], cwd: Path) -> dict[str, Any]:
    rules = list(all_rules().values())
    index = {rule.code: i for i, rule in enumerate(rules)}
    shown = sorted((relative_finding(f, cwd) for f in findings), key=Finding.sort_key)
    return {
        "$schema": SARIF_SCHEMA_URI,
        "version": SARIF_VERSION,
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "dynamo-lens",
                        "version": __version__,
                        "semanticVersion": __version__,
                        "informationUri": INFORMATION_URI,
                        "rules": [_rule(rule) for rule in rules],
                    }
                },
                "originalUriBaseIds": {SOURCE_ROOT: {"uri": cwd.absolute().as_uri() + "/"}},
                "columnKind": "unicodeCodePoints",
                "invocations": [
                    {
                        "executionSuccessful": True,
                        "toolExecutionNotifications": [_notification(p, cwd) for p in problems],
                    }
                ],
                "results": [_result(f, index) for f in shown],
            }
        ],
    }


def _rule(rule: Rule) -> dict[str, Any]:
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": _section(rule.explanation, "## What it does") or rule.summary},
        "helpUri": rule.docs_url,
        "help": {"text": rule.explanation or rule.summary, "markdown": rule.explanation or rule.summary},
        "defaultConfiguration": {"level": LEVELS[rule.default_severity]},
        "properties": {"tags": ["torch.compile", rule.source]},
    }


def _result(finding: Finding, rule_index: dict[str, int]) -> dict[str, Any]:
    result: dict[str, Any] = {
        "ruleId": finding.code,
        "level": LEVELS[finding.severity],
        "message": {"text": finding.message},
        "locations": [{"physicalLocation": _physical(finding.span)}],
        "partialFingerprints": {FINGERPRINT_KEY: _fingerprint(finding)},
    }
    if finding.code in rule_index:
        result["ruleIndex"] = rule_index[finding.code]
    if finding.related:
        result["relatedLocations"] = [
            {"id": i, "physicalLocation": _physical(r.span), "message": {"text": r.message}}
            for i, r in enumerate(finding.related, start=1)
        ]
    if finding.fixes:
        result["fixes"] = [
            {
                "description": {"text": fix.title},
                "artifactChanges": [
                    {
                        "artifactLocation": _artifact(edit.span.path),
                        "replacements": [
                            {
                                "deletedRegion": _region(edit.span, allow_empty=True),
                                "insertedContent": {"text": edit.new_text},
                            }
                        ],
                    }
                    for edit in fix.edits
                ],
            }
            for fix in finding.fixes
            if fix.edits
        ]
    return result


def _notification(problem: FileProblem, cwd: Path) -> dict[str, Any]:
    physical: dict[str, Any] = {"artifactLocation": _artifact(display_path(problem.path, cwd))}
    if problem.line is not None:
        physical["region"] = {"startLine": problem.line, "startColumn": problem.column or 1}
    if problem.cell is not None:
        physical["properties"] = {"cell": problem.cell.to_json()}
    return {"level": "warning", "message": {"text": problem.message}, "locations": [{"physicalLocation": physical}]}


def _physical(span: Span) -> dict[str, Any]:
    """The location; in a notebook, lines count within the cell that ``properties.cell`` names (its 0-based index among
    the notebook's cells)."""
    physical: dict[str, Any] = {"artifactLocation": _artifact(span.path), "region": _region(span)}
    if span.cell is not None:
        physical["properties"] = {"cell": span.cell.to_json()}
    return physical


def _artifact(path: str) -> dict[str, Any]:
    if Path(path).is_absolute():
        return {"uri": Path(path).as_uri()}
    return {"uri": quote(path), "uriBaseId": SOURCE_ROOT}


def _region(span: Span, *, allow_empty: bool = False) -> dict[str, int]:
    """A SARIF region; a result's region is widened to one character when the span is empty or inverted."""
    end = (span.end_line, span.end_column)
    if end < (span.line, span.column) or (end == (span.line, span.column) and not allow_empty):
        end = (span.line, span.column + 1)
    return {"startLine": span.line, "startColumn": span.column, "endLine": end[0], "endColumn": end[1]}


def _fingerprint(finding: Finding) -> str:
    """Stable when lines move: the code, the file, and the message without digits (which carry line numbers)."""
    text = re.sub(r"\d+", "#", finding.message)
    return hashlib.sha256(f"{finding.code}\0{finding.span.path}\0{text}".encode()).hexdigest()[:32]


def _section(explanation: str, heading: str) -> str:
    """The text under ``heading`` in a rule's docstring, up to the next heading."""
    start = explanation.find(heading)
    if start < 0:
        return ""
    body = explanation[start + len(heading) :]
    end = body.find("\n## ")
    text = " ".join((body if end < 0 else body[:end]).split())
    return text if len(text) <= MAX_DESCRIPTION else text[: MAX_DESCRIPTION - 1].rstrip() + "…"
