"""How the program drives compiled code, across functions and files: which calls run compiled code and which mode
switches reach compiled modules.

A call runs compiled code when its callee can be a wrapper ``torch.compile(...)`` returned, a module compiled in
place, or a module whose submodules were compiled in place (``Reach.call_holders``); an ``.eval()``/``.train()``
switch reaches compiled code when its receiver can be anything that holds compiled state
(``Reach.state_holders``): the module itself, the wrapper, or the owner of regionally compiled blocks. Values are
those of the semantic model, so ``self._model`` in ``validate`` and in ``setup`` are the same slot, and a module
kept in a module-level name is the same wherever a function reads it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from dynamo_lens.model import Span
from dynamo_lens.static import exprs
from dynamo_lens.static.context import SELF_FLAG
from dynamo_lens.static.semantic import flags
from dynamo_lens.static.semantic.evaluate import NO_ENV, Env, FunctionValue, Instance, MethodValue, Value
from dynamo_lens.static.semantic.index import WorkspaceIndex
from dynamo_lens.static.semantic.reach import Node
from dynamo_lens.static.summary import CallSite, CompileSite, FileSummary, FunctionSummary, MethodSummary, ModeSwitch


@dataclass(frozen=True, slots=True)
class PlacedCall:
    """A call, with its file and the function it is made in (``""`` at module level)."""

    call: CallSite
    path: str
    function: str


def calls(summary: FileSummary) -> Iterator[PlacedCall]:
    """Every recorded call of one file."""
    for call in summary.calls:
        yield PlacedCall(call, summary.path, "")
    for function in summary.functions:
        for call in function.calls:
            yield PlacedCall(call, summary.path, function.qualname)
    for cls in summary.classes:
        for method in cls.methods:
            for call in method.calls:
                yield PlacedCall(call, summary.path, f"{cls.qualname}.{method.name}")


def compiled_callees(index: WorkspaceIndex, placed: PlacedCall, env: Env = NO_ENV) -> list[CompileSite]:
    """The compile sites whose compiled code the call runs (empty: it runs none that we know of, or it is made under
    ``set_stance("force_eager")``, where compiled code runs eagerly); ``env`` binds parameters (``self`` to an
    instance of one class)."""
    holders = index.reach.call_holders()
    if not holders or placed.call.forced_eager:
        return []
    found: list[CompileSite] = []
    for value in index.evaluator.evaluate(placed.call.func, placed.path, env):
        for site in holders.get(value, ()):
            if (
                site not in found
                and index.reach.in_program(site, placed.path, placed.function)
                and compiles(index, site, placed.call.func, placed.path)
            ):
                found.append(site)
    return found


def compiles(index: WorkspaceIndex, site: CompileSite, expr: exprs.Expr, path: str) -> bool:
    """The site can have compiled the object ``expr`` (of ``path``) holds: always, unless it compiles in a
    constructor only under tests of the constructor's parameters (``if compile_config is not None:`` in
    ``Trainer.__init__``) and that object is built by constructions whose arguments fail them
    (:func:`flags.built_to_meet`)."""
    owner, _, method = site.scope.rpartition(".")
    if method != "__init__" or not site.requires or index.class_summary((site.span.path, owner)) is None:
        return True
    return index.memo(("program.compiles", site, expr, path), lambda: flags.built_to_meet(index, site, expr, path))


MAX_HOPS = 3
"""How many calls deep :func:`reached_sites` looks for compiled code under a grad context."""


def grad_set(call: CallSite) -> str:
    """The grad mode the call's own function sets around it (``""`` for none): what :func:`reached_sites` follows
    by default."""
    return call.grad


def reached_sites(
    index: WorkspaceIndex, placed: PlacedCall, sets_own: Callable[[CallSite], str] = grad_set, env: Env = NO_ENV
) -> list[CompileSite]:
    """The compile sites whose compiled code the call runs, directly or through the workspace functions it calls
    (``self._loss_step(batch)``, whose own call of the compiled model sets no state of its own (``sets_own``: a grad
    mode, unless told otherwise) and so runs in the state of this call), up to :data:`MAX_HOPS` calls deep; none
    under ``set_stance("force_eager")``. ``env`` binds parameters along the way: with ``self`` bound to an instance of
    one class, ``self.step()`` runs that class's ``step``, not every override's."""
    if placed.call.forced_eager:
        return []
    found = compiled_callees(index, placed, env)
    for value in index.evaluator.evaluate(placed.call.func, placed.path, env):
        for inner in _inner_compiled_calls(index, value, MAX_HOPS, sets_own, env):
            if inner not in found:
                found.append(inner)
    return found


def _inner_compiled_calls(
    index: WorkspaceIndex, value: Value, hops: int, sets_own: Callable[[CallSite], str], env: Env
) -> list[CompileSite]:
    """The sites that calls inside the function or method ``value`` run without setting a state of their own."""
    if hops <= 0:
        return []
    if isinstance(value, FunctionValue):
        function = index.files.function_summary(value.key)
        inner = [PlacedCall(c, value.key[0], value.key[1]) for c in function.calls] if function is not None else []
    elif isinstance(value, MethodValue):
        method = index.find_method(value.cls, value.name)
        if method is None:
            return []
        owner, summary = method
        inner = [PlacedCall(c, owner[0], f"{owner[1]}.{summary.name}") for c in summary.calls]
    elif isinstance(value, Instance):
        # calling an object runs its forward (a module) or __call__: a task whose forward calls its compiled model
        called = "forward" if index.is_module_class(value.cls) else "__call__"
        return _inner_compiled_calls(index, MethodValue(value.cls, called), hops, sets_own, env)
    else:
        return []

    def compute() -> list[CompileSite]:
        found: list[CompileSite] = []
        for placed in inner:
            if sets_own(placed.call) or placed.call.forced_eager:
                continue
            found.extend(compiled_callees(index, placed, env))
            for callee in index.evaluator.evaluate(placed.call.func, placed.path, env):
                found.extend(_inner_compiled_calls(index, callee, hops - 1, sets_own, env))
        return list(dict.fromkeys(found))

    return index.memo(("program.inner", value, hops, sets_own, env.key), compute)


def switched_sites(index: WorkspaceIndex, path: str, switch: ModeSwitch) -> list[CompileSite]:
    """The compile sites whose compiled state the mode switch changes."""
    return [site for sites in switched_holders(index, path, switch).values() for site in sites]


def switched_holders(index: WorkspaceIndex, path: str, switch: ModeSwitch) -> dict[Value, list[CompileSite]]:
    """What the switch's receiver can be that holds compiled state, with the sites that compile it."""
    holders = index.reach.state_holders()
    found: dict[Value, list[CompileSite]] = {}
    for value in index.evaluator.evaluate(switch.receiver, path):
        sites = [
            site
            for site in holders.get(value, ())
            if index.files.together(path, site.span.path) and compiles(index, site, switch.receiver, path)
        ]
        if sites:
            found[value] = sites
    return found


