"""Static checks: one module per code, discovered like the rules.

How to write a check (S2a/S2b: this is all you need)
====================================================

Create ``static/checks/dlNNN_<name>.py`` (same name as ``rules/dlNNN_<name>.py``, which holds the docs) with::

    from dynamo_lens.rules.dl201_compile_in_loop import RULE
    from dynamo_lens.static.checks import Check
    from dynamo_lens.static.context import FileContext
    from dynamo_lens.static.index import WorkspaceIndex
    from dynamo_lens.static.summary import Candidate

    @dataclass(frozen=True, slots=True)
    class InLoop(Candidate):          # your per-file facts: plain, picklable, no AST nodes
        scope: str                    # e.g. the enclosing function's qualname

    def collect(ctx: FileContext) -> Iterable[Candidate]:        # per file, AST available, runs in a worker
        for at in ctx.nodes(ast.Call):                           # NodeAt: .node .scope .loop_depth .branch_depth
            ...
            yield InLoop(RULE.code, ctx.span(at.node), at.scope.qualname)

    def judge(candidate: InLoop, index: WorkspaceIndex) -> Iterable[Finding]:   # link time, no AST
        sites = index.sites_for_scope(candidate.span.path, candidate.scope)
        yield index.finding(RULE, candidate.span, "message ...", sites)

    CHECK = Check(RULE.code, collect=collect, judge=judge)

``judge`` receives only the candidates whose ``code`` is yours. A check that needs the whole workspace at once
(rather than one candidate at a time) sets ``judge_workspace=fn(index) -> Iterable[Finding]`` instead.

What ``collect`` gets (``static/context.py``, :class:`FileContext`):
  ``ctx.path``, ``ctx.text``, ``ctx.tree``; ``ctx.nodes(ast.Call, ast.If, ...)``: every statement, Call and Lambda
  with its :class:`Scope` (``qualname`` ``""`` for module level, ``"Model.forward"``; ``kind``; ``params``; ``parent``;
  ``class_name``) and loop/branch depth — never walk the whole tree again; ``ctx.span(node)`` (1-based character
  columns); ``ctx.source(node)``; ``ctx.resolve(expr)`` → absolute dotted name through aliases
  (``"torch.compile"``, ``"torch._dynamo.reset"``) or None; ``ctx.ref(expr, scope)`` → :class:`Ref` (also local
  definitions and relative imports); ``ctx.is_torch_compile(expr)``; ``ctx.compile_sites`` (this file's DL001
  sites, with ``names`` bound to the compiled callable, ``scope``, ``in_loop``, ``options``); ``ctx.torch_name()``;
  ``ctx.name_bindings[name]`` / ``ctx.member_bindings[name]`` / ``ctx.attribute_bindings[attr]``: the assignments
  whose targets bind ``name``, start at ``name`` (``name.x = ...``) or end in ``.attr``; ``ctx.lines.lines``: the
  file's lines as ``ast`` counts them; ``ctx.per_block(key, fn)``: ``fn(nodes)`` per block of top-level statements,
  kept across editor versions while the block and the file's names are unchanged.

What ``judge`` gets (``static/index.py``, :class:`WorkspaceIndex`):
  ``index.finding(rule, span, message, sites, severity=None, related=(), fixes=(), data=None)`` builds the Finding:
  severity is ``severity or rule.default_severity`` when ``sites`` is non-empty, ``hint`` otherwise, and each site
  becomes a "compiled here" related location. Reachability queries (all return tuples of :class:`CompileSite`):
  ``index.sites_for_scope(path, qualname)`` (a function or ``Class.method``: the sites whose compiled code reaches
  it), ``index.sites_for_function((path, qualname))``, ``index.sites_for_method(class_key, name)``,
  ``index.sites_for_class(class_key)`` (compiled instances of it or of a module containing it).
  Names: ``index.compiled_binding(path, scope, name)`` → the site if ``name`` is a compiled callable (or the instance
  that was compiled) in that scope or at module level, following imports; ``index.resolve(path, ref)`` →
  :class:`Symbol` (class / function / instance, in which file); ``index.is_module_class(class_key)``;
  ``index.class_summary(class_key)``; ``index.find_method(class_key, name)``; ``index.mro(class_key)``;
  ``index.init_attr(class_key, attr)``; ``index.submodule_class(class_key, attr)``; ``index.compile_sites()``;
  ``index.compiled_entries(path, site)``; ``index.memo(key, fn)`` to compute a shared analysis once per link;
  ``index.carried(key, path, fn)`` for one that depends only on what the file ``path`` reaches through its names
  (kept from one editor link to the next while none of those files changed). A ``ClassKey`` is ``(path, qualname)``.
  A check whose ``judge`` reads only what the candidate's file reaches and where compile sites reach sets
  ``judged_locally=True``: the editor then keeps the file's findings until one of those changes.

Cost: ``collect`` runs on every file of the workspace (4,300 files in the benchmark) and on every keystroke in the
editor; the framework's own walk costs about as much as ``ast.parse``. Start from ``ctx.nodes(...)`` or the binding
indexes and look only at what those nodes contain; never loop over every assignment or ``ast.walk`` whole function
bodies per check; keep what depends on one block or one function body (``per_block``, ``FunctionBody.memoised``) so
that a keystroke redoes only the edited block. ``judge`` must stay linear.

The DL101-DL106 checks share ``static/state_flow.py`` (each class's ``self.<attr>`` events laid out in evaluation
order through reachable methods, with path-sensitive freshness); a check about module state should build on it.
"""

from __future__ import annotations

import importlib
import logging
import pkgutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dynamo_lens.model import Finding
    from dynamo_lens.static.context import FileContext
    from dynamo_lens.static.index import WorkspaceIndex
    from dynamo_lens.static.summary import Candidate


@dataclass(frozen=True, slots=True)
class Check:
    """The functions the framework calls for one code. Every function is optional."""

    code: str
    collect: Callable[[FileContext], Iterable[Candidate]] | None = None
    judge: Callable[[Any, WorkspaceIndex], Iterable[Finding]] | None = None
    """Called once per candidate of this code (typed ``Any`` so a check can annotate its own Candidate subclass)."""
    judge_workspace: Callable[[WorkspaceIndex], Iterable[Finding]] | None = None
    judged_locally: bool = False
    """``judge`` reads nothing but what the candidate's file reaches through its names and where compile sites
    reach (``sites_for_*``, ``compiled_binding``): the editor then keeps a file's findings from one link to the next
    while neither changed (:meth:`WorkspaceIndex.carried`)."""


@cache
def all_checks() -> tuple[Check, ...]:
    """Every check, in code order."""
    import dynamo_lens.static.checks as package

    checks: dict[str, Check] = {}
    for info in pkgutil.iter_modules(package.__path__):
        if not info.name.startswith("dl"):
            continue
        try:
            module = importlib.import_module(f"{package.__name__}.{info.name}")
        except Exception:  # one broken check module must not take every other check down with it
            logging.getLogger(__name__).exception("cannot load check module %s", info.name)
            continue
        check: Check = module.CHECK
        if check.code in checks:
            raise RuntimeError(f"duplicate check for {check.code} in {info.name}")
        checks[check.code] = check
    return tuple(checks[code] for code in sorted(checks))


@cache
def checks_by_code() -> dict[str, Check]:
    return {check.code: check for check in all_checks()}
