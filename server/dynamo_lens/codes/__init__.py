"""The finding catalogue: one module per code, discovered automatically.

Each code has one home, ``codes/dlNNN_<name>.py``, which holds everything about it:

* the documentation, as the module docstring under fixed headings (:data:`DOC_HEADINGS`): the single source for
  ``dynamo-lens explain CODE``, the hover text in the editor and the generated ``docs/rules.md``;
* ``RULE = Rule(...)``: code, name, one-line summary, severity, docs link, fix title, and the run codes that confirm
  a static prediction;
* for a static code, the detector: ``CHECK = Check(...)``, functions that ask the semantic layer
  (``dynamo_lens.static.semantic``) and build findings; the torch facts a message quotes come from
  ``dynamo_lens.torch_facts``.

Runtime codes (DL5xx) document what a run reports; ``dynamo_lens.runtime.attribution`` produces them. The recipe for
adding a code is in CONTRIBUTING.md.
"""

from __future__ import annotations

import importlib
import logging
import pkgutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from functools import cache
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal

from dynamo_lens.model import Severity

if TYPE_CHECKING:
    from dynamo_lens.model import Finding
    from dynamo_lens.static.context import FileContext
    from dynamo_lens.static.semantic.index import WorkspaceIndex
    from dynamo_lens.static.summary import Candidate

DOC_HEADINGS = (
    "## What it does",
    "## Why it matters",
    "## Example",
    "## Use instead",
    "## Known limitations",
    "## Fix safety",
    "## References",
)


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
    confirmed_by: tuple[str, ...] = ()
    """Runtime codes whose observation confirms a static finding of this code (a recompile, a graph break)."""
    explanation: str = ""
    """The module docstring, filled in by :func:`all_rules`."""


@dataclass(frozen=True, slots=True)
class Check:
    """The functions the static analyzer calls for one code. Every function is optional.

    ``collect`` runs per file while it is summarised (AST available, in a worker process) and records plain,
    picklable candidates; ``judge`` runs at link time once per candidate of this code, with the workspace's semantic
    model; ``judge_workspace`` runs once per link for checks that look at the workspace as a whole.
    """

    code: str
    collect: Callable[[FileContext], Iterable[Candidate]] | None = None
    judge: Callable[[Any, WorkspaceIndex], Iterable[Finding]] | None = None
    """Called once per candidate of this code (typed ``Any`` so a check can annotate its own Candidate subclass)."""
    judge_workspace: Callable[[WorkspaceIndex], Iterable[Finding]] | None = None
    judged_locally: bool = False
    """``judge`` reads nothing but what the candidate's file reaches through its names and where compile sites
    reach (``sites_for_*``, ``compiled_binding``): the editor then keeps a file's findings from one link to the next
    while neither changed (:meth:`WorkspaceIndex.carried`)."""
    reads_workspace: Callable[[Any, WorkspaceIndex], bool] | None = None
    """For a check ``judged_locally``: whether ``judge`` also reads, for this candidate, facts from anywhere in the
    workspace (a Dynamo setting made in another program's file); such candidates are judged afresh at every link."""


def _code_modules() -> list[ModuleType]:
    import dynamo_lens.codes as package

    modules: list[ModuleType] = []
    for info in pkgutil.iter_modules(package.__path__):
        if info.name.startswith("dl"):
            modules.append(importlib.import_module(f"{package.__name__}.{info.name}"))
    return modules


@cache
def all_rules() -> dict[str, Rule]:
    """Every rule, keyed by code, in code order."""
    rules: dict[str, Rule] = {}
    for module in _code_modules():
        rule: Rule = module.RULE
        if rule.code in rules:
            raise RuntimeError(f"duplicate rule code {rule.code} in {module.__name__}")
        rules[rule.code] = replace(rule, explanation=(module.__doc__ or "").strip())
    return dict(sorted(rules.items()))


def get_rule(code: str) -> Rule | None:
    """The rule for ``code`` (case-insensitive), or None for an unknown code."""
    return all_rules().get(code.strip().upper())


@cache
def all_checks() -> tuple[Check, ...]:
    """Every static check, in code order. A code module that fails to import is logged and left out, so that one
    broken check never takes the others down."""
    import dynamo_lens.codes as package

    checks: dict[str, Check] = {}
    for info in pkgutil.iter_modules(package.__path__):
        if not info.name.startswith("dl"):
            continue
        try:
            module = importlib.import_module(f"{package.__name__}.{info.name}")
        except Exception:
            logging.getLogger(__name__).exception("cannot load code module %s", info.name)
            continue
        check: Check | None = getattr(module, "CHECK", None)
        if check is not None:
            checks[check.code] = check
    return tuple(checks[code] for code in sorted(checks))


@cache
def checks_by_code() -> dict[str, Check]:
    return {check.code: check for check in all_checks()}


@cache
def confirmations() -> dict[str, frozenset[str]]:
    """Runtime code → the static codes whose findings it can confirm (from each rule's ``confirmed_by``)."""
    found: dict[str, set[str]] = {}
    for rule in all_rules().values():
        for runtime_code in rule.confirmed_by:
            found.setdefault(runtime_code, set()).add(rule.code)
    return {code: frozenset(codes) for code, codes in found.items()}