def switches(index: WorkspaceIndex) -> Iterator[tuple[str, ModeSwitch]]:
    for summary in index.summaries:
        for switch in summary.switches:
            yield summary.path, switch


NEVER, SOMETIMES = "never", "sometimes"


def runs_by_arguments(
    index: WorkspaceIndex,
    sites: tuple[CompileSite, ...],
    path: str,
    function: str,
    requires: tuple[tuple[str, str, bool], ...],
) -> str:
    """What the arguments of the compiled calls of ``function`` (of ``path``) say about a statement needing
    ``requires``: :data:`NEVER` when every such call passes literals under which it cannot run (``normalize=False``
    to a ``forward`` whose rest needs ``normalize``), :data:`SOMETIMES` when some call passes an argument that rules
    it out on some runs and not on others (``size if rope == "mrope" else None``), ``""`` when they do not say. The
    calls are those of the compiled callable when ``function`` is where compiled code starts, else the calls compiled
    code makes of it (following parameters it only passes on)."""
    requires = tuple(r for r in requires if not r[0].startswith(SELF_FLAG))  # an instance's: `flags` decides
    if not requires:
        return ""
    never, sometimes = True, False
    for site in sites:
        values = _literals(index, site, path, function, 3)
        if values is None:
            never = False
            continue
        for param, kind, expected in requires:
            passed = values.get(param)
            if passed is None or any(value == RUNTIME or exprs.holds(value, kind) == expected for value in passed):
                never = False
            if passed and RUNTIME in passed and any(v != RUNTIME and exprs.holds(v, kind) != expected for v in passed):
                sometimes = True
    return NEVER if never else SOMETIMES if sometimes else ""


def _literals(index: WorkspaceIndex, site: CompileSite, path: str, function: str, depth: int) -> Literals | None:
    """The literal values each parameter of ``function`` takes in the site's compiled code, or None when some call
    passes something else (or none is found)."""
    if depth <= 0:
        return None
    target = _target(index, site, path, function)
    if target is None:
        return None
    summary, offset, entry = target
    calls: list[PlacedCall] = []
    if entry:
        for called in {*site.names, site.target_text.rpartition(".")[2]}:
            for call, at in index.evaluator.callers(called):
                placed = PlacedCall(call, at, "")
                if site in compiled_callees(index, placed):
                    calls.append(placed)
    else:
        for node in index.reach.reached_nodes(site):
            for placed in _node_calls(index, node):
                if calls_function(index, placed, path, function):
                    calls.append(placed)
    if not calls:
        return None
    defaults = dict(summary.defaults)
    values: Literals = {p: set() for p in summary.params[offset:]}
    for placed in calls:
        call = placed.call
        passed = {**dict(zip(summary.params[offset:], call.args, strict=False)), **dict(call.keywords)}
        for param, found in values.items():
            if found is None:
                continue
            argument = passed.get(param)
            if argument is None:
                known = defaults.get(param)
                values[param] = found | {known} if known is not None else None
            elif isinstance(argument, exprs.Const) and argument.value:
                found.add(argument.value)
            elif isinstance(argument, exprs.OneOf) and any(_literal(option) for option in argument.options):
                found.update(_literal(option) or RUNTIME for option in argument.options)
            elif isinstance(argument, exprs.Param) and placed.function:
                outer = _literals(index, site, placed.path, placed.function, depth - 1)
                inner = outer.get(argument.name) if outer is not None else None
                values[param] = found | inner if inner is not None else None
            else:
                values[param] = None  # a value known only at run time
    return values


