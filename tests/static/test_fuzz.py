"""Property tests: whatever text the editor sends while the user types, ``summarize`` and ``link`` never raise, the
summaries are deterministic and picklable, ``link`` does not depend on the order of the files, and every finding
points inside the text it came from."""

from __future__ import annotations

import pickle
import random
from collections.abc import Sequence

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sources import CORPUS, FIXTURE_TEXTS, FIXTURES, TOKENS, edit_a_line

from dynamo_lens.model import Finding
from dynamo_lens.static import FileSummary, link, summarize


def check_never_raises(texts: Sequence[str]) -> list[Finding]:
    summaries = [summarize(f"/ws/file{i}.py", text) for i, text in enumerate(texts)]
    for summary in summaries:
        assert isinstance(summary, FileSummary)
        assert pickle.loads(pickle.dumps(summary)) == summary
    assert [summarize(f"/ws/file{i}.py", text) for i, text in enumerate(texts)] == summaries  # deterministic
    findings = link(summaries)
    assert link(summaries[::-1]) == findings  # the editor hands files over in any order
    lines = {f"/ws/file{i}.py": max(1, len(text.splitlines())) for i, text in enumerate(texts)}
    for finding in findings:
        span = finding.span
        assert span.path in lines, finding
        assert 1 <= span.line <= span.end_line <= lines[span.path] + 1, finding
        assert span.column >= 1 and span.end_column >= 1, finding
    return findings


@st.composite
def corpus_slices(draw: st.DrawFn) -> str:
    """A window of a fixture or of a real torch module, cut anywhere (mid-token, mid-line, mid-indentation)."""
    text = draw(st.sampled_from(CORPUS))
    start = draw(st.integers(0, len(text)))
    length = draw(st.integers(0, 4000))
    return text[start : start + length]


@st.composite
def mutated_fixtures(draw: st.DrawFn) -> str:
    """A fixture with lines deleted, duplicated, re-indented or spliced with tokens: half-typed edits."""
    lines = draw(st.sampled_from(FIXTURE_TEXTS)).splitlines(keepends=True)
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    for _ in range(draw(st.integers(1, 6))):
        if not lines:
            break
        edit_a_line(lines, rng)
    return "".join(lines)


token_soup = st.lists(st.sampled_from(TOKENS), max_size=120).map(" ".join)
raw_bytes = st.binary(max_size=2000).map(lambda b: b.decode("utf-8", "surrogateescape"))
latin1_bytes = st.binary(max_size=2000).map(lambda b: b.decode("latin-1"))
any_text = st.one_of(corpus_slices(), mutated_fixtures(), token_soup, raw_bytes, latin1_bytes, st.text(max_size=500))

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(corpus_slices())
def test_truncated_sources(text: str) -> None:
    check_never_raises([text])


@FUZZ
@given(mutated_fixtures())
def test_half_edited_fixtures(text: str) -> None:
    check_never_raises([text])


@FUZZ
@given(token_soup)
def test_token_soup(text: str) -> None:
    check_never_raises([text])


@FUZZ
@given(st.one_of(raw_bytes, latin1_bytes))
def test_undecodable_bytes(text: str) -> None:
    check_never_raises([text])


@FUZZ
@given(st.lists(any_text, min_size=2, max_size=5))
def test_workspaces_of_broken_files(texts: list[str]) -> None:
    """Cross-file linking over any mixture of broken and valid files."""
    check_never_raises([*texts, FIXTURE_TEXTS[0]])


@FUZZ
@given(
    st.sampled_from(("(", "[", "-", "not ", "a + ", "a.b", "f(", "x[0]", "lambda: ", "{1: ")),
    st.integers(1, 4000),
)
def test_deep_nesting(piece: str, depth: int) -> None:
    closing = {"(": ")", "[": "]", "f(": ")", "{1: ": "}"}.get(piece, "")
    body = piece * depth + "x" + closing * depth
    text = f"import torch\n\n@torch.compile\ndef f(x):\n    return {body}\n"
    check_never_raises([text])


FIXTURE_SUMMARIES = [summarize(str(p), p.read_text(encoding="utf-8")) for p in sorted(FIXTURES.rglob("*.py"))]
FIXTURE_FINDINGS = link(FIXTURE_SUMMARIES)


@settings(max_examples=25, deadline=None)
@given(st.permutations(FIXTURE_SUMMARIES))
def test_link_does_not_depend_on_file_order(summaries: list[FileSummary]) -> None:
    """Every fixture (single files and multi-file cases, with same-named modules in different folders) linked as one
    workspace, in any order."""
    assert link(summaries) == FIXTURE_FINDINGS
