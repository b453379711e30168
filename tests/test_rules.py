"""Every catalogue entry is complete: headings, code/module naming, a docs link (ruff's generate_docs check)."""

from pathlib import Path

import pytest

from dynamo_lens.cli import main
from dynamo_lens.codes import DOC_HEADINGS, Rule, all_rules

RULES = list(all_rules().values())


@pytest.mark.parametrize("rule", RULES, ids=[r.code for r in RULES])
def test_rule_documents_every_heading(rule: Rule) -> None:
    positions = [rule.explanation.find(h) for h in DOC_HEADINGS]
    missing = [h for h, p in zip(DOC_HEADINGS, positions, strict=True) if p < 0]
    assert not missing, f"{rule.code} lacks {missing}"
    assert positions == sorted(positions), f"{rule.code}: headings out of order"
    assert rule.explanation.startswith(f"{rule.code} · {rule.name}")
    assert rule.docs_url.startswith("https://")
    assert rule.summary and "\n" not in rule.summary


def test_explain_prints_the_docstring(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "dl101"]) == 0
    out = capsys.readouterr().out
    assert "## What it does" in out and "DL101" in out


def test_explain_unknown_code_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "DL999"]) == 2
    assert "unknown code" in capsys.readouterr().err


def test_docs_page_is_generated_from_the_docstrings(capsys: pytest.CaptureFixture[str]) -> None:
    """docs/rules.md is what `dynamo-lens explain --format markdown` prints; regenerate it when a docstring changes."""
    assert main(["explain", "--format", "markdown"]) == 0
    generated = capsys.readouterr().out
    committed = (Path(__file__).parent.parent / "docs" / "rules.md").read_text(encoding="utf-8")
    assert committed == generated, "docs/rules.md is stale: run `dynamo-lens explain --format markdown > docs/rules.md`"
