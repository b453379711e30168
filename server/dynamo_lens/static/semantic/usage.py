"""How a file *uses* its compiled callables: which names hold them, where they are called, which loops enclose what,
and whether compiled code already ran before a given statement.

Shared by the usage checks (DL111, DL112, DL201-DL203, DL206-DL210, DL401-DL403). Everything is computed from the
nodes the framework recorded (``FileContext.nodes``), once per file, and only inside one function scope at a time:
"before" means earlier in source order in the same function (or module body), or anywhere in a loop of that
function that also encloses the statement.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from dynamo_lens.codes import Rule, get_rule
from dynamo_lens.model import Edit, Finding, Fix, Related, Severity, Span
from dynamo_lens.static import exprs
from dynamo_lens.static.context import FileContext, NodeAt, Scope, function_qualname
from dynamo_lens.static.semantic import settings
from dynamo_lens.static.semantic.values import ValueKind, kind_of
from dynamo_lens.static.summary import AttrInit, Candidate, CompileSite, Ref
from dynamo_lens.torch_facts import TORCH_NN_METHOD_COMPILE_SINCE, describes_since

if TYPE_CHECKING:
    from dynamo_lens.static.semantic.index import WorkspaceIndex

LOOPS = (ast.For, ast.AsyncFor, ast.While)
Loop = ast.For | ast.AsyncFor | ast.While
Kind = Literal["int", "float", "str", "bool"]
CONVERSIONS: dict[str, Kind] = {"int": "int", "float": "float", "str": "str", "bool": "bool"}
ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow)


def scope_key(scope: Scope) -> str:
    """The qualified name of the function a node runs in (``""`` for the module body and class bodies)."""
    function = scope.function
    return function.qualname if function is not None else ""


def position(node: ast.AST) -> tuple[int, int]:
    return (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))


def root_name(expr: ast.AST) -> tuple[str | None, int]:
    """``model.encoder.layers[0]`` → ("model", 3): the plain name an attribute/subscript chain starts at, and the
    number of steps from it."""
    steps = 0
    while isinstance(expr, ast.Attribute | ast.Subscript):
        expr = expr.value
        steps += 1
    return (expr.id, steps) if isinstance(expr, ast.Name) else (None, steps)


def bound_in(node: ast.AST) -> set[str]:
    """Names (re)bound anywhere inside ``node``: loop targets, assignments, nested ``def``s."""
    bound: set[str] = set()
    for inner in ast.walk(node):
        if isinstance(inner, ast.Name) and isinstance(inner.ctx, ast.Store):
            bound.add(inner.id)
        elif isinstance(inner, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and inner is not node:
            bound.add(inner.name)
    return bound


def names_in(expr: ast.AST) -> set[str]:
    return {node.id for node in ast.walk(expr) if isinstance(node, ast.Name)}


@dataclass(frozen=True, slots=True)
class Handle:
    """A name that refers to a compiled callable, or to a module instance that is compiled (its state is shared)."""

    name: str
    site: CompileSite
    module: bool
    """The name holds a module (the compiled instance or the wrapper returned by ``torch.compile(module)``)."""
    runs_compiled: bool = True
    """Calling the name runs compiled code: False for ``model`` in ``compiled = torch.compile(model)`` (that call
    runs eagerly, though both share the module's state)."""


@dataclass(frozen=True, slots=True)
class HandleCall:
    at: NodeAt
    handle: Handle

    @property
    def call(self) -> ast.Call:
        assert isinstance(self.at.node, ast.Call)
        return self.at.node


@dataclass(slots=True, eq=False)
class Usage:
    ctx: FileContext
    handles: dict[tuple[str, str], Handle] = field(default_factory=dict)
    """(function scope, name) → handle; ``""`` is the module level."""
    calls: list[HandleCall] = field(default_factory=list)
    loops: dict[str, list[Loop]] = field(default_factory=dict)
    """Function scope → its loops."""
    called_in_loop: set[str] = field(default_factory=set)
    """Names of functions called (by plain name) inside a loop of this file."""
    compiled_function_globals: dict[str, list[Handle]] = field(default_factory=dict)
    """Module-level name → handles of compiled functions (defined in this file) whose body loads the name."""

    # -- names ---------------------------------------------------------------------------------------------------
    def handle(self, scope: str, name: str) -> Handle | None:
        return self.handles.get((scope, name)) or self.handles.get(("", name))

    def value_of(self, scope: str, name: str, before: tuple[int, int]) -> ast.expr | None:
        """The value last assigned to ``name`` by a plain ``name = value`` before ``before`` in ``scope`` (or at
        module level)."""
        found = self.assignment_of(scope, name, before)
        return found.node.value if found is not None and isinstance(found.node, ast.Assign) else None

    def assignment_of(self, scope: str, name: str, before: tuple[int, int]) -> NodeAt | None:
        """The last plain ``name = value`` before ``before`` in ``scope`` (or at module level): where it ran tells
        the context the value was made in (``NodeAt.grad``)."""
        statements = self.ctx.name_bindings.get(name, ())
        for key in (scope, ""):
            found = [
                at
                for at in statements
                if isinstance(at.node, ast.Assign)
                and scope_key(at.scope) == key
                and position(at.node) < before
                and any(isinstance(t, ast.Name) and t.id == name for t in at.node.targets)
            ]
            if found:
                return found[-1]
        return None

    def values_reaching(self, name: str, at: NodeAt) -> list[ast.expr]:
        """The values of the plain ``name = value`` assignments of ``at``'s function that can reach ``at``: the
        last one before it, and earlier ones while the later ones sit in bodies (an ``if`` arm) that ``at`` does not
        (``grad = p.grad`` survives ``if flatten: grad = grad.flatten()``)."""
        scope, here = scope_key(at.scope), position(at.node)
        found: list[ast.expr] = []
        statements = self.ctx.name_bindings.get(name, ())
        for statement in reversed(statements):  # in source order
            node = statement.node
            if scope_key(statement.scope) != scope or position(node) >= here or not isinstance(node, ast.Assign):
                continue
            if any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
                found.append(node.value)
                if at.path[: len(statement.path)] == statement.path:
                    break  # it runs whenever `at` does: nothing earlier reaches
        return found

    def entries_assigned(self, name: str, key: str, at: NodeAt) -> list[ast.expr]:
        """The values ``at``'s function assigns to the entry ``name[key]`` anywhere in its body (``state["buf"] =
        torch.zeros_like(p)`` under ``if not state:``)."""
        scope = scope_key(at.scope)
        found: list[ast.expr] = []
        for statement in self.ctx.member_bindings.get(name, ()):
            node = statement.node
            if scope_key(statement.scope) != scope or not isinstance(node, ast.Assign):
                continue
            for target in node.targets:
                if (
                    isinstance(target, ast.Subscript)
                    and isinstance(target.value, ast.Name)
                    and target.value.id == name
                    and isinstance(target.slice, ast.Constant)
                    and target.slice.value == key
                ):
                    found.append(node.value)
        return found

    def class_ref(self, scope: str, name: str, before: tuple[int, int]) -> Ref | None:
        """``name = Something(...)`` → the reference of ``Something`` (through aliases)."""
        value = self.value_of(scope, name, before)
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name | ast.Attribute):
            return self.ctx.ref(value.func)
        return None

    # -- loops and order -----------------------------------------------------------------------------------------
    def enclosing_loops(self, at: NodeAt) -> list[Loop]:
        """The loops of ``at``'s function whose body contains ``at`` (outermost first)."""
        line = position(at.node)[0]
        return [
            loop
            for loop in self.loops.get(scope_key(at.scope), ())
            if loop.body[0].lineno <= line <= (loop.body[-1].end_lineno or loop.body[-1].lineno)
        ]

    def ran_before(self, handles: set[CompileSite], at: NodeAt, *, next_iteration: bool = True) -> HandleCall | None:
        """A call of a handle of one of ``handles`` that has run when ``at`` executes: earlier in the same function,
        or (``next_iteration``) later in a loop that also encloses ``at``."""
        here = position(at.node)
        key = scope_key(at.scope)
        loops = self.enclosing_loops(at) if next_iteration else []
        for call in self.calls:
            if call.handle.site not in handles or scope_key(call.at.scope) != key:
                continue
            there = position(call.at.node)
            if there < here or any(_inside(loop, there[0]) for loop in loops):
                return call
        return None


