"""The candidates of the checks about code inside compiled regions (DL204, DL205, DL301, DL302), and how ``link``
turns them into findings.

``collect`` records a candidate in every function that *could* be compiled; whether it is compiled is known only at
link time, across files. There a candidate becomes a finding at the rule's severity (or the lower one the check
chose, e.g. for bounded costs) when a compile site reaches its function, a hint when its function is only reachable
from the ``forward`` of an ``nn.Module`` that the workspace never compiles, and nothing otherwise: a ``print`` in a
plain script is no hazard.

Cost: no second walk of the tree. A :class:`FunctionBody` is made of the statements and calls the framework already
recorded per scope; expressions are walked only inside statements whose source lines mention what a check looks
for (a name, ``if``, ``and``).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, TypeVar

from dynamo_lens.codes import get_rule
from dynamo_lens.model import Finding, Related, Severity
from dynamo_lens.static.context import FileContext, NodeAt, function_qualname
from dynamo_lens.static.semantic import settings
from dynamo_lens.static.semantic.program import NEVER, SOMETIMES, runs_by_arguments
from dynamo_lens.static.semantic.reach import ALWAYS, FIRST_CALL
from dynamo_lens.static.semantic.reach import CONDITIONAL as CONDITIONAL_RUN
from dynamo_lens.static.semantic.usage import call_site_tensors
from dynamo_lens.static.semantic.values import TensorInference
from dynamo_lens.static.summary import Candidate, CompileSite
from dynamo_lens.torch_facts import FULLGRAPH_LIFTS, torch_name

if TYPE_CHECKING:
    from dynamo_lens.static.semantic.index import WorkspaceIndex

T = TypeVar("T")
BODY_FIELDS = frozenset({"body", "orelse", "finalbody", "handlers", "cases"})
COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
COMPOUND: tuple[type[ast.stmt], ...] = (
    ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try, ast.Match,
    ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
    *((ast.TryStar,) if hasattr(ast, "TryStar") else ()),
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class InsideCompiledCandidate(Candidate):
    """A hazard at ``span`` inside the function ``function`` (qualified name in ``span.path``)."""

    function: str
    message: str
    severity: Severity
    related: tuple[Related, ...] = ()
    data: tuple[tuple[str, str], ...] = ()
    only_if_taken: bool = False
    """A hazard that matters only where its code really runs (a graph break): reported as a hint unless its
    statement runs whenever its function does (not ``guarded``) and compiled code runs the function on every call.
    Which branch a program takes is decided by its configuration and inputs, which a scan does not see."""
    guarded: bool = False
    """Its statement runs only under a condition of its function."""
    requires: tuple[tuple[str, str, bool], ...] = ()
    """What parameters of its function must be for its statement to run (``NodeAt.requires``): when every compiled
    call passes values that contradict this, compiled code never runs it."""
    first_call: tuple[tuple[str, str, bool], ...] = ()
    """The self-resetting tests that alone guard its statement (``NodeAt.first_call``): where the instance starts
    out passing them, compiled code runs it on the first call."""
    lifted_by: str = ""
    """A ``torch._dynamo.config`` flag that, set to True, removes the hazard (``capture_scalar_outputs`` for
    ``.item()``): no finding where every compiling program sets it first, a hint where only some may."""
    lifted_partly: str = ""
    """The inputs the flag removes the hazard for, when not for all (``integer tensors``): a hint even where it is
    set, since the scan cannot tell the inputs apart."""
    raised_message: str = ""
    """For a graph break: the message when every compile that reaches it has ``fullgraph=True``, under which torch
    raises at the break (:func:`torch_facts.raised_under_fullgraph`)."""
    cells_of: str = ""
    """For a hazard in closure cells: the function whose locals they are. Where every compile that reaches the
    candidate's function also runs that one, each call makes new cells and no guard on them outlasts it."""
    guards_on: str = ""
    """The family of the guard its cost rests on (``torch_facts.GLOBALS``), which a ``guard_filter_fn`` may drop
    (:meth:`WorkspaceIndex.finding`)."""


