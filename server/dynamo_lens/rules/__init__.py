"""The finding catalogue: one module per code, discovered automatically.

Every module in this package named ``dlNNN_<name>.py`` defines ``RULE = Rule(...)`` and documents the finding in its
module docstring under fixed headings (see :data:`DOC_HEADINGS`). That docstring is the single source for
``dynamo-lens explain CODE``, the hover text in the editor and the generated docs; nothing restates it.

To add a code: copy a sibling module, pick the next free number in its family, write the docstring under every
heading, and add positive and negative fixtures under ``tests/fixtures/static/`` (or a runtime test).
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from functools import cache
from typing import Literal

from dynamo_lens.model import Severity

DOC_HEADINGS = (
    "## What it does",
    "## Why it matters",
    "## Example",
    "## Use instead",
    "## Known limitations",
    "## Fix safety",
    "## References",
)

TORCH_VERSION_ASSUMED = "2.13"
"""The torch release whose behaviour the messages describe (measured on 2.13.0, CPU, backend="eager")."""


@dataclass(frozen=True, slots=True)
class Rule:
    """What stays the same for every finding of one code."""

    code: str
    """Stable identifier, e.g. ``DL101``. Never reused for another meaning."""
    name: str
    """kebab-case name of the *pattern* it flags (ruff's convention), e.g. ``scalar-attr-mutated-in-forward``."""
    summary: str
    """One line: what was found, without the specifics of one occurrence."""
    default_severity: Severity
    """Severity when the code is reached by a compile site; unreached code is downgraded to a hint."""
    source: Literal["static", "runtime"]
    docs_url: str
    """The most relevant public page (PyTorch docs, graph-break registry, tracking issue)."""
    fix_title: str | None = None
    """Imperative title of the main quick fix, if the code has one."""
    explanation: str = ""
    """The module docstring, filled in by :func:`all_rules`."""


@cache
def all_rules() -> dict[str, Rule]:
    """Every rule, keyed by code, in code order."""
    import dynamo_lens.rules as package

    rules: dict[str, Rule] = {}
    for info in pkgutil.iter_modules(package.__path__):
        if not info.name.startswith("dl"):
            continue
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        rule: Rule = module.RULE
        doc = (module.__doc__ or "").strip()
        if rule.code in rules:
            raise RuntimeError(f"duplicate rule code {rule.code} in {info.name}")
        rules[rule.code] = Rule(
            code=rule.code,
            name=rule.name,
            summary=rule.summary,
            default_severity=rule.default_severity,
            source=rule.source,
            docs_url=rule.docs_url,
            fix_title=rule.fix_title,
            explanation=doc,
        )
    return dict(sorted(rules.items()))


def get_rule(code: str) -> Rule | None:
    """The rule for ``code`` (case-insensitive), or None for an unknown code."""
    return all_rules().get(code.strip().upper())