def _inside(loop: Loop, line: int) -> bool:
    return loop.body[0].lineno <= line <= (loop.body[-1].end_lineno or loop.body[-1].lineno)


_last: tuple[FileContext, Usage] | None = None


def usage(ctx: FileContext) -> Usage:
    """The usage tables of ``ctx`` (computed once per file, however many checks ask)."""
    global _last
    if _last is not None and _last[0] is ctx:
        return _last[1]
    result = _build(ctx)
    _last = (ctx, result)
    return result


def _build(ctx: FileContext) -> Usage:
    table = Usage(ctx)
    if not ctx.compile_sites:
        return table  # nothing is compiled in this file: no usage check has anything to say about it
    for at in ctx.nodes(*LOOPS):
        assert isinstance(at.node, LOOPS)
        table.loops.setdefault(scope_key(at.scope), []).append(at.node)
    originals = _compiled_argument_names(ctx)
    nn_method_compiles = describes_since(TORCH_NN_METHOD_COMPILE_SINCE)
    for site in ctx.compile_sites:
        if site.form == "method" and _torch_nn_instance(table, site) and not nn_method_compiles:
            continue  # torch 2.13 skips torch.nn frames: `nn.Sequential(...).compile()` compiled 0 graphs
        module = site.form == "method" or local_function(ctx, site) is None
        for name in site.names:
            runs = site.form == "method" or name != originals.get(site.span)
            table.handles.setdefault((site.scope, name), Handle(name, site, module, runs))
            if name in site.module_names:
                table.handles.setdefault(("", name), Handle(name, site, module, runs))
    _self_attribute_handles(ctx, table)
    for at in ctx.nodes(ast.Call):
        call = at.node
        assert isinstance(call, ast.Call)
        if isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name):
            key = _self_attribute(scope_key(at.scope), call.func)
            handle = table.handles.get(key) if key is not None else None
            if handle is not None and not at.forced_eager:
                table.calls.append(HandleCall(at, handle))
            continue
        if not isinstance(call.func, ast.Name):
            continue
        if at.loop_depth > 0:
            table.called_in_loop.add(call.func.id)
        handle = table.handle(scope_key(at.scope), call.func.id)
        if handle is not None and handle.runs_compiled and not at.forced_eager:
            table.calls.append(HandleCall(at, handle))  # under set_stance("force_eager") it runs eagerly
    _compiled_function_globals(ctx, table)
    return table