@dataclass(slots=True, eq=False)
class FunctionBody:
    """One ``def`` of the file: the statements and calls Dynamo traces in it, nested ``def`` bodies excluded (their
    ``def`` statement itself is included), and the eager-only branch of ``if torch.compiler.is_compiling():``
    dropped (Dynamo folds the test to a constant)."""

    node: ast.FunctionDef | ast.AsyncFunctionDef
    qualname: str
    parent: FunctionBody | None
    """The enclosing function, for a nested ``def``."""
    params: frozenset[str]
    statements: list[ast.stmt] = field(default_factory=list)
    calls: list[ast.Call] = field(default_factory=list)
    in_loop: set[int] = field(default_factory=set)
    """``id`` of the statements and calls that sit in a ``for``/``while`` body of this function."""
    guarded: set[int] = field(default_factory=set)
    """``id`` of the statements and calls that run only under a condition of this function (``NodeAt.guarded``)."""
    requires: dict[int, tuple[tuple[str, str, bool], ...]] = field(default_factory=dict)
    """``id`` of a statement or call → what parameters of this function must be for it to run."""
    first_call: dict[int, tuple[tuple[str, str, bool], ...]] = field(default_factory=dict)
    """``id`` of a statement or call → the self-resetting tests that alone guard it (``NodeAt.first_call``)."""
    tensor_params: frozenset[str] = frozenset()
    """Parameters every call of the compiled function in its file passes a tensor (``usage.call_site_tensors``)."""
    _lines: Sequence[str] = field(default_factory=list, repr=False)
    _locals: set[str] | None = field(default=None, repr=False)
    _tensors: TensorInference | None = field(default=None, repr=False)
    memo: dict[str, tuple[object, Any]] = field(default_factory=dict, repr=False)

    def locals(self) -> set[str]:
        """Parameters and names the function binds, minus its ``global``/``nonlocal`` declarations."""
        if self._locals is None:
            names = set(self.params)
            declared: set[str] = set()
            for statement in self.statements:
                if isinstance(statement, (ast.Global, ast.Nonlocal)):
                    declared.update(statement.names)
                else:
                    names.update(bound_names(statement))
            self._locals = names - declared
        return self._locals

    def reads_global(self, name: str) -> bool:
        """``name`` read here is the module's (neither a local of this function nor of an enclosing one)."""
        scope: FunctionBody | None = self
        while scope is not None:
            if name in scope.locals():
                return False
            scope = scope.parent
        return True

    def tensors(self, ctx: FileContext) -> TensorInference:
        if self._tensors is None:
            self._tensors = TensorInference(self.node, self.statements, ctx.resolve, self.tensor_params)
        return self._tensors

    def refresh(self, ctx: FileContext, lines: Sequence[str], tensor_params: frozenset[str]) -> None:
        """Point a body kept from an earlier version of the file (same nodes, same names) at this version, whose
        calls may pass tensors to other parameters (then what was worked out from the old ones is dropped)."""
        self._lines = lines
        if tensor_params != self.tensor_params:
            self.tensor_params, self._tensors = tensor_params, None
            self.memo.clear()
        if self._tensors is not None:
            self._tensors.resolve = ctx.resolve

    def memoised(self, name: str, key: object, compute: Callable[[], T]) -> T:
        """``compute()``, kept with the body under ``name`` while ``key`` (what else it reads) stays equal. For
        node-level results of one body (never spans: the nodes move when lines are added above the body). A body
        lives only while the file's names are unchanged (:func:`function_bodies`), so ``key`` need not stand for
        them."""
        found = self.memo.get(name)
        if found is None or found[0] != key:
            found = self.memo[name] = (key, compute())
        return found[1]

    def expressions(
        self, mentions: Callable[[str], bool], skip: tuple[type[ast.stmt], ...] = ()
    ) -> Iterator[tuple[ast.stmt, ast.AST]]:
        """(statement, expression node) for the statements (except docstrings and ``skip`` types) with a source line
        for which ``mentions(line)`` is true: a cheap text test decides which statements are worth walking."""
        lines = self._lines
        for statement in self.statements:
            if (skip and isinstance(statement, skip)) or (
                isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)
            ):
                continue
            first = statement.lineno
            last = _header_end(statement) if isinstance(statement, COMPOUND) else statement.end_lineno or first
            if any(mentions(lines[i]) for i in range(first - 1, min(last, len(lines)))):
                for expression in own_expressions(statement):
                    yield from ((statement, node) for node in ast.walk(expression))

    def name_loads(self, names: Collection[str]) -> list[ast.Name]:
        """Reads of ``names`` in source order, including the target of ``name += ...`` (read, then written)."""
        if not names:
            return []
        pattern = re.compile(r"\b(?:" + "|".join(re.escape(n) for n in names) + r")\b")
        loads: list[tuple[ast.stmt, ast.Name]] = []
        inner: dict[int, set[str]] = {}
        """Per statement: names its comprehensions and lambdas bind (their own scopes shadow the outer name)."""
        for statement, node in self.expressions(lambda line: pattern.search(line) is not None):
            if isinstance(node, ast.Name) and node.id in names and isinstance(node.ctx, ast.Load):
                loads.append((statement, node))
            elif isinstance(node, COMPREHENSIONS):
                bound = (n for generator in node.generators for n in target_names(generator.target))
                inner.setdefault(id(statement), set()).update(bound)
            elif isinstance(node, ast.Lambda):
                args = node.args
                every = (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg)
                inner.setdefault(id(statement), set()).update(a.arg for a in every if a is not None)
        found = [node for statement, node in loads if node.id not in inner.get(id(statement), ())]
        for statement in self.statements:
            target = statement.target if isinstance(statement, ast.AugAssign) else None
            if isinstance(target, ast.Name) and target.id in names:
                found.append(target)
        found.sort(key=lambda n: (n.lineno, n.col_offset))
        return found


