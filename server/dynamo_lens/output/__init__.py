"""Renderers for ``check`` results: ruff-like text, the findings JSON document, and SARIF 2.1.0.

Each renderer is a pure function from findings (absolute paths) and the directory paths are shown relative to, to
the text written on stdout. Per-file problems are shown by :func:`dynamo_lens.output.text.render_problem` on stderr
(SARIF also carries them as tool execution notifications).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:  # the renderers load on first use: `dynamo-lens serve` builds the CLI's parser, not its output
    from dynamo_lens.model import Finding
    from dynamo_lens.scan_sources import FileProblem

OutputFormat = Literal["text", "json", "sarif"]
FORMATS: tuple[OutputFormat, ...] = ("text", "json", "sarif")


def render(
    output_format: OutputFormat,
    findings: Sequence[Finding],
    problems: Sequence[FileProblem],
    files: int,
    cwd: Path,
    hidden_hints: int = 0,
) -> str:
    """The stdout text of ``check --format output_format`` (``hidden_hints`` is mentioned in the text summary)."""
    from dynamo_lens.output.json_document import render_json
    from dynamo_lens.output.sarif import render_sarif
    from dynamo_lens.output.text import render_text

    if output_format == "json":
        return render_json(findings, cwd)
    if output_format == "sarif":
        return render_sarif(findings, problems, cwd)
    return render_text(findings, files, cwd, hidden_hints, problems)