def _self_attribute_handles(ctx: FileContext, table: Usage) -> None:
    """Compiled callables a method stores on ``self`` (``self._update = torch.compile(_update)`` in ``__init__``):
    handles named ``self.<attr>`` that every method of the class calls (``self._update(buf, grad)``)."""
    by_span = {site.span: site for site in ctx.compile_sites if site.form != "method"}
    for at in ctx.nodes(ast.Assign):
        statement = at.node
        assert isinstance(statement, ast.Assign)
        keys = [
            key
            for target in statement.targets
            if isinstance(target, ast.Attribute) and (key := _self_attribute(scope_key(at.scope), target)) is not None
        ]
        site = by_span.get(ctx.span(statement.value)) if keys and isinstance(statement.value, ast.Call) else None
        if site is not None:
            module = local_function(ctx, site) is None
            for key in keys:
                table.handles.setdefault(key, Handle(key[1], site, module))


def _self_attribute(scope: str, node: ast.Attribute) -> tuple[str, str] | None:
    """``self.attr`` in a method: (the class's qualified name followed by a dot, ``"self.attr"``), the key of its
    handle; None outside a method or for another receiver."""
    owner = scope.rpartition(".")[0]
    if not owner or not isinstance(node.value, ast.Name) or node.value.id != "self":
        return None
    return f"{owner}.", f"self.{node.attr}"


def _torch_nn_instance(table: Usage, site: CompileSite) -> bool:
    """The site compiles an instance of a ``torch.nn`` class (``nn.Sequential(...)``, ``nn.Linear``), as the file
    shows it."""
    target = exprs.without_identity(table.ctx.module_value(exprs.without_identity(site.target)))
    return (
        isinstance(target, exprs.Call)
        and isinstance(target.func, exprs.Named)
        and target.func.ref.level == 0
        and target.func.ref.dotted.startswith("torch.nn.")
    )