def own_expressions(statement: ast.stmt) -> Iterator[ast.AST]:
    """The expressions a statement evaluates itself, without the statements nested in its bodies."""
    for name, value in ast.iter_fields(statement):
        if name in BODY_FIELDS:
            continue
        if isinstance(value, ast.AST):
            yield value
        elif isinstance(value, list):
            yield from (v for v in value if isinstance(v, ast.AST) and not isinstance(v, ast.stmt))


def bound_names(statement: ast.stmt) -> Iterator[str]:
    """Names a statement binds in its own scope (assignment and loop targets, ``with ... as``, imports, ``def``)."""
    targets: list[ast.AST] = []
    if isinstance(statement, ast.Assign):
        targets = list(statement.targets)
    elif isinstance(statement, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor)):
        targets = [statement.target]
    elif isinstance(statement, (ast.With, ast.AsyncWith)):
        targets = [item.optional_vars for item in statement.items if item.optional_vars is not None]
    elif isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        yield statement.name
    elif isinstance(statement, (ast.Import, ast.ImportFrom)):
        yield from ((a.asname or a.name).partition(".")[0] for a in statement.names)
    elif isinstance(statement, ast.Try):
        yield from (h.name for h in statement.handlers if h.name)
    for target in targets:
        yield from target_names(target)


def target_names(target: ast.AST) -> Iterator[str]:
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            yield from target_names(element)
    elif isinstance(target, ast.Starred):
        yield from target_names(target.value)


def _header_end(statement: ast.stmt) -> int:
    """Last line of a compound statement's header (before its first nested statement)."""
    bodies = [getattr(statement, f, None) for f in ("body",)]
    first = next((b[0] for b in bodies if isinstance(b, list) and b), None)
    return max(statement.lineno, (first.lineno - 1) if isinstance(first, ast.stmt) else statement.lineno)


_last: tuple[FileContext, list[FunctionBody]] | None = None


def function_bodies(ctx: FileContext) -> list[FunctionBody]:
    """Every function of the file, assembled once per file however many checks ask (the last file is remembered),
    and kept with its block across versions in the editor (:meth:`FileContext.per_block`)."""
    global _last
    if _last is not None and _last[0] is ctx:
        return _last[1]
    lines = ctx.lines.lines or [""]
    result: list[FunctionBody] = []
    passed = call_site_tensors(ctx)
    for bodies in ctx.per_block("function_bodies", lambda nodes: _block_bodies(ctx, nodes)):
        for body in bodies:
            body.refresh(ctx, lines, passed.get(body.qualname, frozenset()))
        result.extend(bodies)
    _last = (ctx, result)
    return result


