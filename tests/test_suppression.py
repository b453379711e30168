"""Suppression comments: `# dynamo-lens: ignore[...]` on a finding's first line."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dynamo_lens.model import Finding, Severity, Span
from dynamo_lens.suppression import find_suppressions, is_suppressed, unsuppressed

SOURCE = """\
class M:
    def forward(self, x):
        self.steps += 1  # dynamo-lens: ignore[DL101]
        self.a += 1  # dynamo-lens: ignore[DL101, dl203]
        self.b += 1  # dynamo-lens: ignore
        self.c += 1  #dynamo-lens:ignore[DL204]
        self.d += 1  # dynamo-lens: ignored-by-typo
        self.e += 1  # noqa
"""


def _at(line: int, code: str = "DL101", path: str = "m.py") -> Finding:
    return Finding(code=code, severity=Severity.WARNING, span=Span(path, line, 9, line + 1, 1), message="m")


def test_comments_are_found_by_line() -> None:
    found = find_suppressions(SOURCE)
    assert found == {
        3: frozenset({"DL101"}),
        4: frozenset({"DL101", "DL203"}),
        5: frozenset(),
        6: frozenset({"DL204"}),
    }


@pytest.mark.parametrize(
    ("line", "code", "silenced"),
    [
        pytest.param(3, "DL101", True, id="listed code"),
        pytest.param(3, "DL102", False, id="other code on the same line"),
        pytest.param(4, "DL203", True, id="second code of a list"),
        pytest.param(5, "DL301", True, id="bare ignore silences every code"),
        pytest.param(6, "DL204", True, id="no spaces"),
        pytest.param(7, "DL101", False, id="not an ignore comment"),
        pytest.param(8, "DL101", False, id="noqa is not ours"),
        pytest.param(2, "DL101", False, id="line without comment"),
    ],
)
def test_is_suppressed(line: int, code: str, silenced: bool) -> None:
    assert is_suppressed(_at(line, code), find_suppressions(SOURCE)) is silenced


def test_only_the_first_line_of_a_finding_counts() -> None:
    # A finding spanning lines 2-3 is not silenced by a comment on line 3.
    finding = Finding(code="DL101", severity=Severity.WARNING, span=Span("m.py", 2, 5, 3, 20), message="m")
    assert not is_suppressed(finding, find_suppressions(SOURCE))


def test_file_without_marker_has_no_suppressions() -> None:
    assert find_suppressions("x = 1  # type: ignore\n") == {}


def test_unsuppressed_uses_each_files_own_comments() -> None:
    by_path = {"a.py": find_suppressions(SOURCE)}
    kept = unsuppressed([_at(3, path="a.py"), _at(3, path="b.py")], by_path)
    assert [f.path for f in kept] == ["b.py"]


@given(st.text())
def test_any_text_is_accepted(text: str) -> None:
    found = find_suppressions(text)
    assert all(line >= 1 for line in found)


@given(st.lists(st.from_regex(r"DL[0-9]{3}", fullmatch=True), min_size=1, max_size=4), st.text(alphabet="x =1+"))
def test_listed_codes_round_trip(codes: list[str], code_text: str) -> None:
    line = f"{code_text}  # dynamo-lens: ignore[{', '.join(codes)}]"
    assert find_suppressions("pass\n" + line + "\n") == {2: frozenset(codes)}


def test_form_feed_does_not_shift_lines() -> None:
    # Python counts only \n (and \r\n, \r) as line ends; a form feed must not create an extra line.
    text = "x = 1\n\x0c\ny = 2  # dynamo-lens: ignore\n"
    assert find_suppressions(text) == {3: frozenset()}
    assert find_suppressions("a = 1 \x0c b = 2\nc  # dynamo-lens: ignore\n") == {2: frozenset()}
