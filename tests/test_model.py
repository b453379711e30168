"""The findings JSON contract (DESIGN.md §2): round trip and rejection of other schemas."""

import pytest

from dynamo_lens.model import (
    Edit,
    Finding,
    Fix,
    Related,
    Severity,
    Span,
    findings_document,
    findings_from_document,
)


def _finding() -> Finding:
    return Finding(
        code="DL101",
        severity=Severity.WARNING,
        span=Span("model.py", 11, 9, 11, 24),
        message="`self.steps += 1` in forward",
        related=(Related(Span("train.py", 30, 5, 30, 30), "compiled here"),),
        fixes=(Fix("Keep the counter in a tensor buffer", (Edit(Span("model.py", 1, 1, 1, 1), "x"),)),),
        data={"attribute": "steps"},
    )


def test_document_round_trip() -> None:
    document = findings_document([_finding()])
    assert document["schema"] == "dynamo-lens.findings"
    assert document["version"] == 1
    entry = document["findings"][0]
    assert (entry["path"], entry["line"], entry["column"], entry["end_line"], entry["end_column"]) == (
        "model.py",
        11,
        9,
        11,
        24,
    )
    assert entry["related"][0] == {
        "path": "train.py",
        "line": 30,
        "column": 5,
        "end_line": 30,
        "end_column": 30,
        "message": "compiled here",
    }
    assert findings_from_document(document) == [_finding()]


@pytest.mark.parametrize(
    "document",
    [
        {"schema": "something-else", "version": 1, "findings": []},
        {"schema": "dynamo-lens.findings", "version": 2, "findings": []},
    ],
)
def test_rejects_unknown_documents(document: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        findings_from_document(document)


def test_severity_rank_orders_loudest_first() -> None:
    assert [s.rank for s in Severity] == [0, 1, 2, 3]
