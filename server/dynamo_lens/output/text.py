"""ruff-like text: ``path:line:col: CODE message``, sorted, related locations indented, then a summary line."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from dynamo_lens.model import Finding, Severity, Span, plural
from dynamo_lens.output.paths import display_path, relative_finding
from dynamo_lens.scan_sources import FileProblem


def render_text(
    findings: Sequence[Finding],
    files: int,
    cwd: Path,
    hidden_hints: int = 0,
    problems: Sequence[FileProblem] = (),
) -> str:
    lines: list[str] = []
    for finding in sorted((relative_finding(f, cwd) for f in findings), key=Finding.sort_key):
        lines.append(f"{_where(finding.span)}: {finding.code} {finding.message}")
        lines.extend(f"    {_where(related.span)}: {related.message}" for related in finding.related)
    lines.append(summary_line(findings, files, hidden_hints, problems))
    return "\n".join(lines) + "\n"


def _where(span: Span) -> str:
    """``path:line:col``, or ``nb.ipynb:cell 3:line:col`` in a notebook (cells counted from 1, top to bottom)."""
    cell = "" if span.cell is None else f"{span.cell.describe()}:"
    return f"{span.path}:{cell}{span.line}:{span.column}"


def summary_line(
    findings: Sequence[Finding], files: int, hidden_hints: int = 0, problems: Sequence[FileProblem] = ()
) -> str:
    """``Found 3 findings (2 warnings, 1 hint) in 12 files.`` or ``No findings in 12 files.``, then the files skipped
    and why, the files analysed only in part, and the hidden hints. ``files`` counts every file found; the skipped
    ones are not counted as checked."""
    skipped = Counter(p.reason for p in problems if p.reason and not p.partial)
    partial = Counter(p.reason for p in problems if p.reason and p.partial)
    checked = plural(files - skipped.total(), "file")
    if findings:
        counts = Counter(f.severity for f in findings)
        parts = [plural(counts[s], s.value) for s in Severity if counts[s]]
        line = f"Found {plural(len(findings), 'finding')} ({', '.join(parts)}) in {checked}."
    else:
        line = f"No findings in {checked}."
    if skipped:
        line += f" {plural(skipped.total(), 'file')} skipped ({_reasons(skipped)})."
    if partial:
        line += f" {plural(partial.total(), 'file')} analysed only in part ({_reasons(partial)})."
    if hidden_hints:
        line += f" {plural(hidden_hints, 'hint')} not shown (--show-hints)."
    return line


def render_problem(problem: FileProblem, cwd: Path) -> str:
    """One stderr line for a file that could not be (fully) analysed."""
    where = display_path(problem.path, cwd)
    if problem.line is not None:
        where += "" if problem.cell is None else f":{problem.cell.describe()}"
        where += f":{problem.line}" + (f":{problem.column}" if problem.column is not None else "")
    return f"dynamo-lens: {where}: {problem.message}"


def _reasons(counts: Counter[str]) -> str:
    """``syntax error`` for one reason, ``2 binary, 1 unreadable`` for several."""
    if len(counts) == 1:
        return next(iter(counts))
    return ", ".join(f"{count} {reason}" for reason, count in sorted(counts.items()))