def local_function(ctx: FileContext, site: CompileSite) -> str | None:
    """The qualified name of the function of this file that the site compiles (``torch.compile(step)``,
    ``@torch.compile def step``), or None (a module, a method, something else)."""
    target = site.target
    if not isinstance(target, exprs.Named) or not target.ref.is_local:
        return None
    if target.ref.last in _class_names(ctx):
        return None
    return target.ref.dotted


def local_forward(ctx: FileContext, site: CompileSite) -> str | None:
    """``Net.forward`` when the site compiles an instance of the class ``Net`` of this file, built where the file
    shows it (``torch.compile(Net())``, or a module-level ``net = Net()`` compiled later), or None."""
    target = exprs.without_identity(ctx.module_value(exprs.without_identity(site.target)))
    if not (isinstance(target, exprs.Call) and isinstance(target.func, exprs.Named) and target.func.ref.is_local):
        return None
    return f"{target.func.ref.dotted}.forward" if target.func.ref.last in _class_names(ctx) else None


def call_site_tensors(ctx: FileContext) -> dict[str, frozenset[str]]:
    """Qualified name of a compiled function of this file (or of the ``forward`` of a compiled instance of a class
    of this file) → its parameters that every call of it in the file passes a tensor (``step(x,
    torch.tensor(True))``, ``model(torch.randn(2, 4))``, or a local assigned one): in the compiled code they are
    tensors, so ``if flag:`` on one is a data-dependent branch and ``x[x > 0]`` a mask index."""
    table = usage(ctx)
    calls: dict[str, list[HandleCall]] = {}
    for handle_call in table.calls:
        if not handle_call.handle.runs_compiled:
            continue
        site = handle_call.handle.site
        function = local_forward(ctx, site) if handle_call.handle.module else local_function(ctx, site)
        if function is not None:
            calls.setdefault(function, []).append(handle_call)
    if not calls:
        return {}
    definitions = {
        function_qualname(at.scope, at.node): at.node
        for at in ctx.nodes(ast.FunctionDef)
        if isinstance(at.node, ast.FunctionDef)
    }
    found: dict[str, frozenset[str]] = {}
    for function, handle_calls in calls.items():
        definition = definitions.get(function)
        if definition is None:
            continue
        positional = [a.arg for a in (*definition.args.posonlyargs, *definition.args.args)]
        if function.endswith(".forward"):
            positional = positional[1:]  # `self`
        passed = [_tensor_arguments(table, handle_call, positional) for handle_call in handle_calls]
        common = frozenset.intersection(*passed)
        if common:
            found[function] = common
    return found


def _tensor_arguments(table: Usage, handle_call: HandleCall, positional: list[str]) -> frozenset[str]:
    """The parameters this call passes a tensor to."""
    call, ctx = handle_call.call, table.ctx
    scope, here = scope_key(handle_call.at.scope), position(call)

    def local(name: str) -> ValueKind:
        value = table.value_of(scope, name, before=here)
        return "tensor" if value is not None and kind_of(value, ctx.resolve, _unknown) == "tensor" else "unknown"

    found: set[str] = set()
    for index, argument in enumerate(call.args):
        if isinstance(argument, ast.Starred):
            break
        if index < len(positional) and kind_of(argument, ctx.resolve, local) == "tensor":
            found.add(positional[index])
    found.update(k.arg for k in call.keywords if k.arg is not None and kind_of(k.value, ctx.resolve, local) == "tensor")
    return frozenset(found)


def _unknown(name: str) -> ValueKind:
    return "unknown"


def _class_names(ctx: FileContext) -> set[str]:
    return {node.name for at in ctx.nodes(ast.ClassDef) if isinstance(node := at.node, ast.ClassDef)}


def _compiled_argument_names(ctx: FileContext) -> dict[Span, str]:
    """Compile-site span → the plain name passed as the thing to compile (``model`` in ``torch.compile(model)``)."""
    spans = {site.span for site in ctx.compile_sites if site.form != "method"}
    lines = {span.line for span in spans}
    found: dict[Span, str] = {}
    for at in ctx.nodes(ast.Call):
        call = at.node
        assert isinstance(call, ast.Call)
        if call.lineno not in lines or not call.args or not isinstance(call.args[0], ast.Name):
            continue
        name = call.args[0].id
        if name not in ctx.assigned_names.get(id(call), ()) and (span := ctx.span(call)) in spans:
            found[span] = name  # `model = torch.compile(model)` rebinds the name to the wrapper: not eager-only
    return found