Literals = dict[str, set[str] | None]
"""Parameter → the literal values it takes, None when some call passes something else."""
RUNTIME = "<run time>"
"""In :data:`Literals`, beside the literals an argument can be, a value it can take that is known only at run time
(the other arm of ``x if cond else None``)."""


def _literal(expr: exprs.Expr) -> str:
    return expr.value if isinstance(expr, exprs.Const) else ""


def _target(
    index: WorkspaceIndex, site: CompileSite, path: str, function: str
) -> tuple[FunctionSummary | MethodSummary, int, bool] | None:
    """The summary of ``function``, how many leading parameters a call does not pass (``self``), and whether it is
    where the site's compiled code starts."""
    owner, _, name = function.rpartition(".")
    if owner and index.class_summary((path, owner)) is not None:
        found = index.find_method((path, owner), name)
        if found is None or found[0] != (path, owner):
            return None
        entry = any(
            e[0] == "method" and e[2] == name and index.find_method(e[1], name) == found
            for e in index.compiled_entries(site)
        )
        return found[1], 0 if found[1].kind == "staticmethod" else 1, entry
    summary = index.files.function_summary((path, function))
    if summary is None:
        return None
    return summary, 0, ("function", (path, function)) in index.compiled_entries(site)


def _node_calls(index: WorkspaceIndex, node: Node) -> list[PlacedCall]:
    if node[0] == "function":
        function = index.files.function_summary(node[1])
        return [PlacedCall(c, node[1][0], node[1][1]) for c in function.calls] if function is not None else []
    summary = index.class_summary(node[1])
    method = summary.method(node[2]) if summary is not None else None
    if method is None:
        return []
    return [PlacedCall(c, node[1][0], f"{node[1][1]}.{node[2]}") for c in method.calls]


def calls_function(index: WorkspaceIndex, placed: PlacedCall, path: str, function: str) -> bool:
    """The call runs the function or method ``function`` of ``path`` (a method also through an instance call)."""
    owner, _, name = function.rpartition(".")
    for value in index.evaluator.evaluate(placed.call.func, placed.path):
        if isinstance(value, FunctionValue) and value.key == (path, function):
            return True
        method = value.name if isinstance(value, MethodValue) else "forward" if isinstance(value, Instance) else ""
        if isinstance(value, MethodValue | Instance) and method == name:
            found = index.find_method(value.cls, name)
            if found is not None and found[0] == (path, owner):
                return True
    return False


def callers_of(index: WorkspaceIndex, path: str, function: str) -> list[PlacedCall]:
    """The calls that run the function or method ``function`` of ``path``, each with the file and the function it
    is made in (once per link)."""

    def compute() -> list[PlacedCall]:
        found: list[PlacedCall] = []
        for call, at in index.evaluator.callers(function.rpartition(".")[2]):
            placed = PlacedCall(call, at, _enclosing_functions(index, at).get(call.span, ""))
            if calls_function(index, placed, path, function):
                found.append(placed)
        if not found and index.files.function_summary((path, function.rpartition(".")[0])) is not None:
            found.extend(_closure_callers(index, path, function))
        return found

    return index.memo(("program.callers_of", path, function), compute) if function else []


def _closure_callers(index: WorkspaceIndex, path: str, function: str) -> Iterator[PlacedCall]:
    """The calls of a closure its enclosing function returns, made in its file through a parameter it is passed as
    (``fn()`` in ``_bench(fn, ...)`` for ``fn = _make_fn(...)``): their name is not the closure's."""
    summary = index.summary(path)
    for placed in calls(summary) if summary is not None else ():
        if isinstance(placed.call.func, exprs.Param) and calls_function(index, placed, path, function):
            yield placed


def _enclosing_functions(index: WorkspaceIndex, path: str) -> dict[Span, str]:
    """The function each call of the file ``path`` is made in, by span."""

    def compute() -> dict[Span, str]:
        summary = index.summary(path)
        return {placed.call.span: placed.function for placed in calls(summary)} if summary is not None else {}

    return index.memo(("program.enclosing", path), compute)


def reset_around(index: WorkspaceIndex, path: str, function: str) -> bool:
    """``function`` (or a function that calls it) also resets Dynamo: what it compiles is dropped afterwards, so
    it compiles again every time instead of being reused."""
    if not function:
        return False
    return _resets(index, path, function) or any(
        placed.function and _resets(index, placed.path, placed.function) for placed in callers_of(index, path, function)
    )


def _resets(index: WorkspaceIndex, path: str, function: str) -> bool:
    summary = index.summary(path)
    return summary is not None and any(qualname == function for _, qualname in summary.resets)
