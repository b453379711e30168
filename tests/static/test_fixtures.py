"""Every fixture under ``tests/fixtures/static`` produces exactly the findings marked in it (code AND line).

A fixture is a file ``DLNNN*.py`` or a directory ``DLNNN*/`` (a multi-file workspace; paths are relative to it).
Expected findings are marked with a trailing comment on the line where they start::

    self.steps += 1  # DL101
    self.steps += 1  # DL101:9            the column is asserted too (1-based, characters)
    self.steps += 1  # DL101[hint]        the severity is asserted too
    x = 1  # DL101:5[info] DL103          several marks on one line

Only the codes the fixture is about are compared: the code in its name and every code marked anywhere in it, so a
fixture for one check never breaks because another check found something else. Comment-only lines are prose: a
header such as ``# Allow: DL101 stays silent on ...`` is never a mark.
"""

from __future__ import annotations

import io
import logging
import re
import tokenize
from dataclasses import dataclass
from pathlib import Path

import pytest

from dynamo_lens.model import Finding
from dynamo_lens.static import link, summarize

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "static"
CASE_NAME = re.compile(r"^(DL\d{3})")
MARK = re.compile(r"\b(DL\d{3})(?::(\d+))?(?:\[(\w+)\])?")


@dataclass(frozen=True)
class Mark:
    path: str
    line: int
    code: str
    column: int | None
    severity: str | None


def fixture_cases() -> list[Path]:
    if not FIXTURES.is_dir():
        return []
    return sorted(p for p in FIXTURES.iterdir() if CASE_NAME.match(p.name) and (p.is_dir() or p.suffix == ".py"))


def case_files(case: Path) -> dict[str, str]:
    """Relative posix path → text of every Python file of the case."""
    if case.is_file():
        return {case.name: case.read_text(encoding="utf-8")}
    return {p.relative_to(case).as_posix(): p.read_text(encoding="utf-8") for p in sorted(case.rglob("*.py"))}


def trailing_comments(text: str) -> list[tuple[int, str]]:
    """(line, comment) for each comment that follows code on its line."""
    found: list[tuple[int, str]] = []
    code_lines: set[int] = set()
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING}
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT:
                if token.start[0] in code_lines:
                    found.append((token.start[0], token.string))
            elif token.type not in skip:
                code_lines.update(range(token.start[0], token.end[0] + 1))
    except (tokenize.TokenError, SyntaxError):  # a fixture that is deliberately broken: fall back to a line scan
        found = [
            (n, line[line.index("#") :])
            for n, line in enumerate(text.splitlines(), 1)
            if line.split("#")[0].strip() and "#" in line
        ]
    return found


def expected_marks(files: dict[str, str]) -> list[Mark]:
    marks: list[Mark] = []
    for path, text in files.items():
        for line, comment in trailing_comments(text):
            for code, column, severity in MARK.findall(comment):
                marks.append(Mark(path, line, code, int(column) if column else None, severity or None))
    return marks


def run_case(files: dict[str, str]) -> list[Finding]:
    return link([summarize(path, text) for path, text in files.items()])


CASES = fixture_cases()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_fixture(case: Path, caplog: pytest.LogCaptureFixture) -> None:
    files = case_files(case)
    marks = expected_marks(files)
    codes = {m.code for m in marks} | {CASE_NAME.match(case.name).group(1)}  # type: ignore[union-attr]
    with caplog.at_level(logging.ERROR, logger="dynamo_lens"):
        findings = [f for f in run_case(files) if f.code in codes]
    raised = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert not [m for m in raised if any(code in m.upper() for code in codes)], f"a check raised: {raised}"

    got = sorted({(f.path, f.span.line, f.code) for f in findings})
    want = sorted({(m.path, m.line, m.code) for m in marks})
    rendered = "\n".join(
        f"  {f.path}:{f.span.line}:{f.span.column}: {f.code} [{f.severity.value}] {f.message}" for f in findings
    )
    assert got == want, f"findings differ from the marks; the analyzer said:\n{rendered}"
    for mark in marks:
        at = [f for f in findings if (f.path, f.span.line, f.code) == (mark.path, mark.line, mark.code)]
        if mark.column is not None:
            assert mark.column in {f.span.column for f in at}, f"{mark}: columns {[f.span.column for f in at]}"
        if mark.severity is not None:
            assert mark.severity in {f.severity.value for f in at}, (
                f"{mark}: severities {[f.severity.value for f in at]}"
            )


def test_there_are_fixtures() -> None:
    assert CASES, f"no fixtures found under {FIXTURES}"


def test_every_check_loads_and_collects_without_raising(caplog: pytest.LogCaptureFixture) -> None:
    """A broken check is skipped at run time (the others still run); here it fails loudly."""
    from dynamo_lens.codes import all_checks

    all_checks.cache_clear()
    with caplog.at_level(logging.ERROR, logger="dynamo_lens"):
        assert all_checks()
        for case in CASES:
            run_case(case_files(case))
    assert not [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