def _compiled_function_globals(ctx: FileContext, table: Usage) -> None:
    """Which module-level names each compiled function of this file loads (the modules it calls, typically)."""
    definitions = {
        node.name: node
        for at in ctx.nodes(ast.FunctionDef)
        if isinstance(node := at.node, ast.FunctionDef) and at.scope.kind == "module"
    }
    for handle in {h for h in table.handles.values() if not h.module}:
        qualname = local_function(ctx, handle.site)
        definition = definitions.get(qualname) if qualname is not None else None
        if definition is None:
            continue
        local = {arg.arg for arg in ast.walk(definition.args) if isinstance(arg, ast.arg)}
        for node in ast.walk(definition):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in local:
                table.compiled_function_globals.setdefault(node.id, []).append(handle)


@dataclass(frozen=True, slots=True)
class UsageCandidate(Candidate):
    """A finding decided per file; ``link`` only applies the compile-site rule (hint when no site is known) and puts
    the sites' recompile limit in place of ``settings.PAST_LIMIT``."""

    message: str
    severity: Severity
    sites: tuple[CompileSite, ...]
    related: tuple[Related, ...] = ()
    fixes: tuple[Fix, ...] = ()
    entries: int = 0
    """The compiles the cost makes, when the code tells (a loop over 12 dtypes): within the sites' recompile limit
    the finding is ``bounded_message`` at ``info``, past it ``message`` at ``severity``."""
    bounded_message: str = ""


def judge_usage(candidate: UsageCandidate, index: WorkspaceIndex) -> Iterator[Finding]:
    rule = get_rule(candidate.code)
    assert rule is not None
    message, severity, related = candidate.message, candidate.severity, candidate.related
    limit = settings.recompile_limit(index, candidate.sites) if candidate.entries else None
    if limit is not None and limit.allows(candidate.entries):
        message, severity = candidate.bounded_message, Severity.INFO
        within = limit.within(candidate.entries)
        if within:  # the project's limit decides: say which
            message, related = message + within, related + limit.related
    message, related = settings.with_limit(index, candidate.sites, message, related)
    yield index.finding(
        rule,
        candidate.span,
        message,
        candidate.sites,
        severity=severity,
        related=related,
        fixes=candidate.fixes,
    )


def site_call(ctx: FileContext, site: CompileSite) -> NodeAt | None:
    """The recorded call node of a compile site (``torch.compile(...)``, ``model.compile()``), if it is a call."""
    for at in ctx.nodes(ast.Call):
        node = at.node
        if getattr(node, "lineno", 0) == site.span.line and ctx.span(node) == site.span:
            return at
    return None


def statements_changing(ctx: FileContext, owners: Iterable[str], kinds: tuple[type[ast.stmt], ...]) -> list[NodeAt]:
    """The statements of ``kinds`` that assign to a member of one of ``owners`` (``model.scale = 2.0``,
    ``cfg["lr"] += 1``), in source order."""
    filed = (at for owner in owners for at in ctx.member_bindings.get(owner, ()))
    found = {id(at.node): at for at in filed if isinstance(at.node, kinds)}
    return sorted(found.values(), key=lambda at: position(at.node))


def call_named(ctx: FileContext, at: NodeAt, names: frozenset[str]) -> ast.Call | None:
    """``at`` as a call of one of the fully qualified ``names`` (through aliases), or None."""
    node = at.node
    if isinstance(node, ast.Call) and ctx.resolve(node.func) in names:
        return node
    return None


def method_calls(ctx: FileContext, names: frozenset[str]) -> Iterator[tuple[NodeAt, ast.Call, ast.Attribute]]:
    """Every call ``receiver.method(...)`` in the file whose method is one of ``names``, with its callee."""
    for at in ctx.nodes(ast.Call):
        call = at.node
        assert isinstance(call, ast.Call)
        if isinstance(call.func, ast.Attribute) and call.func.attr in names:
            yield at, call, call.func