def _block_bodies(ctx: FileContext, nodes: Mapping[type[ast.AST], list[NodeAt]]) -> list[FunctionBody]:
    bodies: dict[int, FunctionBody] = {}
    definitions = [*nodes.get(ast.FunctionDef, ()), *nodes.get(ast.AsyncFunctionDef, ())]
    definitions.sort(key=lambda at: (at.node.lineno, at.node.col_offset))
    for at in definitions:
        node = at.node
        assert isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        qualname = function_qualname(at.scope, node)
        enclosing = at.scope.function
        parent = bodies.get(id(enclosing.node)) if enclosing is not None else None
        args = node.args
        params = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
        params |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
        bodies[id(node)] = FunctionBody(node, qualname, parent, frozenset(params))
    if not bodies:
        return []
    for kind, found in nodes.items():
        if not (issubclass(kind, ast.stmt) or kind is ast.Call):
            continue
        for at in found:
            function = at.scope.function
            body = bodies.get(id(function.node)) if function is not None else None
            if body is None or at.eager_only:
                continue
            if kind is ast.Call:
                body.calls.append(at.node)  # type: ignore[arg-type]
            else:
                body.statements.append(at.node)  # type: ignore[arg-type]
            if at.loop_depth:
                body.in_loop.add(id(at.node))
            if at.guarded:
                body.guarded.add(id(at.node))
            if at.requires:
                body.requires[id(at.node)] = at.requires
            if at.first_call:
                body.first_call[id(at.node)] = at.first_call
    result = list(bodies.values())
    for body in result:
        body.statements.sort(key=lambda s: (s.lineno, s.col_offset))
    return result


MAX_REBINDINGS = 3
"""How many statements that bind a name again a finding lists (in its message and as related places)."""


def rebinding_places(ctx: FileContext, targets: Sequence[ast.expr], label: str) -> tuple[str, tuple[Related, ...]]:
    """``line 3, line 9`` for the message, and the same first few ``targets`` as related places labelled ``label``."""
    shown = targets[:MAX_REBINDINGS]
    return ", ".join(f"line {t.lineno}" for t in shown), tuple(Related(ctx.span(t), label) for t in shown)


CONDITIONAL = " (a hint: compiled code runs this only under a condition, which the scan cannot decide)"
ONCE = (
    " (once: compiled code runs this on its first call only, in a branch that changes the attribute it tests, so "
    "later calls skip it; the next call recompiles without it)"
)

AUTOMATIC_DYNAMIC_COST = "one recompile, then the value is dynamic"
"""What a changing int or float read by compiled code costs under ``dynamic=None`` (automatic dynamic)."""
STATIC_COST = (
    f"under `dynamic=False` it is never made dynamic, so every new value recompiles, and {settings.PAST_LIMIT}"
)
MESSAGE_PARTS = ("subject", "guard")
"""Keys of the data of a candidate whose cost is :data:`AUTOMATIC_DYNAMIC_COST`: they rebuild its message once the
site's ``dynamic=`` decides the cost (and are not the finding's)."""


def guard_message(subject: str, guard: str, cost: str) -> str:
    """``<what changes>; compiled code that reads it makes Dynamo guard <guard>: <cost> (torch X.Y)``."""
    return f"{subject}; compiled code that reads it makes Dynamo guard {guard}: {cost} ({torch_name()})"


def judge_automatic_dynamic(candidate: InsideCompiledCandidate, index: WorkspaceIndex) -> Iterator[Finding]:
    """``judge`` for a candidate that may cost :data:`AUTOMATIC_DYNAMIC_COST` (then its data names the
    ``subject`` and ``guard`` of its message), at the cost the compile sites' ``dynamic=`` gives it. Measured on 2.13:
    under ``dynamic=True`` it is symbolic from the first call (1 compile: nothing to report); under ``dynamic=False``
    every value compiles until the limit (8 compiles: a warning naming the site)."""
    data = dict(candidate.data)
    public = tuple((key, value) for key, value in candidate.data if key not in MESSAGE_PARTS)
    candidate = replace(candidate, data=public)
    if "subject" in data:
        dynamic = settings.compile_option(index.sites_for_scope(candidate.span.path, candidate.function), "dynamic")
        if dynamic is not None and dynamic[0] == "True":
            return
        if dynamic is not None and dynamic[0] == "False":
            candidate = replace(
                candidate,
                message=guard_message(data["subject"], data["guard"], STATIC_COST),
                severity=Severity.WARNING,
                related=(*candidate.related, settings.compiled_with(dynamic, "dynamic")),
            )
    yield from judge(candidate, index)


