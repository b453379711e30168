"""A stand-in for `dynamo_lens.static` in the pipeline tests (see conftest.py)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from dynamo_lens.model import Finding, Severity, Span
from dynamo_lens.static.summary import Candidate, FileSummary

MARK = "MARK"
"""Reported as a DL101 warning; ``HINT`` is reported as a DL001 hint."""
HINT = "HINT"


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
            for word, code in ((MARK, "DL101"), (HINT, "DL001")):
                column = line.find(word) + 1
                if column:
                    marks.append(Candidate(code, Span(path, number, column, number, column + len(word))))
        return FileSummary(path, candidates=tuple(marks))

    def link(self, summaries: Sequence[FileSummary], linker: object = None) -> list[Finding]:
        self.linked += 1
        return [
            Finding(
                code=c.code,
                severity=Severity.HINT if c.code == "DL001" else Severity.WARNING,
                span=c.span,
                message=f"marked in {Path(s.path).name}",
            )
            for s in summaries
            for c in s.candidates
        ]