def line_edit_move(ctx: FileContext, statement: ast.stmt, before: ast.stmt) -> tuple[Edit, Edit] | None:
    """Edits that move the one-line ``statement`` to just above ``before`` (same indentation as ``before``)."""
    if statement.end_lineno != statement.lineno:
        return None
    text = ctx.lines.lines[statement.lineno - 1].strip()
    indent = " " * before.col_offset
    path = ctx.path
    remove = Edit(Span(path, statement.lineno, 1, statement.lineno + 1, 1), "")
    insert = Edit(Span(path, before.lineno, 1, before.lineno, 1), f"{indent}{text}\n")
    return insert, remove


SUBMODULE_ITERATORS = frozenset({"modules", "named_modules", "children", "named_children"})


@dataclass(frozen=True, slots=True)
class ModuleReach:
    """How compiled code reaches the module an expression names."""

    sites: frozenset[CompileSite]
    inside: bool
    """The module's own calls are traced into the compiled graph (a submodule of a compiled module, a module a
    compiled function calls, or a ``torch.nn`` module compiled directly), rather than run around it."""


def reach_of(table: Usage, at: NodeAt, receiver: ast.expr) -> ModuleReach | None:
    """Which compile sites run the module ``receiver`` names (``model``, ``model.encoder``, ``layers[0]``, or the
    variable of ``for m in model.modules():``), as seen from the statement ``at``."""
    key = scope_key(at.scope)
    root, steps = root_name(receiver)
    if root is None:
        return None
    handle = table.handle(key, root)
    if handle is not None and handle.module:
        if steps:
            return ModuleReach(frozenset({handle.site}), True)
        # `torch.compile(m)` of a torch.nn module traces `m.__call__` with its hooks (`wrap_inline`); the hooks of a
        # workspace module run outside the compiled frame
        return ModuleReach(frozenset({handle.site}), _torch_nn_instance(table, handle.site))
    users = table.compiled_function_globals.get(root)
    if users:
        return ModuleReach(frozenset(h.site for h in users), True)
    if steps == 0:
        for owner in _submodule_owners(table, at, root):
            outer = reach_of(table, at, owner)
            if outer is not None:
                return ModuleReach(outer.sites, True)
    return None


def after_compiled_run(
    ctx: FileContext, rule: Rule, node: ast.AST, message: str, reach: ModuleReach, earlier: HandleCall
) -> UsageCandidate:
    """A finding at ``node``, on a module that compiled code reaches (``reach``), made after that code ran."""
    ran_first = Related(ctx.span(earlier.call), f"compiled `{earlier.handle.name}` ran here first")
    sites = tuple(sorted(reach.sites, key=lambda s: (s.span.line, s.span.column)))
    return UsageCandidate(rule.code, ctx.span(node), message, rule.default_severity, sites, related=(ran_first,))


