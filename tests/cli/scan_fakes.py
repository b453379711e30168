"""A stand-in for `dynamo_lens.static` in the pipeline tests (see conftest.py)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from dynamo_lens.model import Finding, Severity, Span
from dynamo_lens.static.summary import Candidate, FileSummary

MARK = "MARK"


@dataclass
class FakeAnalyzer:
    summarized: list[str] = field(default_factory=list)
    linked: int = 0

    def summarize(self, path: str, text: str) -> FileSummary:
        self.summarized.append(path)
        try:
            compile(text, path, "exec", dont_inherit=True)
        except SyntaxError as exc:
            return FileSummary(path, error=f"SyntaxError: {exc.msg} (line {exc.lineno})")
        marks = []
        for number, line in enumerate(text.splitlines(), start=1):
            column = line.find(MARK) + 1
            if column:
                marks.append(Candidate("DL101", Span(path, number, column, number, column + len(MARK))))
        return FileSummary(path, candidates=tuple(marks))

    def link(self, summaries: Sequence[FileSummary]) -> list[Finding]:
        self.linked += 1
        return [
            Finding(code=c.code, severity=Severity.WARNING, span=c.span, message=f"marked in {Path(s.path).name}")
            for s in summaries
            for c in s.candidates
        ]