def judge(candidate: InsideCompiledCandidate, index: WorkspaceIndex) -> Iterator[Finding]:
    """The candidate's finding when compiled code reaches its function, a hint inside an uncompiled module's
    ``forward`` (or a method it calls), nothing elsewhere."""
    rule = get_rule(candidate.code)
    assert rule is not None, candidate.code
    path = candidate.span.path
    sites = index.sites_for_scope(path, candidate.function)
    if not sites and not _in_module_forward(index, path, candidate.function):
        return
    if candidate.cells_of and set(sites) <= set(index.sites_for_scope(path, candidate.cells_of)):
        return  # the cells are made by code Dynamo traces: new ones on every call
    by_arguments = (
        runs_by_arguments(index, sites, path, candidate.function, candidate.requires)
        if candidate.requires and sites
        else ""
    )
    if by_arguments == NEVER:
        return  # every compiled call passes arguments under which this statement does not run
    severity = candidate.severity
    message, related = settings.with_limit(index, sites, candidate.message, candidate.related)
    data = dict(candidate.data)
    fullgraph = settings.compile_option(sites, "fullgraph") if candidate.raised_message else None
    raises = fullgraph is not None and fullgraph[0] == "True"
    if fullgraph is not None and raises:
        # one graph or an error: the flags fullgraph implies trace what they lift, anything else raises
        if candidate.lifted_by in FULLGRAPH_LIFTS and not candidate.lifted_partly:
            return
        severity, message = Severity.WARNING, candidate.raised_message
        if candidate.lifted_by in FULLGRAPH_LIFTS:
            severity = Severity.HINT
            message += f" (a hint: under `fullgraph=True` Dynamo traces it for {candidate.lifted_partly})"
        related = (*related, settings.compiled_with(fullgraph, "fullgraph"))
        data["skips_function"] = "false"
    elif candidate.lifted_by and sites:
        decisions = [settings.decide(index, candidate.lifted_by, "True", site) for site in sites]
        if all(d is not None and d.certain for d in decisions) and not candidate.lifted_partly:
            return  # every compiling program sets the flag first: Dynamo traces it
        decision = next((d for d in decisions if d is not None), None)
        if decision is not None:
            severity = Severity.HINT
            flag = f"`torch._dynamo.config.{candidate.lifted_by} = True`"
            if decision.certain and candidate.lifted_partly:
                message += f" (a hint: {flag} is set first, under which Dynamo traces it for {candidate.lifted_partly})"
            else:
                message += f" (a hint: a program that compiles this sets {flag}, under which Dynamo traces it)"
            related = (*related, settings.set_here(decision.setting))
    if candidate.only_if_taken and sites and severity != Severity.HINT:
        runs = _runs(index, candidate, sites)
        if runs == CONDITIONAL_RUN or by_arguments == SOMETIMES:
            severity, message = Severity.HINT, message + CONDITIONAL
        elif runs == FIRST_CALL and not raises:  # under fullgraph=True the first call raises
            severity, message = Severity.INFO, message + ONCE
    yield index.finding(
        rule,
        candidate.span,
        message,
        sites,
        severity=severity,
        related=related,
        data=data,
        guards_on=candidate.guards_on,
    )


def _runs(index: WorkspaceIndex, candidate: InsideCompiledCandidate, sites: Sequence[CompileSite]) -> int:
    """How surely compiled code runs the candidate's statement: the surest way any site reaches its function,
    capped by how the function itself runs the statement."""
    node = index.reach.scope_node(candidate.span.path, candidate.function)
    if node is None:
        return CONDITIONAL_RUN
    if any(index.reach.always_runs(site, node) for site in sites):
        reached = ALWAYS
    elif any(index.reach.runs_on_first_call(site, node) for site in sites):
        reached = FIRST_CALL
    else:
        return CONDITIONAL_RUN
    if not candidate.guarded:
        return reached
    owner = candidate.function.rpartition(".")[0]
    cls = (candidate.span.path, owner)
    if candidate.first_call and owner and index.classes.starts_passing(cls, candidate.first_call):
        return FIRST_CALL
    return CONDITIONAL_RUN


def _in_module_forward(index: WorkspaceIndex, path: str, function: str) -> bool:
    """``function`` is ``forward`` of an ``nn.Module`` subclass, or a method ``forward`` calls as ``self.name()``."""
    owner, _, method = function.rpartition(".")
    if not owner or not index.is_module_class((path, owner)):
        return False
    if method == "forward":
        return True
    summary = index.class_summary((path, owner))
    if summary is None:
        return False
    forward, called = summary.method("forward"), summary.method(method)
    if forward is None or (called is not None and called.disabled):
        return False  # Dynamo never traces a `compiler.disable`d method
    return any(e.kind == "call" and e.attr == method for e in forward.events)