def _submodule_owners(table: Usage, at: NodeAt, name: str) -> Iterator[ast.expr]:
    """``model`` when ``name`` is the variable of ``for name in model.modules():`` around ``at``, or of a
    comprehension ``[... for name in model.named_modules()]`` in the statement ``at`` belongs to."""
    for loop in table.enclosing_loops(at):
        if isinstance(loop, ast.For | ast.AsyncFor):
            owner = _submodule_iterable(loop.target, loop.iter, name)
            if owner is not None:
                yield owner
    line = position(at.node)[0]
    for statement in table.ctx.nodes(ast.Expr, ast.Assign, ast.AugAssign):
        node = statement.node
        assert isinstance(node, ast.stmt)
        if not (node.lineno <= line <= (node.end_lineno or node.lineno)):
            continue
        for inner in ast.walk(node):
            if isinstance(inner, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
                for generator in inner.generators:
                    owner = _submodule_iterable(generator.target, generator.iter, name)
                    if owner is not None:
                        yield owner


def _submodule_iterable(target: ast.expr, iterable: ast.expr, name: str) -> ast.expr | None:
    """``model`` in ``for name in model.modules()`` / ``for _, name in model.named_children()``."""
    if not isinstance(iterable, ast.Call) or not isinstance(iterable.func, ast.Attribute):
        return None
    if iterable.func.attr not in SUBMODULE_ITERATORS:
        return None
    if isinstance(target, ast.Tuple) and target.elts:
        target = target.elts[-1]
    return iterable.func.value if isinstance(target, ast.Name) and target.id == name else None


def loop_scalars(loops: list[Loop], literal: Callable[[str], ast.expr | None] | None = None) -> dict[str, Kind]:
    """Names that hold a different Python scalar on each iteration: ``range()`` and ``enumerate()`` counters, the
    variable of a loop over a literal list or tuple of numbers or strings (``for lr in (0.1, 0.01)``, or a name that
    ``literal`` says is bound to one), counters advanced with ``+=`` in the loop body (``step += 1``), and numbers
    read out of a tensor in the loop body (``n = mask.sum().item()``: data, a new value each batch)."""
    counters: dict[str, Kind] = {}
    for loop in loops:
        if isinstance(loop, ast.For | ast.AsyncFor) and isinstance(loop.iter, ast.Call):
            func = loop.iter.func
            name = func.id if isinstance(func, ast.Name) else None
            if name == "range" and isinstance(loop.target, ast.Name):
                counters[loop.target.id] = "int"
            elif name == "enumerate" and isinstance(loop.target, ast.Tuple) and loop.target.elts:
                first = loop.target.elts[0]
                if isinstance(first, ast.Name):
                    counters[first.id] = "int"
        elif isinstance(loop, ast.For | ast.AsyncFor) and isinstance(loop.target, ast.Name):
            values = loop.iter
            if isinstance(values, ast.Name) and literal is not None:
                values = literal(values.id) or values
            kind = _literal_elements(values)
            if kind is not None:
                counters[loop.target.id] = kind
        for statement in ast.walk(loop):
            if (
                isinstance(statement, ast.AugAssign)
                and isinstance(statement.op, ast.Add | ast.Sub)
                and isinstance(statement.target, ast.Name)
                and isinstance(statement.value, ast.Constant)
                and type(statement.value.value) in (int, float)
                and (isinstance(loop, ast.While) or _starts_as_number(statement.target.id, literal))
            ):
                counters[statement.target.id] = "float" if isinstance(statement.value.value, float) else "int"
            elif (
                isinstance(statement, ast.Assign)
                and len(statement.targets) == 1
                and isinstance(statement.targets[0], ast.Name)
                and isinstance(call := statement.value, ast.Call)
                and isinstance(call.func, ast.Attribute)
                and call.func.attr == "item"
                and not call.args
            ):
                counters[statement.targets[0].id] = _item_kind(call.func.value)
    return counters


INTEGER_REDUCTIONS = frozenset({"numel", "argmax", "argmin", "count_nonzero", "long", "int"})
"""Tensor methods whose result holds integers (an ``.item()`` of it is an ``int``)."""


def _item_kind(tensor: ast.expr) -> Kind:
    """The Python kind ``tensor.item()`` returns, as far as the expression tells: ``int`` for a count (``.sum()`` of
    a comparison, ``.numel()``, ``.argmax()``, ``.long()``), else ``float``."""
    if isinstance(tensor, ast.Call) and isinstance(tensor.func, ast.Attribute):
        method, receiver = tensor.func.attr, tensor.func.value
        if method in INTEGER_REDUCTIONS:
            return "int"
        if method in ("sum", "max", "min") and _is_comparison(receiver):
            return "int"
        if method in ("sum", "max", "min"):
            return _item_kind(receiver)
    return "float"


def _is_comparison(expr: ast.expr) -> bool:
    """``a > 0``, ``labels.ne(-100)``, ``(x == y)``: a bool tensor."""
    if isinstance(expr, ast.Compare):
        return True
    return (
        isinstance(expr, ast.Call)
        and isinstance(expr.func, ast.Attribute)
        and expr.func.attr in ("ne", "eq", "gt", "ge", "lt", "le", "isnan", "isfinite", "logical_not", "bool")
    )


def _starts_as_number(name: str, literal: Callable[[str], ast.expr | None] | None) -> bool:
    """``name`` was last bound to a number literal (``step = 0``) before the loop, not to a tensor that ``+= 1``
    advances in place (``input_pos = torch.tensor([T])``)."""
    value = literal(name) if literal is not None else None
    return isinstance(value, ast.Constant) and type(value.value) in (int, float)


def _literal_elements(values: ast.expr) -> Kind | None:
    """The one kind of the distinct constants of a literal list or tuple (``[0.1, 0.01]`` → float), else None."""
    if not isinstance(values, ast.List | ast.Tuple) or len(values.elts) < 2:
        return None
    if not all(isinstance(e, ast.Constant) for e in values.elts):
        return None
    constants = [e.value for e in values.elts if isinstance(e, ast.Constant)]
    kinds = {type(c) for c in constants}
    if len(kinds) != 1 or len(set(constants)) < 2:
        return None
    return _CONSTANT_KINDS.get(kinds.pop())


_CONSTANT_KINDS: dict[type, Kind] = {int: "int", float: "float", str: "str"}


def scalar_kind(expr: ast.expr, counters: dict[str, Kind]) -> Kind | None:
    """The scalar kind of ``expr`` if it changes with the loop counters, else None."""
    if isinstance(expr, ast.Name):
        return counters.get(expr.id)
    if isinstance(expr, ast.JoinedStr):
        varying = any(
            isinstance(part, ast.FormattedValue) and names_in(part.value) & counters.keys() for part in expr.values
        )
        return "str" if varying else None
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.USub | ast.UAdd):
        return scalar_kind(expr.operand, counters)
    if isinstance(expr, ast.Compare) and not any(isinstance(op, ast.Is | ast.IsNot) for op in expr.ops):
        operands = (expr.left, *expr.comparators)
        if any(scalar_kind(o, counters) in ("int", "float") for o in operands):
            return "bool"  # `step < warmup_steps`: True for a while, then False
        return None
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ARITHMETIC):
        left, right = _numeric(expr.left, counters), _numeric(expr.right, counters)
        if left is None or right is None or "varying" not in (left[1], right[1]):
            return None
        if isinstance(expr.op, ast.Div) or "float" in (left[0], right[0]):
            return "float"
        return "int"
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and len(expr.args) == 1:
        inner = scalar_kind(expr.args[0], counters)
        if inner is not None:
            return CONVERSIONS.get(expr.func.id)
    return None


