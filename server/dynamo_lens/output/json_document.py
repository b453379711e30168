"""``check --format json``: the ``dynamo-lens.findings`` v1 document (DESIGN.md §2), with display paths."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from dynamo_lens.model import Finding, findings_document
from dynamo_lens.output.paths import relative_finding


def render_json(findings: Sequence[Finding], cwd: Path) -> str:
    return json.dumps(findings_document(relative_finding(f, cwd) for f in findings), indent=2) + "\n"
