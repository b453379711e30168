"""ruff-like text: ``path:line:col: CODE message``, sorted, related locations indented, then a summary line."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from dynamo_lens.model import Finding, Severity
from dynamo_lens.output.paths import display_path, relative_finding
from dynamo_lens.scan_sources import FileProblem


def render_text(findings: Sequence[Finding], files: int, cwd: Path, hidden_hints: int = 0) -> str:
    lines: list[str] = []
    for finding in sorted((relative_finding(f, cwd) for f in findings), key=Finding.sort_key):
        span = finding.span
        lines.append(f"{span.path}:{span.line}:{span.column}: {finding.code} {finding.message}")
        for related in finding.related:
            where = related.span
            lines.append(f"    {where.path}:{where.line}:{where.column}: {related.message}")
    lines.append(summary_line(findings, files, hidden_hints))
    return "\n".join(lines) + "\n"


def summary_line(findings: Sequence[Finding], files: int, hidden_hints: int = 0) -> str:
    """``Found 3 findings (2 warnings, 1 hint) in 12 files.`` or ``No findings in 12 files.``, and the hidden hints."""
    checked = _plural(files, "file")
    if findings:
        counts = Counter(f.severity for f in findings)
        parts = [_plural(counts[s], s.value) for s in Severity if counts[s]]
        line = f"Found {_plural(len(findings), 'finding')} ({', '.join(parts)}) in {checked}."
    else:
        line = f"No findings in {checked}."
    if hidden_hints:
        line += f" {_plural(hidden_hints, 'hint')} not shown (--show-hints)."
    return line


def render_problem(problem: FileProblem, cwd: Path) -> str:
    """One stderr line for a file that could not be (fully) analysed."""
    where = display_path(problem.path, cwd)
    if problem.line is not None:
        where += f":{problem.line}" + (f":{problem.column}" if problem.column is not None else "")
    return f"dynamo-lens: {where}: {problem.message}"


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")