def _numeric(expr: ast.expr, counters: dict[str, Kind]) -> tuple[str, str] | None:
    """(kind, "varying" | "constant") of an arithmetic operand, None if it is not a plain number."""
    if isinstance(expr, ast.Constant) and type(expr.value) in (int, float):
        return ("float" if isinstance(expr.value, float) else "int", "constant")
    kind = scalar_kind(expr, counters)
    if kind in ("int", "float"):
        return (kind, "varying")
    return None


READ_EVENTS = frozenset({"read", "aug", "mutate", "call", "inplace"})


def compiled_code_reads(
    index: WorkspaceIndex, key: tuple[str, str], attr: str, *, reached_only: bool = True
) -> AttrInit | bool | None:
    """Whether a method of class ``key`` that a compile site reaches (any method if not ``reached_only``) reads
    ``self.<attr>``: False if none does, else the ``__init__`` assignment of the attribute (None when ``__init__``
    does not set it)."""
    for owner in index.mro(key)[0]:
        summary = index.class_summary(owner)
        if summary is None:
            continue
        for method in summary.methods:
            if reached_only and not index.sites_for_method(owner, method.name):
                continue
            if any(event.attr == attr and event.kind in READ_EVENTS for event in method.events):
                found = index.init_attr(key, attr)
                return found[1] if found is not None else None
    return False


def value_kind(expr: ast.expr, counters: dict[str, Kind]) -> tuple[str, bool]:
    """The Python kind of an assigned value and whether it changes from one iteration to the next."""
    if isinstance(expr, ast.Constant):
        value = expr.value
        literal = "bool" if isinstance(value, bool) else type(value).__name__
        return (literal if literal in ("int", "float", "str", "bool") else "unknown"), False
    if isinstance(expr, ast.Compare | ast.BoolOp) or (isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Not)):
        return "bool", bool(names_in(expr) & counters.keys())
    kind = scalar_kind(expr, counters)
    if kind is not None:
        return kind, True
    return "unknown", bool(names_in(expr) & counters.keys())
