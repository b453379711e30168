"""The one walk over a file's tree.

It fills the :class:`~dynamo_lens.static.context.FileContext` (aliases, local definitions, nodes by type) and, in
the same pass, records classes, functions, instance bindings and the ordered ``self.<attr>`` events of every method.
Names are resolved after the walk (:meth:`Walker.finish`), so that a class used above its definition, or an alias
assigned below its use, still resolves.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

from dynamo_lens.model import Span
from dynamo_lens.static import exprs
from dynamo_lens.static.context import (
    DISABLE_DECORATORS,
    HASATTR,
    PARTIAL,
    RESETS,
    SELF_FLAG,
    SETTER,
    FileContext,
    NodeAt,
    Scope,
    function_qualname,
)
from dynamo_lens.static.exprs import Expr
from dynamo_lens.static.semantic import lowering as lowering_limits
from dynamo_lens.static.semantic.classes import AUTOGRAD_FUNCTIONS, owner_links
from dynamo_lens.static.semantic.contexts import (
    NO_GRAD,
    autocast_context,
    compiling_test,
    forces_eager,
    grad_context,
    method_grad_context,
)
from dynamo_lens.static.semantic.lowering import Lowering
from dynamo_lens.static.semantic.settings import settings_in
from dynamo_lens.static.semantic.values import SCALAR_KINDS, ValueKind, kind_of, range_loop_names
from dynamo_lens.static.summary import (
    LOCAL,
    AttrInit,
    AttrKind,
    AttrWrite,
    CallRef,
    CallSite,
    ClassSummary,
    DynamoSetting,
    EventKind,
    FunctionSummary,
    MethodKind,
    MethodSummary,
    ModeSwitch,
    ModuleBinding,
    Ref,
    StateEvent,
)

GROWING_METHODS = frozenset({"append", "extend", "insert", "add", "update", "setdefault", "appendleft", "extendleft"})
SHRINKING_METHODS = frozenset({"pop", "popitem", "remove", "discard", "clear", "popleft"})
CONTAINER_METHODS = GROWING_METHODS | SHRINKING_METHODS
"""Methods that change a container in place: the call reads the attribute (guard) and changes what it holds."""

_REGISTER_KIND: dict[str, AttrKind] = {
    "register_buffer": "buffer", "register_parameter": "parameter", "add_module": "submodule",
    "register_module": "submodule",
}  # fmt: skip
_LEAVES = frozenset(
    {ast.Name, ast.Constant, ast.Load, ast.Store, ast.Del, ast.alias}
    | {cls for base in (ast.operator, ast.unaryop, ast.cmpop, ast.boolop) for cls in base.__subclasses__()}
)
"""Node types with nothing below them that the walk records."""
_RECORDED = frozenset(
    {*ast.stmt.__subclasses__(), ast.Call, ast.Lambda, ast.ListComp, ast.GeneratorExp, ast.SetComp, ast.DictComp}
)
"""Node types :meth:`FileContext.nodes` returns."""
_BINDINGS = frozenset({ast.Assign, ast.AnnAssign, ast.AugAssign})
"""Statements filed by what their targets bind (:attr:`FileContext.name_bindings` and the like)."""


K = TypeVar("K")


def _merge(into: dict[K, list[NodeAt]], recorded: dict[K, list[NodeAt]]) -> None:
    """Append a block's recorded nodes to the file's (blocks are added in source order)."""
    for key, found in recorded.items():
        bucket = into.get(key)
        if bucket is None:
            into[key] = list(found)
        else:
            bucket.extend(found)


def _file(index: dict[str, list[NodeAt]], key: str, at: NodeAt) -> None:
    found = index.get(key)
    if found is None:
        index[key] = [at]
    elif found[-1] is not at:  # `x.a = x.b = 0`: one statement is filed once under each key
        found.append(at)


@dataclass(slots=True)
class _Event:
    kind: EventKind
    attr: str
    node: ast.AST
    branch: tuple[int, ...]
    value_kind: AttrKind = "unknown"
    detail: str = ""
    text: str = ""
    ctor: ast.AST | None = None
    statement: ast.AST | None = None
    value: ast.AST | None = None
    """For ``write``: the assigned value (lowered into ``ClassSummary.attr_values``)."""
    unpacked: tuple[ast.AST, int] | None = None
    """For a ``write`` by tuple assignment (``self.model, self.ref = build()``): the value unpacked and the target's
    position in it (lowered into ``ClassSummary.attr_values`` as that item)."""
    guarded: bool = False
    eager_only: bool = False
    requires: tuple[tuple[str, str, bool], ...] = ()
    first_call: tuple[tuple[str, str, bool], ...] = ()


@dataclass(slots=True)
class _FunctionBuilder:
    scope: Scope
    node: ast.FunctionDef | ast.AsyncFunctionDef
    kind: MethodKind
    disabled: bool
    self_name: str | None
    is_init: bool
    events: list[_Event] = field(default_factory=list)
    path: list[int] = field(default_factory=list)
    """The ``if``/loop/``try`` bodies enclosing the current point, innermost last (ids unique in the method)."""
    bodies: int = 0
    read_since_change: set[str] = field(default_factory=set)
    """Attributes already read since their last change: a repeated read adds nothing to the flow analysis."""
    lookups: set[str] = field(default_factory=set)
    range_bounds: set[str] = field(default_factory=set)
    """Attributes whose keys it looks up (``key in self.cache``, ``self.cache.get(key)``)."""
    member_reads: set[tuple[str, str]] = field(default_factory=set)
    """``self.<attr>.<member>`` loads: (attr, member)."""
    name_member_reads: dict[tuple[str, str], tuple[ast.expr, tuple[int, ...]]] = field(default_factory=dict)
    """``<name>.<member>`` and ``<name>.<a>.<member>`` loads of another name than ``self`` (a parameter, a local):
    the first use of each pair, with the bodies around it (lowered into ``MethodSummary.name_member_reads``)."""
    flags: dict[str, tuple[tuple[str, str, bool], ...]] = field(default_factory=dict)
    """Locals bound to tests of parameters (``compile_in_loader = enable_torch_compile and training_mode``): an
    ``if`` on one requires what the tests require."""


@dataclass(slots=True)
class _InitAttr:
    name: str
    kind: AttrKind
    target: ast.AST
    statement: ast.AST
    value: ast.AST | None
    keys: tuple[str, ...]


@dataclass(slots=True)
class _ClassBuilder:
    scope: Scope
    node: ast.ClassDef
    outer: Scope
    methods: list[_FunctionBuilder] = field(default_factory=list)
    init_attrs: dict[str, _InitAttr] = field(default_factory=dict)
    class_attrs: list[str] = field(default_factory=list)
    class_values: list[tuple[str, ast.expr]] = field(default_factory=list)
    """``name = value`` statements of the class body."""


@dataclass(slots=True)
class _PendingAlias:
    name: str
    value: ast.AST
    scope: Scope


Names = tuple[tuple[tuple[str, Ref], ...], tuple[tuple[str, str], ...]]
"""A snapshot of the names that resolve while a block is walked: the aliases, and the module's own definitions."""
NO_NAMES: Names = ((), ())

FinalNames = tuple[tuple[tuple[str, Ref], ...], tuple[tuple[str, tuple[tuple[str, str], ...]], ...], tuple[str, ...]]
"""Every alias (after :meth:`Walker.finish` resolved them), every scope's definitions and the names of compile
partials: what freezing resolves."""


@dataclass(slots=True, eq=False)
class _Frozen:
    """A block's classes, functions and module-level bindings and calls, frozen: valid for ``names`` while the block
    starts at ``line``."""

    names: FinalNames
    line: int
    classes: tuple[ClassSummary, ...]
    functions: tuple[FunctionSummary, ...]
    bindings: tuple[ModuleBinding, ...]
    calls: tuple[CallSite, ...]
    switches: tuple[ModeSwitch, ...]
    writes: tuple[AttrWrite, ...]
    resets: tuple[tuple[Span, str], ...]
    settings: tuple[DynamoSetting, ...]


@dataclass(slots=True)
class BlockFacts:
    """What :meth:`Walker.finish` froze, for the file's summary."""

    classes: list[ClassSummary] = field(default_factory=list)
    functions: list[FunctionSummary] = field(default_factory=list)
    bindings: list[ModuleBinding] = field(default_factory=list)
    calls: list[CallSite] = field(default_factory=list)
    switches: list[ModeSwitch] = field(default_factory=list)
    writes: list[AttrWrite] = field(default_factory=list)
    resets: list[tuple[Span, str]] = field(default_factory=list)
    settings: list[DynamoSetting] = field(default_factory=list)


@dataclass(slots=True, eq=False)
class BlockWalk:
    """What walking one block of top-level statements recorded.

    The editor's incremental path (``static/incremental.py``) keeps it with its block and replays it instead of
    walking again while the block's statements are the same nodes and the names in scope when it starts are the
    same: nothing a walk records depends on anything else (names used above their definition are resolved later, by
    :meth:`Walker.finish`, which is memoised per block in the same way).
    """

    statements: list[ast.stmt]
    names_before: Names
    names_after: Names = NO_NAMES
    nodes: dict[type[ast.AST], list[NodeAt]] = field(default_factory=dict)
    name_bindings: dict[str, list[NodeAt]] = field(default_factory=dict)
    member_bindings: dict[str, list[NodeAt]] = field(default_factory=dict)
    attribute_bindings: dict[str, list[NodeAt]] = field(default_factory=dict)
    aliases: list[tuple[str, Ref]] = field(default_factory=list)
    definitions: list[tuple[str, str, str]] = field(default_factory=list)
    """(scope qualname, simple name, qualname) of every ``def`` and ``class``."""
    assigned: list[tuple[int, tuple[str, ...]]] = field(default_factory=list)
    classes: list[_ClassBuilder] = field(default_factory=list)
    functions: list[_FunctionBuilder] = field(default_factory=list)
    pending_aliases: list[_PendingAlias] = field(default_factory=list)
    decorated: list[tuple[ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef, Scope]] = field(default_factory=list)
    frozen: _Frozen | None = None
    memo: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    """What checks computed from this block alone (:meth:`FileContext.per_block`)."""


class Walker:
    """Walks one module once, block by block. Use :meth:`run` (the whole module as one block) or :meth:`add` for
    each block in order, then :meth:`finish`."""

    def __init__(
        self, ctx: FileContext, module_scope: Scope | None = None, previous_names: FinalNames | None = None
    ) -> None:
        self.ctx = ctx
        if module_scope is None:
            module_scope = Scope("module", "", ctx.tree, None)
        module_scope.node = ctx.tree
        self.module_scope = module_scope
        """Shared by every version of a file on the incremental path: recorded nodes of reused blocks point at it."""
        self.scope = self.module_scope
        self.loop_depth = 0
        self.branch_depth = 0
        self.function: _FunctionBuilder | None = None
        """The method or function whose body is being walked (None in nested lambdas and at class/module level)."""
        self.path: tuple[int, ...] = ()
        """The bodies of ``function`` that enclose the current point (``NodeAt.path``)."""
        self.guarded = False
        """Inside a body of ``function`` that runs only under a condition (``NodeAt.guarded``)."""
        self.eager_only = False
        """Inside code Dynamo never traces (``NodeAt.eager_only``)."""
        self.range_bound = False
        """Inside the arguments of a ``range()`` call: what is read there is a loop bound."""
        self.comprehension_names: frozenset[str] = frozenset()
        """The names the enclosing comprehensions bind (``s`` in ``sum(s.v for s in xs)``): not the function's."""
        self._range_names: dict[int, frozenset[str]] = {}
        """``range()`` loop variables of each scope, by ``id`` of its node (``_argument_kinds``)."""
        self.grad = ""
        """The grad mode a ``with`` statement or decorator of the current function set (``NodeAt.grad``)."""
        self.forced_eager = False
        """Inside a ``set_stance("force_eager")`` context of the current function (``NodeAt.forced_eager``)."""
        self.grad_from: ast.expr | None = None
        """The expression that set it (for related information)."""
        self.autocast = ""
        """The autocast state a ``with`` statement or decorator of the current function set (``NodeAt.autocast``)."""
        self.autocast_from: ast.expr | None = None
        self.requires: tuple[tuple[str, str, bool], ...] = ()
        """What parameters of the current function must be for the current point to run (``NodeAt.requires``)."""
        self.first_call: tuple[tuple[str, str, bool], ...] = ()
        """The self-resetting tests that alone guard the current point (``NodeAt.first_call``)."""
        self.cls: _ClassBuilder | None = None
        self.blocks: list[BlockWalk] = []
        self.replayed = 0
        """How many blocks :meth:`add` replayed instead of walking."""
        self.block = BlockWalk([], NO_NAMES)
        """The block being walked: what the walk records goes here."""
        self.names = NO_NAMES
        self.previous_names = previous_names
        self.final_names: FinalNames | None = None
        self.import_end = 1
        self._lowering: Lowering | None = None

    # -- driver ------------------------------------------------------------------------------------------------
    def run(self) -> None:
        self.add(self.ctx.tree.body)

    def add(self, statements: list[ast.stmt], previous: BlockWalk | None = None) -> BlockWalk:
        """Walk the next block of top-level statements, or replay ``previous`` (an earlier walk of these very
        statement nodes) when the names in scope are still the ones it was walked with."""
        if previous is not None and previous.statements is statements and self._same_names(previous.names_before):
            block = previous
            self._replay(block)
            self.replayed += 1
        else:
            block = self._walk(statements)
        self.blocks.append(block)
        ctx = self.ctx
        _merge(ctx.by_type, block.nodes)
        _merge(ctx.name_bindings, block.name_bindings)
        _merge(ctx.member_bindings, block.member_bindings)
        _merge(ctx.attribute_bindings, block.attribute_bindings)
        for statement in statements:
            if isinstance(statement, ast.Import | ast.ImportFrom):
                self.import_end = (statement.end_lineno or statement.lineno) + 1
        return block

    @property
    def decorated(self) -> list[tuple[ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef, Scope]]:
        return [found for block in self.blocks for found in block.decorated]

    def _same_names(self, names: Names) -> bool:
        if names is self.names:
            return True
        if names == self.names:
            self.names = names  # the same value again: later blocks compare by identity
            return True
        return False

    def _walk(self, statements: list[ast.stmt]) -> BlockWalk:
        block = self.block = BlockWalk(statements, self.names)
        for statement in statements:
            self.visit(statement)
        if block.aliases or any(not scope for scope, _, _ in block.definitions):
            self.names = (tuple(self.ctx.aliases.items()), tuple(self.ctx.local_defs.get("", {}).items()))
        block.names_after = self.names
        return block

    def _replay(self, block: BlockWalk) -> None:
        ctx = self.ctx
        for name, ref in block.aliases:
            ctx.aliases[name] = ref
        for scope, name, qualname in block.definitions:
            ctx.local_defs.setdefault(scope, {})[name] = qualname
            ctx.defined_names.add(name)
        for key, names in block.assigned:
            ctx.assigned_names[key] = names
        self.names = block.names_after

    def visit(self, node: ast.AST) -> None:
        kind = type(node)
        if kind in _LEAVES:
            return
        if kind in _RECORDED:
            bucket = self.block.nodes.get(kind)
            if bucket is None:
                bucket = self.block.nodes[kind] = []
            at = NodeAt(
                node,
                self.scope,
                self.loop_depth,
                self.branch_depth,
                self.path,
                self.guarded,
                self.eager_only,
                self.grad,
                self.grad_from,
                self.requires,
                self.first_call,
                self.forced_eager,
                self.autocast,
                self.autocast_from,
            )
            bucket.append(at)
            if kind in _BINDINGS:
                self._index_targets(node, at)
        handler = _HANDLERS.get(kind)
        if handler is None:
            self.generic(node)
        else:
            handler(self, node)

    def _index_targets(self, node: ast.AST, at: NodeAt) -> None:
        """File the assignment under the names its targets bind or change (``FileContext.name_bindings`` ...)."""
        targets = node.targets if isinstance(node, ast.Assign) else (node.target,)  # type: ignore[attr-defined]
        for target in targets:
            self._index_target(target, at)

    def _index_target(self, target: ast.AST, at: NodeAt) -> None:
        if isinstance(target, ast.Tuple | ast.List):
            for element in target.elts:
                self._index_target(element, at)
        elif isinstance(target, ast.Starred):
            self._index_target(target.value, at)
        elif isinstance(target, ast.Name):
            _file(self.block.name_bindings, target.id, at)
        elif isinstance(target, ast.Attribute | ast.Subscript):
            if isinstance(target, ast.Attribute):
                _file(self.block.attribute_bindings, target.attr, at)
            root: ast.AST = target.value
            while isinstance(root, ast.Attribute | ast.Subscript):
                root = root.value
            if isinstance(root, ast.Name):
                _file(self.block.member_bindings, root.id, at)

    def generic(self, node: ast.AST) -> None:
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, list):
                for item in value:
                    if isinstance(item, ast.AST):
                        self.visit(item)
            elif isinstance(value, ast.AST):
                self.visit(value)

    def visit_all(self, nodes: list[ast.stmt] | list[ast.expr]) -> None:
        for node in nodes:
            self.visit(node)

    # -- imports and names ---------------------------------------------------------------------------------------
    def _import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.asname:
                self._alias(alias.asname, Ref(alias.name))
            else:
                top = alias.name.partition(".")[0]
                self._alias(top, Ref(top))

    def _import_from(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        for alias in node.names:
            if alias.name == "*":
                continue
            dotted = f"{module}.{alias.name}" if module else alias.name
            self._alias(alias.asname or alias.name, Ref(dotted, node.level))

    def _alias(self, name: str, ref: Ref) -> None:
        self.ctx.aliases[name] = ref
        self.block.aliases.append((name, ref))

    def _define(self, name: str) -> str:
        qualname = f"{self.scope.qualname}.{name}" if self.scope.qualname else name
        self.ctx.local_defs.setdefault(self.scope.qualname, {})[name] = qualname
        self.ctx.defined_names.add(name)
        self.block.definitions.append((self.scope.qualname, name, qualname))
        return qualname

    # -- definitions ---------------------------------------------------------------------------------------------
    def _class(self, node: ast.ClassDef) -> None:
        self.visit_all(node.decorator_list)
        self.visit_all(node.bases)
        for keyword in node.keywords:
            self.visit(keyword.value)
        if node.decorator_list:
            self.block.decorated.append((node, self.scope))
        outer = self.scope
        scope = Scope("class", self._define(node.name), node, outer)
        builder = _ClassBuilder(scope, node, outer)
        self.block.classes.append(builder)
        saved = (self.scope, self.cls, self.function, self.loop_depth, self.branch_depth, self.path)
        self.scope, self.cls, self.function = scope, builder, None
        self.loop_depth, self.branch_depth, self.path = 0, 0, ()
        for statement in node.body:
            self.visit(statement)
            if isinstance(statement, ast.Assign):
                names = [t.id for t in statement.targets if isinstance(t, ast.Name)]
                builder.class_attrs.extend(names)
                builder.class_values.extend((name, statement.value) for name in names)
            elif isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
                builder.class_attrs.append(statement.target.id)
        self.scope, self.cls, self.function, self.loop_depth, self.branch_depth, self.path = saved

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.visit_all(node.decorator_list)
        args = node.args
        self.visit_all([d for d in args.defaults if d is not None])
        self.visit_all([d for d in args.kw_defaults if d is not None])
        if node.decorator_list:
            self.block.decorated.append((node, self.scope))
        parent = self.scope
        params = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
        if args.vararg:
            params.append(args.vararg.arg)
        if args.kwarg:
            params.append(args.kwarg.arg)
        qualname = function_qualname(parent, node)
        setter = qualname.endswith(f".{SETTER}")
        if not setter:
            self._define(node.name)
        scope = Scope("function", qualname, node, parent, frozenset(params))
        kind: MethodKind = "setter" if setter else "method"
        disabled = False
        for decorator in node.decorator_list:
            target = decorator.func if isinstance(decorator, ast.Call) else decorator
            dotted = self.ctx.resolve(target) or (target.id if isinstance(target, ast.Name) else "")
            if dotted in ("property", "functools.cached_property") or (
                isinstance(target, ast.Attribute) and target.attr in ("getter",)
            ):
                kind = "property"
            elif dotted == "staticmethod":
                kind = "staticmethod"
            elif dotted == "classmethod":
                kind = "classmethod"
            elif dotted in DISABLE_DECORATORS:
                disabled = True
        if setter:
            kind = "setter"
        in_class = parent.kind == "class" and self.cls is not None
        positional = [*args.posonlyargs, *args.args]
        self_name = positional[0].arg if in_class and kind != "staticmethod" and positional else None
        builder = _FunctionBuilder(
            scope, node, kind, disabled, self_name if kind != "classmethod" else None, node.name == "__init__"
        )
        if in_class and self.cls is not None:
            self.cls.methods.append(builder)
        else:
            self.block.functions.append(builder)
        saved = (self.scope, self.function, self.loop_depth, self.branch_depth, self.path, self.guarded)
        saved_grad = (self.grad, self.grad_from, self.forced_eager, self.autocast, self.autocast_from)
        self.scope, self.function, self.loop_depth, self.branch_depth, self.path = scope, builder, 0, 0, ()
        self.guarded, self.grad, self.grad_from, self.autocast, self.autocast_from = False, "", None, "", None
        self.forced_eager = any(forces_eager(self.ctx, d) for d in node.decorator_list)
        saved_requires, self.requires = self.requires, ()
        saved_first_call, self.first_call = self.first_call, ()
        if in_class and self.cls is not None and node.name in ("forward", "backward"):
            # autograd runs a Function's forward and backward with grad disabled (`Function.apply`)
            base = next((b for b in self.cls.node.bases if self.ctx.resolve(b) in AUTOGRAD_FUNCTIONS), None)
            if base is not None:
                self.grad, self.grad_from = NO_GRAD, base
        for decorator in node.decorator_list:
            mode = grad_context(self.ctx, decorator)
            if mode is not None:
                self.grad, self.grad_from = mode, decorator
            autocast = autocast_context(self.ctx, decorator)
            if autocast is not None:
                self.autocast, self.autocast_from = autocast, decorator
        self._statements(node.body)
        self.scope, self.function, self.loop_depth, self.branch_depth, self.path, self.guarded = saved
        self.grad, self.grad_from, self.forced_eager, self.autocast, self.autocast_from = saved_grad
        self.requires = saved_requires
        self.first_call = saved_first_call

    def _comprehension(self, node: ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp) -> None:
        saved = self.comprehension_names
        bound = {n.id for g in node.generators for n in ast.walk(g.target) if isinstance(n, ast.Name)}
        self.comprehension_names = saved | bound
        self.generic(node)
        self.comprehension_names = saved

    def _lambda(self, node: ast.Lambda) -> None:
        saved = self.function
        self.function = None  # a lambda body runs later, not where it is written
        self.visit(node.body)
        self.function = saved

    # -- control flow --------------------------------------------------------------------------------------------
    def _branch(
        self,
        bodies: list[list[ast.stmt]],
        loop: bool = False,
        guarded: bool = True,
        first_call: tuple[str, str, bool] | None = None,
    ) -> None:
        """Walk alternative bodies (``if``/``else``, a loop body, ``try`` clauses): each may run or not.
        ``guarded``: whether they run only when some condition holds (``if``, ``except``, ``case``), as opposed to
        whenever their statement runs (loop bodies, the ``try`` body, ``finally``). ``first_call``: the
        self-resetting test that guards the (single) body (``NodeAt.first_call``)."""
        saved = self.first_call
        if guarded:
            # only self-resetting tests all the way up: the point runs on the first call
            self.first_call = (*saved, first_call) if first_call is not None and (saved or not self.guarded) else ()
        self._bodies([(body, guarded, self.eager_only) for body in bodies], loop)
        self.first_call = saved

    def _bodies(self, bodies: list[tuple[list[ast.stmt], bool, bool]], loop: bool = False) -> None:
        """:meth:`_branch` with, per body, whether it is guarded and whether only eager code runs it."""
        function = self.function
        saved = (self.guarded, self.eager_only)
        self.branch_depth += 1
        self.loop_depth += loop
        for body, guarded, eager_only in bodies:
            if function is not None:
                function.bodies += 1
                function.path.append(function.bodies)
                function.read_since_change.clear()  # a read in this body may be the first on its path
                self.path = tuple(function.path)
            self.guarded = saved[0] or guarded
            self.eager_only = saved[1] or eager_only
            self._statements(body)
            if function is not None:
                function.path.pop()
                function.read_since_change.clear()
                self.path = tuple(function.path)
        self.guarded, self.eager_only = saved
        self.loop_depth -= loop
        self.branch_depth -= 1

    def _statements(self, statements: list[ast.stmt]) -> None:
        """Walk a body in order. After ``if torch.compiler.is_compiling(): return ...`` only eager code runs on;
        after ``if not normalize: return ...`` the rest runs only when ``normalize`` is true."""
        saved = (self.eager_only, self.requires)
        for statement in statements:
            self.visit(statement)
            if not isinstance(statement, ast.If) or not statement.body:
                continue
            if not isinstance(statement.body[-1], ast.Return | ast.Raise | ast.Continue | ast.Break):
                continue
            if compiling_test(statement.test, self.ctx) is True:
                self.eager_only = True
            test = self._parameter_test(statement.test)
            if test is not None:
                self.requires = (*self.requires, (test[0], test[1], not test[2]))
        self.eager_only, self.requires = saved

    def _parameter_test(self, test: ast.expr) -> tuple[str, str, bool] | None:
        """``(param, "truth" | "none", expected)`` when ``test`` is true exactly when a parameter of the current
        function is truthy (``p``), falsy (``not p``), None (``p is None``) or not None (``p is not None``)."""
        function = self.function
        negated = False
        while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            test, negated = test.operand, not negated
        found: tuple[str, str, bool] | None = None
        if isinstance(test, ast.Name | ast.Attribute):
            found = (self._tested(test), "truth", True)
        elif _hasattr_self(test, function.self_name if function is not None else None):
            assert isinstance(test, ast.Call) and isinstance(test.args[1], ast.Constant)
            found = (SELF_FLAG + str(test.args[1].value), HASATTR, True)
        elif (
            isinstance(test, ast.Compare)
            and isinstance(test.left, ast.Name | ast.Attribute)
            and len(test.ops) == 1
            and isinstance(test.ops[0], ast.Is | ast.IsNot)
            and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value is None
        ):
            found = (self._tested(test.left), "none", isinstance(test.ops[0], ast.Is))
        if found is None or function is None or not found[0]:
            return None
        if found[0] not in function.scope.params and not found[0].startswith(SELF_FLAG):
            return None
        return (found[0], found[1], found[2] != negated)

    def _conjunct_tests(self, test: ast.expr) -> tuple[tuple[str, str, bool], ...]:
        """The parameter tests among the operands of an ``and``: each must hold for its body to run, whatever the
        other operands test (``if not is_model_compiled and compile_config is not None:``)."""
        if not isinstance(test, ast.BoolOp) or not isinstance(test.op, ast.And):
            return ()
        return tuple(t for value in test.values if (t := self._parameter_test(value)) is not None)

    def _flag_tests(self, test: ast.expr) -> tuple[tuple[str, str, bool], ...]:
        """What ``if <local>:`` requires when the local was bound to tests of parameters."""
        if self.function is None or not isinstance(test, ast.Name):
            return ()
        return self.function.flags.get(test.id, ())

    def _tested(self, node: ast.Name | ast.Attribute) -> str:
        """What a test names: a parameter (``normalize``), ``self.<attr>`` for an attribute of the method's instance
        (``self.cache_labels``), ``""`` otherwise."""
        if isinstance(node, ast.Name):
            return node.id
        attr = self._self_attr(node)
        return SELF_FLAG + attr if attr is not None else ""

    def _if(self, node: ast.If) -> None:
        self.visit(node.test)
        compiling = compiling_test(node.test, self.ctx)
        test = self._parameter_test(node.test)
        conjuncts: tuple[tuple[str, str, bool], ...] = ()
        if test is None and compiling is None:
            conjuncts = self._conjunct_tests(node.test) or self._flag_tests(node.test)
        if conjuncts:  # `if hasattr(self, "x") and not self.x:` the body needs each; the else arm, not all
            saved = self.requires
            self.requires = (*saved, *conjuncts)
            self._branch([node.body])
            self.requires = saved
            self._branch([node.orelse])
        elif compiling is None and test is None:
            self._branch([node.body, node.orelse])
        elif compiling is None:
            assert test is not None
            saved = self.requires
            self.requires = (*saved, test)
            self._branch([node.body], first_call=test if _resets(node.body, test, self._self_attr) else None)
            self.requires = (*saved, (test[0], test[1], not test[2]))
            self._branch([node.orelse])
            self.requires = saved
        else:  # Dynamo folds `is_compiling()` to True: one arm is all compiled code runs, the other eager only
            eager = self.eager_only
            self._bodies([(node.body, eager, eager or not compiling), (node.orelse, eager, eager or compiling)])

    def _for(self, node: ast.For | ast.AsyncFor) -> None:
        self.visit(node.iter)
        self.visit(node.target)
        self._branch([node.body], loop=True, guarded=False)
        self._branch([node.orelse])

    def _while(self, node: ast.While) -> None:
        self.visit(node.test)
        self._branch([node.body], loop=True, guarded=False)
        self._branch([node.orelse])

    def _try(self, node: ast.Try) -> None:
        self._branch([node.body], guarded=False)
        for handler in node.handlers:
            if handler.type is not None:
                self.visit(handler.type)
            self._branch([handler.body])
        self._branch([node.orelse])
        self._branch([node.finalbody], guarded=False)

    def _with(self, node: ast.With | ast.AsyncWith) -> None:
        saved = (self.grad, self.grad_from, self.forced_eager, self.autocast, self.autocast_from)
        for item in node.items:
            self.visit(item.context_expr)
            if item.optional_vars is not None:
                self.visit(item.optional_vars)
            self.forced_eager = self.forced_eager or forces_eager(self.ctx, item.context_expr)
            mode = grad_context(self.ctx, item.context_expr)
            if mode is None and self.function is not None and self.cls is not None:
                mode = method_grad_context(self.ctx, item.context_expr, self.cls.node, self.function.self_name)
            if mode is not None:
                self.grad, self.grad_from = mode, item.context_expr
            autocast = autocast_context(self.ctx, item.context_expr)
            if autocast is not None:
                self.autocast, self.autocast_from = autocast, item.context_expr
        self._statements(node.body)
        self.grad, self.grad_from, self.forced_eager, self.autocast, self.autocast_from = saved

    def _match(self, node: ast.Match) -> None:
        self.visit(node.subject)
        for case in node.cases:
            if case.guard is not None:
                self.visit(case.guard)
            self._branch([case.body])

    # -- state events --------------------------------------------------------------------------------------------
    def _self_attr(self, node: ast.AST) -> str | None:
        """``attr`` when ``node`` is ``self.attr`` in a method body being walked."""
        function = self.function
        if (
            function is not None
            and function.self_name is not None
            and isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == function.self_name
        ):
            return node.attr
        return None

    def _event(self, kind: EventKind, attr: str, node: ast.AST, **extra: object) -> _Event | None:
        function = self.function
        if function is None:
            return None
        if kind == "read":
            if attr in function.read_since_change:
                return None  # the first read of a run is the one that can be carried across calls
            function.read_since_change.add(attr)
        elif kind != "call":
            function.read_since_change.discard(attr)
        event = _Event(kind, attr, node, tuple(function.path), **extra)  # type: ignore[arg-type]
        event.guarded, event.eager_only, event.requires = self.guarded, self.eager_only, self.requires
        event.first_call = self.first_call
        function.events.append(event)
        return event

    def _compare(self, node: ast.Compare) -> None:
        function = self.function
        if function is not None and any(isinstance(op, ast.In | ast.NotIn) for op in node.ops):
            for operand in node.comparators:
                attr = self._self_attr(operand)
                if attr is not None:
                    function.lookups.add(attr)
        self.generic(node)

    def _attribute(self, node: ast.Attribute) -> None:
        attr = self._self_attr(node)
        if attr is None:
            owner = self._self_attr(node.value)
            function = self.function
            if owner is not None and isinstance(node.ctx, ast.Load) and function is not None:
                function.member_reads.add((owner, node.attr))
                if self.range_bound:
                    function.range_bounds.add(f"{owner}.{node.attr}")
            elif (
                isinstance(node.ctx, ast.Load)
                and function is not None
                and (receiver := _dotted(node.value)) is not None
                and (root := receiver.partition(".")[0]) != function.self_name
                and root not in self.comprehension_names
                and (root not in self.ctx.aliases or root in function.scope.params)  # not `torch.x`
            ):
                function.name_member_reads.setdefault((receiver, node.attr), (node.value, tuple(function.path)))
            self.visit(node.value)
        elif isinstance(node.ctx, ast.Load):
            if self.range_bound and self.function is not None:
                self.function.range_bounds.add(attr)
            self._event("read", attr, node)

    def _call(self, node: ast.Call) -> None:
        func = node.func
        function = self.function
        if function is not None and function.self_name is not None and self._self_call(node, func):
            return
        if isinstance(func, ast.Name) and func.id == "range" and not self.range_bound:
            self.range_bound = True
            self._visit_arguments(node)
            self.range_bound = False
            return
        self.visit(func)
        self.visit_all(node.args)
        for keyword in node.keywords:
            self.visit(keyword.value)

    def _visit_arguments(self, node: ast.Call) -> None:
        self.visit_all(node.args)
        for keyword in node.keywords:
            self.visit(keyword.value)

    def _self_call(self, node: ast.Call, func: ast.expr) -> bool:
        """Record ``self.m()``, ``self.x.append()``, ``self.buf.add_()``, ``setattr(self, ...)``; True if handled."""
        if isinstance(func, ast.Attribute):
            method = self._self_attr(func)
            if method is not None:  # self.m(...) / self.sub(...)
                self._visit_arguments(node)
                register = _REGISTER_KIND.get(method)
                name = _constant_str(node.args[0]) if register and node.args else None
                if register and name is not None:
                    self._register(name, register, node)
                else:
                    self._event("call", method, node)
                return True
            owner = self._self_attr(func.value)
            if owner is not None:  # self.attr.method(...)
                self._visit_arguments(node)
                name = func.attr
                if name in CONTAINER_METHODS:
                    self._event("mutate", owner, node, detail=name, value=node.args[-1] if node.args else None)
                elif name.endswith("_") and not name.startswith("_"):
                    self._event("inplace", owner, node, detail=name)
                else:
                    if name in ("get", "setdefault", "__contains__") and self.function is not None:
                        self.function.lookups.add(owner)
                    self._event("read", owner, func.value)
                return True
            if (
                isinstance(func.value, ast.Call)
                and isinstance(func.value.func, ast.Name)
                and func.value.func.id == "super"
            ):
                self._visit_arguments(node)
                self._event("call", func.attr, node, detail="super")
                return True
            return False
        if isinstance(func, ast.Name) and func.id in ("setattr", "getattr", "hasattr", "delattr") and node.args:
            function = self.function
            if function is None or not (isinstance(node.args[0], ast.Name) and node.args[0].id == function.self_name):
                return False
            self._visit_arguments(node)
            name = _constant_str(node.args[1]) if len(node.args) > 1 else None
            if func.id == "setattr" and len(node.args) == 3:
                if name is not None:
                    self._write(name, node, node.args[2])
                elif _mentions(node.args[1], function.scope.params):
                    self._event("setattr", "", node, text=self.ctx.source(node.args[1]))
            elif func.id == "delattr" and name is not None:
                self._event("write", name, node, detail="del")
            elif name is not None:
                self._event("read", name, node)
            return True
        return False

    def _register(self, name: str, kind: AttrKind, node: ast.Call) -> None:
        function = self.function
        value = node.args[1] if len(node.args) > 1 else None
        self._event("write", name, node, value_kind=kind, value=value)
        if function is not None and function.is_init and self.cls is not None:
            self.cls.init_attrs.setdefault(name, _InitAttr(name, kind, node, node, value, ()))

    # -- assignments ---------------------------------------------------------------------------------------------
    def _assign(self, node: ast.Assign) -> None:
        value = node.value
        self.visit(value)
        names = tuple(t.id for t in node.targets if isinstance(t, ast.Name))
        # `f = torch.compile(f)`, and each arm of `f = jit(f) if thunder else torch.compile(f)`
        for assigned in _arms(value) if names else ():
            if isinstance(assigned, ast.Call | ast.Name | ast.Attribute):
                self.ctx.assigned_names[id(assigned)] = names
                self.block.assigned.append((id(assigned), names))
        if names and isinstance(value, ast.Call | ast.Name | ast.Attribute) and _may_alias(value, self.ctx):
            self.block.pending_aliases.extend(_PendingAlias(name, value, self.scope) for name in names)
        for target in node.targets:
            self._store(target, value, node)
        if self.function is not None and len(names) == 1 == len(node.targets):
            tests = self._conjunct_tests(value)
            single = self._parameter_test(value) if not tests else None
            tests = tests or ((single,) if single is not None else ())
            if tests:
                self.function.flags[names[0]] = tests
            else:
                self.function.flags.pop(names[0], None)

    def _ann_assign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.visit(node.value)
            self._store(node.target, node.value, node)

    def _aug_assign(self, node: ast.AugAssign) -> None:
        self.visit(node.value)
        target = node.target
        attr = self._self_attr(target)
        if attr is not None:
            self._event(
                "aug",
                attr,
                target,
                value_kind=kind_of(node.value, self.ctx.resolve),
                detail=type(node.op).__name__,
                text=self.ctx.source(node.value),
                statement=node,
            )
        elif isinstance(target, ast.Subscript) and (owner := self._self_attr(target.value)) is not None:
            self.visit(target.slice)
            self._event("mutate", owner, target, detail="setitem-aug", text=_key_text(target.slice))
        else:
            self.visit(target)

    def _delete(self, node: ast.Delete) -> None:
        for target in node.targets:
            attr = self._self_attr(target)
            if attr is not None:
                self._event("write", attr, target, detail="del")
            elif isinstance(target, ast.Subscript) and (owner := self._self_attr(target.value)) is not None:
                self.visit(target.slice)
                self._event("mutate", owner, target, detail="delitem")
            else:
                self.visit(target)

    def _store(
        self, target: ast.AST, value: ast.AST | None, statement: ast.AST, unpacked: tuple[ast.AST, int] | None = None
    ) -> None:
        attr = self._self_attr(target)
        if attr is not None:
            self._write(attr, target, value, statement, unpacked)
            return
        if isinstance(target, ast.Tuple | ast.List):
            positional = value is not None and not any(isinstance(e, ast.Starred) for e in target.elts)
            for position, element in enumerate(target.elts):
                self._store(element, None, statement, (value, position) if positional and value else None)
            return
        if isinstance(target, ast.Starred):
            self._store(target.value, None, statement)
            return
        if isinstance(target, ast.Subscript):
            owner = self._self_attr(target.value)
            if owner is not None:
                self.visit(target.slice)
                key = _constant_key(target.slice)
                if owner == "__dict__":  # self.__dict__[k] = v
                    function = self.function
                    if key is not None:
                        self._write(key, target, value, statement)
                    elif function is not None and _mentions(target.slice, function.scope.params):
                        self._event("setattr", "", target, text=self.ctx.source(target.slice))
                else:
                    self._event("mutate", owner, target, detail="setitem", text=_key_text(target.slice), value=value)
                return
        self.visit(target)

    def _write(
        self,
        attr: str,
        target: ast.AST,
        value: ast.AST | None,
        statement: ast.AST | None = None,
        unpacked: tuple[ast.AST, int] | None = None,
    ) -> None:
        function = self.function
        if function is None:
            return
        kind = kind_of(value, self.ctx.resolve)
        detail = ""
        if value is not None and function.self_name is not None:
            if _is_concatenation(value, function.self_name, attr):
                detail = "concat"
            elif _reads_attribute(value, function.self_name, attr):
                detail = "self"
            elif _is_literal(value):
                detail = "const"
            elif isinstance(value, ast.Name) and value.id in function.scope.params and value.id != function.self_name:
                detail = "param"  # `def set_k(self, k): self.k = k`: the caller's argument decides the kind
        ctor = value.func if isinstance(value, ast.Call) and isinstance(value.func, ast.Name | ast.Attribute) else None
        text = self.ctx.source(value, 40) if value is not None else ""
        self._event(
            "write", attr, target, value_kind=kind, detail=detail, ctor=ctor, text=text, value=value, unpacked=unpacked
        )
        if function.is_init and self.cls is not None and attr not in self.cls.init_attrs:
            keys: tuple[str, ...] = ()
            if isinstance(value, ast.Dict):
                keys = tuple(k for k in (_constant_key(k) if k is not None else None for k in value.keys) if k)
            self.cls.init_attrs[attr] = _InitAttr(attr, kind, target, statement or target, value, keys)

    # -- results -------------------------------------------------------------------------------------------------
    def finish(self) -> BlockFacts:
        """Resolve aliases and names (all definitions are known now) and freeze the results, block by block: a
        block frozen before, at the same line and with the same names, keeps its frozen summaries."""
        self._resolve_aliases()
        ctx = self.ctx
        names: FinalNames = (
            tuple(ctx.aliases.items()),
            tuple((scope, tuple(defined.items())) for scope, defined in ctx.local_defs.items()),
            tuple(sorted(ctx.compile_partials)),
        )
        if names == self.previous_names:
            names = self.previous_names
        self.final_names = ctx.names = names
        ctx.blocks = self.blocks
        facts = BlockFacts()
        for block in self.blocks:
            line = block.statements[0].lineno if block.statements else 0
            frozen = block.frozen
            if frozen is None or frozen.names is not names or frozen.line != line:
                frozen = block.frozen = self._freeze(block, names, line)
            facts.classes.extend(frozen.classes)
            facts.functions.extend(frozen.functions)
            facts.bindings.extend(frozen.bindings)
            facts.calls.extend(frozen.calls)
            facts.switches.extend(frozen.switches)
            facts.writes.extend(frozen.writes)
            facts.resets.extend(frozen.resets)
            facts.settings.extend(frozen.settings)
        return facts

    def lowering(self) -> Lowering:
        """The file's :class:`Lowering` (one per version of the file, made when first needed)."""
        if self._lowering is None or self._lowering.ctx is not self.ctx:
            self._lowering = Lowering(self.ctx)
        return self._lowering

    def _freeze(self, block: BlockWalk, names: FinalNames, line: int) -> _Frozen:
        lowering = self.lowering()
        calls: dict[int, list[CallSite]] = {}
        """id of the function node (0 for module level) → the calls it makes."""
        builds: dict[int, list[CallRef]] = {}
        switches: list[ModeSwitch] = []
        resets: list[tuple[Span, str]] = []
        for at in block.nodes.get(ast.Call, ()):
            call = at.node
            assert isinstance(call, ast.Call)
            if at.scope.function is not None and self.ctx.resolve(call.func) in RESETS and not at.eager_only:
                resets.append((self.ctx.span(call), at.scope.function.qualname))
            if isinstance(call.func, ast.Attribute) and call.func.attr in ("eval", "train") and not at.eager_only:
                mode = _mode_switched(call)
                if mode is not None:
                    function = at.scope.function
                    switches.append(
                        ModeSwitch(
                            lowering.value(call.func.value, at),
                            self.ctx.source(call.func.value, 40),
                            mode,
                            self.ctx.span(call),
                            function.qualname if function is not None else "",
                            at.loop_depth > 0,
                        )
                    )
            if at.scope.function is not None and isinstance(call.func, ast.Name | ast.Attribute):
                name = call.func.attr if isinstance(call.func, ast.Attribute) else call.func.id
                ref = self.ctx.ref(call.func, at.scope) if name[:1].isupper() else None
                if ref is not None:
                    builds.setdefault(id(at.scope.function.node), []).append(CallRef(ref, self.ctx.span(call)))
            func = lowering.call_site_func(call, at) if not at.eager_only else None
            if func is not None:
                key = id(at.scope.function.node) if at.scope.function is not None else 0
                calls.setdefault(key, []).append(self._call_site(lowering, call, at, func))
        returns: dict[int, list[Expr]] = {}
        for at in block.nodes.get(ast.Return, ()):
            value = at.node.value  # type: ignore[attr-defined]
            function = at.scope.function
            if value is not None and function is not None and not at.eager_only:
                lowered = lowering.value(value, at)
                if not exprs.is_trivial(lowered):
                    given = exprs.Given(lowered, at.requires) if at.requires else lowered
                    returns.setdefault(id(function.node), []).append(given)
        classes = tuple(self._freeze_class(c, calls, returns, builds) for c in block.classes)
        functions = tuple(
            FunctionSummary(
                f.scope.qualname,
                self._name_span(f.node),
                tuple(calls.get(id(f.node), ())),
                f.disabled,
                _positional(f.node),
                tuple(returns.get(id(f.node), ())),
                self._annotations(f),
                _defaults(f.node),
                f.node.args.vararg.arg if f.node.args.vararg is not None else "",
            )
            for f in block.functions
        )
        return _Frozen(
            names,
            line,
            classes,
            functions,
            self._module_bindings(block),
            tuple(calls.get(0, ())),
            tuple(switches),
            tuple(self._attr_writes(block, lowering)),
            tuple(resets),
            tuple(settings_in(self.ctx, block.nodes.get(ast.Assign, ()), block.nodes.get(ast.Call, ()))),
        )

    def _annotated_attributes(self, builder: _ClassBuilder) -> Iterator[tuple[str, Expr]]:
        """``self.cache: KVCache | None = None`` in a method: the attribute holds a ``KVCache`` when it holds
        something (the annotation says what the ``None`` becomes)."""
        methods = {id(m.node): m for m in builder.methods}
        for at in self.ctx.nodes(ast.AnnAssign):
            function = at.scope.function
            method = methods.get(id(function.node)) if function is not None else None
            node = at.node
            assert isinstance(node, ast.AnnAssign)
            if method is None or method.self_name is None or not _is_self_target(node.target, method.self_name):
                continue
            refs = [
                ref
                for name in _annotated_names(node.annotation)
                if (ref := self.ctx.ref(name, builder.outer)) is not None and ref.last[:1].isupper()
            ]
            if refs:
                assert isinstance(node.target, ast.Attribute)
                yield node.target.attr, exprs.InstanceOf(tuple(refs), exprs.UNKNOWN)

    def _annotations(self, builder: _FunctionBuilder) -> tuple[tuple[str, Ref], ...]:
        """The parameters annotated with a class name (``model: GPT``, ``"GPT"``, ``GPT | None``). A method's
        annotation is read in its class body, so it may name a class nested there (``config: Config``)."""
        found: list[tuple[str, Ref]] = []
        args = builder.node.args
        parent = builder.scope.parent
        nested = self.ctx.local_defs.get(parent.qualname, {}) if parent is not None and parent.kind == "class" else {}
        for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs):
            for name in _annotated_names(arg.annotation):
                if isinstance(name, ast.Name) and name.id in nested:
                    ref: Ref | None = Ref(nested[name.id], LOCAL)
                else:
                    ref = self.ctx.ref(name, parent)
                if ref is not None and ref.last[:1].isupper():
                    found.append((arg.arg, ref))
        return tuple(found)

    def _call_site(self, lowering: Lowering, call: ast.Call, at: NodeAt, func: Expr) -> CallSite:
        callee = call.func
        name = callee.attr if isinstance(callee, ast.Attribute) else callee.id if isinstance(callee, ast.Name) else ""
        if isinstance(func, exprs.Named):
            name = func.ref.last  # `step = torch.compile(decode)`: a call of `step` calls `decode`
        return CallSite(
            func=func,
            args=tuple(lowering.argument(a, at) for a in call.args[: lowering_limits.MAX_OPTIONS]),
            keywords=tuple((k.arg, lowering.argument(k.value, at)) for k in call.keywords if k.arg is not None),
            span=self.ctx.span(call),
            name=name,
            guarded=at.guarded,
            first_call=at.first_call,
            in_loop=at.loop_depth > 0,
            grad=at.grad,
            grad_from=self.ctx.span(at.grad_from) if at.grad_from is not None else None,
            autocast=at.autocast,
            autocast_from=self.ctx.span(at.autocast_from) if at.autocast_from is not None else None,
            forced_eager=at.forced_eager,
            complete=len(call.args) <= lowering_limits.MAX_OPTIONS
            and not any(isinstance(a, ast.Starred) for a in call.args)
            and all(k.arg is not None for k in call.keywords),
            arg_kinds=self._argument_kinds(call, at) if isinstance(callee, ast.Attribute) else (),
        )

    def _argument_kinds(self, call: ast.Call, at: NodeAt) -> tuple[str, ...]:
        """``CallSite.arg_kinds``: names count by the ``range()`` loops of the calling scope that bind them (found
        once per scope, when a name is first asked about)."""
        if not call.args:
            return ()
        scope = at.scope.function.node if at.scope.function is not None else at.scope.node

        def known(name: str) -> ValueKind:
            counters = self._range_names.get(id(scope))
            if counters is None:
                counters = self._range_names[id(scope)] = frozenset(range_loop_names(ast.walk(scope)))
            return "int" if name in counters else "unknown"

        found: list[str] = []
        for argument in call.args:
            kind = kind_of(argument, self.ctx.resolve, known)
            prefix = "=" if isinstance(argument, ast.Constant) else ""
            found.append(f"{prefix}{kind}" if kind in SCALAR_KINDS else "")
        return tuple(found) if any(found) else ()

    def _module_bindings(self, block: BlockWalk) -> tuple[ModuleBinding, ...]:
        """Module-level names bound to something that can matter (a module, a function, a container of them)."""
        lowering = self.lowering()
        found: list[ModuleBinding] = []
        statements = [
            at
            for kind in (ast.Assign, ast.AnnAssign, ast.For, ast.AsyncFor, ast.With, ast.AsyncWith)
            for at in block.nodes.get(kind, ())
            if at.scope.kind == "module"
        ]
        statements.sort(key=lambda at: (at.node.lineno, at.node.col_offset))  # type: ignore[attr-defined]
        for at in statements:
            for name, value in lowering.module_binding(at):
                if not exprs.is_trivial(value):
                    found.append(ModuleBinding(name, at.node.lineno, value))  # type: ignore[attr-defined]
        return tuple(found)

    def _resolve_aliases(self) -> None:
        """``compiler = torch.compile`` and ``cp = functools.partial(torch.compile, ...)`` bind new names."""
        ctx = self.ctx
        pending_aliases = [pending for block in self.blocks for pending in block.pending_aliases]
        for _ in range(2):  # an alias of an alias
            for pending in pending_aliases:
                value = pending.value
                if isinstance(value, ast.Call):
                    if value.args and ctx.resolve(value.func) == PARTIAL and ctx.is_torch_compile(value.args[0]):
                        ctx.compile_partials.add(pending.name)
                    continue
                ref = ctx.ref(value, pending.scope)
                if ref is not None and ref.level >= 0 and (ref.dotted == "torch" or ref.dotted.startswith("torch.")):
                    ctx.aliases.setdefault(pending.name, ref)

    def _name_member_reads(self, function: _FunctionBuilder) -> tuple[tuple[str, str, Expr], ...]:
        """``<name>.<member>`` loads whose name holds, on every path, something the method was given (a parameter,
        or what one holds: ``yarn = args.yarn``), with what it holds. An object the method builds is a new one on
        each call, and globals, modules and classes are not what the method was given."""
        lowering = self.lowering()
        found: list[tuple[str, str, Expr]] = []
        for (name, member), (node, branch) in function.name_member_reads.items():
            value = lowering.value(node, NodeAt(node, function.scope, 0, 0, branch))
            if _given(value):
                found.append((name, member, value))
        return tuple(found)

    def _freeze_class(
        self,
        builder: _ClassBuilder,
        calls: dict[int, list[CallSite]],
        returns: dict[int, list[Expr]],
        builds: dict[int, list[CallRef]],
    ) -> ClassSummary:
        ctx = self.ctx
        methods = tuple(
            MethodSummary(
                name=m.node.name,
                span=self._name_span(m.node),
                kind=m.kind,
                disabled=m.disabled,
                events=tuple(self._freeze_event(e, m.scope) for e in m.events if not e.eager_only),
                calls=tuple(calls.get(id(m.node), ())),
                params=_positional(m.node),
                returns=tuple(returns.get(id(m.node), ())),
                builds=tuple(builds.get(id(m.node), ())),
                annotations=self._annotations(m),
                defaults=_defaults(m.node),
                lookups=frozenset(m.lookups),
                range_bounds=frozenset(m.range_bounds),
                member_reads=tuple(sorted(m.member_reads)),
                name_member_reads=self._name_member_reads(m),
            )
            for m in builder.methods
        )
        lowering = self.lowering()
        attr_values: list[tuple[str, Expr]] = list(self._annotated_attributes(builder))
        for m in builder.methods:
            for e in m.events:
                if e.unpacked is not None and e.kind == "write":
                    node, position = e.unpacked
                    item: Expr = exprs.Item(lowering.value(node, NodeAt(e.node, m.scope, 0, 0, e.branch)), position)
                    if not exprs.is_trivial(item) and (e.attr, item) not in attr_values:
                        attr_values.append((e.attr, item))
                    continue
                if e.value is None or e.kind not in ("write", "mutate"):
                    continue
                value = lowering.value(e.value, NodeAt(e.node, m.scope, 0, 0, e.branch))
                if e.kind == "mutate" and e.detail == "update" and isinstance(value, exprs.Items) and value.keys:
                    pass  # `.update({"blocks": ...})`: the keyed entries themselves
                elif e.kind == "mutate":  # `self.blocks.append(b)`, `.extend(bs)`, `.update(d)`, `self.d[k] = v`
                    value = exprs.Items((exprs.Item(value) if e.detail in ("extend", "update") else value,))
                if not exprs.is_trivial(value) and (e.attr, value) not in attr_values:
                    attr_values.append((e.attr, value))
        class_values = [
            (name, value)
            for name, node in builder.class_values
            if not exprs.is_trivial(value := lowering.value(node, NodeAt(node, builder.scope, 0, 0, ())))
        ]
        init_attrs = tuple(self._freeze_init(a, builder.scope) for a in builder.init_attrs.values())
        body = builder.node.body[0] if builder.node.body else builder.node
        return ClassSummary(
            qualname=builder.scope.qualname,
            span=self._name_span(builder.node),
            bases=tuple(
                ctx.ref(b, builder.outer) or (Ref(b.id) if isinstance(b, ast.Name) else None)
                for b in builder.node.bases
            ),
            methods=methods,
            init_attrs=init_attrs,
            class_attrs=tuple(builder.class_attrs),
            body_start=ctx.span(body),
            attr_values=tuple(attr_values),
            class_values=tuple(class_values),
            owner_links=owner_links(builder.node),
        )

    def _attr_writes(self, block: BlockWalk, lowering: Lowering) -> Iterator[AttrWrite]:
        """``<receiver>.<attr> = value`` where the receiver is not the method's own ``self`` (those are state
        events of the class)."""
        ctx = self.ctx
        for at in (*block.nodes.get(ast.Assign, ()), *block.nodes.get(ast.AugAssign, ())):
            node = at.node
            assert isinstance(node, ast.Assign | ast.AugAssign)
            if at.eager_only:
                continue
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if not isinstance(target, ast.Attribute) or target.attr.startswith("__"):
                    continue
                receiver = target.value
                if not isinstance(receiver, ast.Name | ast.Attribute):
                    continue
                if isinstance(receiver, ast.Name) and receiver.id in ("self", "cls"):
                    continue
                function = at.scope.function
                yield AttrWrite(
                    lowering.value(receiver, at),
                    ctx.source(receiver, 40),
                    target.attr,
                    kind_of(node.value, ctx.resolve),
                    isinstance(node.value, ast.Constant),
                    isinstance(node, ast.AugAssign),
                    ctx.span(target),
                    function.qualname if function is not None else "",
                    at.loop_depth > 0,
                    at.guarded,
                )

    def _freeze_event(self, e: _Event, scope: Scope) -> StateEvent:
        ctx = self.ctx
        return StateEvent(
            kind=e.kind,
            attr=e.attr,
            span=ctx.span(e.node),
            branch=e.branch,
            value_kind=e.value_kind,
            detail=e.detail,
            text=e.text,
            ctor=ctx.ref(e.ctor, scope) if e.ctor is not None else None,
            statement=ctx.span(e.statement) if e.statement is not None else None,
            guarded=e.guarded,
            requires=e.requires,
            first_call=e.first_call,
        )

    def _freeze_init(self, a: _InitAttr, class_scope: Scope) -> AttrInit:
        ctx = self.ctx
        scope = class_scope.parent
        constructors: list[Ref] = []
        kind = a.kind
        for func in _constructed(a.value):
            ref = ctx.ref(func, scope)
            if ref is not None and ref not in constructors:
                constructors.append(ref)
        return AttrInit(
            name=a.name,
            kind=kind,
            span=ctx.span(a.target),
            statement=ctx.span(a.statement),
            value_text=ctx.source(a.value) if a.value is not None else "",
            constructors=tuple(constructors),
            keys=a.keys,
        )

    def _name_span(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> Span:
        """The span of the name in ``def name`` / ``class name`` (what editors underline)."""
        line = node.lineno
        prefix = (
            "class "
            if isinstance(node, ast.ClassDef)
            else "async def "
            if isinstance(node, ast.AsyncFunctionDef)
            else "def "
        )
        column = self.ctx.lines.column(line, node.col_offset) + len(prefix)
        return Span(self.ctx.path, line, column, line, column + len(node.name))


def _dotted(node: ast.expr) -> str | None:
    """``args.yarn`` for a name or a chain of attributes on one, else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return f"{inner}.{node.attr}" if inner is not None else None
    return None


def _given(value: Expr) -> bool:
    """Whether ``value`` is, on every path, a parameter or something reached from one through attributes and items
    (the :class:`~exprs.Local` markers of a variable's identity aside)."""
    if isinstance(value, exprs.Param):
        return True
    if isinstance(value, exprs.Attr | exprs.Item | exprs.InstanceOf | exprs.NamedInstanceOf):
        return _given(value.value)
    if isinstance(value, exprs.OneOf):
        options = [option for option in value.options if not isinstance(option, exprs.Local)]
        return bool(options) and all(_given(option) for option in options)
    return False


_HANDLERS: dict[type[ast.AST], Callable[[Walker, Any], None]] = {
    ast.Import: Walker._import,
    ast.ImportFrom: Walker._import_from,
    ast.ClassDef: Walker._class,
    ast.FunctionDef: Walker._function,
    ast.AsyncFunctionDef: Walker._function,
    ast.Lambda: Walker._lambda,
    ast.ListComp: Walker._comprehension,
    ast.SetComp: Walker._comprehension,
    ast.DictComp: Walker._comprehension,
    ast.GeneratorExp: Walker._comprehension,
    ast.Assign: Walker._assign,
    ast.AnnAssign: Walker._ann_assign,
    ast.AugAssign: Walker._aug_assign,
    ast.Delete: Walker._delete,
    ast.If: Walker._if,
    ast.For: Walker._for,
    ast.AsyncFor: Walker._for,
    ast.While: Walker._while,
    ast.Try: Walker._try,
    ast.Match: Walker._match,
    ast.With: Walker._with,
    ast.AsyncWith: Walker._with,
    ast.Call: Walker._call,
    ast.Attribute: Walker._attribute,
    ast.Compare: Walker._compare,
}
"""Node types the walk handles itself (a class-level table: no bound methods, so no reference cycle keeps a
walked tree alive after ``summarize`` returns)."""
if sys.version_info >= (3, 11):
    _HANDLERS[ast.TryStar] = Walker._try


def _is_self_target(target: ast.expr, self_name: str) -> bool:
    return isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == self_name


def _annotated_names(annotation: ast.expr | None) -> list[ast.expr]:
    """The class names an annotation admits: ``GPT``, ``"GPT"``, ``GPT | None``, ``Optional[GPT]``."""
    if annotation is None:
        return []
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return []
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        return _annotated_names(annotation.left) + _annotated_names(annotation.right)
    if isinstance(annotation, ast.Subscript) and isinstance(annotation.value, ast.Name | ast.Attribute):
        last = annotation.value.attr if isinstance(annotation.value, ast.Attribute) else annotation.value.id
        if last == "Optional":
            return _annotated_names(annotation.slice)
        return []
    return [annotation] if isinstance(annotation, ast.Name | ast.Attribute) else []


def _hasattr_self(test: ast.expr, self_name: str | None) -> bool:
    """``hasattr(self, "name")`` in a method."""
    return (
        self_name is not None
        and isinstance(test, ast.Call)
        and isinstance(test.func, ast.Name)
        and test.func.id == "hasattr"
        and len(test.args) == 2
        and isinstance(test.args[0], ast.Name)
        and test.args[0].id == self_name
        and isinstance(test.args[1], ast.Constant)
        and isinstance(test.args[1].value, str)
    )


def _mode_switched(call: ast.Call) -> str | None:
    """The mode ``x.eval()`` / ``x.train(...)`` switches to, or None when it is not a module's mode switch (``eval``
    with arguments is Python's builtin on something else)."""
    func = call.func
    assert isinstance(func, ast.Attribute)
    if func.attr == "eval":
        return None if call.args or call.keywords else "eval"
    flag = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "mode"), None)
    if flag is None:
        return "train"
    if isinstance(flag, ast.Constant) and isinstance(flag.value, bool):
        return "train" if flag.value else "eval"
    return "runtime"


def _defaults(node: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[tuple[str, str], ...]:
    """(parameter, ``repr`` of its default) for the parameters whose default is a short literal."""
    args = node.args
    positional = [*args.posonlyargs, *args.args]
    pairs = list(zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=True))
    pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None]
    return tuple(
        (arg.arg, found.value)
        for arg, default in pairs
        if isinstance(default, ast.Constant) and (found := exprs.constant(default.value)).value
    )


def _positional(node: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[str, ...]:
    return tuple(a.arg for a in (*node.args.posonlyargs, *node.args.args))


# -- value classification --------------------------------------------------------------------------------------


def _constant_str(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _constant_key(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str | int) and not isinstance(node.value, bool):
        return repr(node.value)
    return None


def _key_text(node: ast.AST) -> str:
    """``'k'`` for a constant key, ``""`` for a computed one."""
    return _constant_key(node) or ""


def _constructed(value: ast.AST | None) -> list[ast.expr]:
    """The callables a value constructs: ``Block`` in ``Block(...)``, ``nn.ModuleList([Block() for _ in ...])``,
    ``nn.Sequential(nn.Linear(4, 4), nn.ReLU())`` (the call itself and the calls among its direct arguments)."""
    if not isinstance(value, ast.Call):
        return []
    found: list[ast.expr] = []
    pending: list[ast.AST] = [value]
    while pending and len(found) < 16:
        node = pending.pop()
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Name | ast.Attribute):
                found.append(node.func)
            pending.extend(reversed(node.args))
            pending.extend(k.value for k in node.keywords)
        elif isinstance(node, ast.List | ast.Tuple):
            pending.extend(reversed(node.elts))
        elif isinstance(node, ast.ListComp | ast.GeneratorExp):
            pending.append(node.elt)
        elif isinstance(node, ast.Starred):
            pending.append(node.value)
    return found


def _is_self_attribute(node: ast.AST, self_name: str, attr: str) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and node.attr == attr
        and isinstance(node.value, ast.Name)
        and node.value.id == self_name
    )


def _reads_attribute(value: ast.AST, self_name: str, attr: str) -> bool:
    """``value`` reads ``self.<attr>`` (``self.n + 1``, ``torch.cat([self.mem, x])``, ``getattr(self, "n", 0)``)."""
    for node in ast.walk(value):
        if _is_self_attribute(node, self_name, attr):
            return True
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "hasattr")
            and len(node.args) > 1
            and isinstance(node.args[0], ast.Name)
            and node.args[0].id == self_name
            and _constant_str(node.args[1]) == attr
        ):
            return True
    return False


def _is_concatenation(value: ast.AST, self_name: str, attr: str) -> bool:
    """``self.<attr> + ...`` or ``... + self.<attr>``: the value extends the attribute (a list or a number)."""
    return (
        isinstance(value, ast.BinOp)
        and isinstance(value.op, ast.Add)
        and (_is_self_attribute(value.left, self_name, attr) or _is_self_attribute(value.right, self_name, attr))
    )


def _may_alias(value: ast.AST, ctx: FileContext) -> bool:
    """Cheap test: could ``name = value`` make ``name`` an alias of a torch name or of a compile partial?"""
    if isinstance(value, ast.Call):
        func = value.func
        return (isinstance(func, ast.Name) and func.id == "partial") or (
            isinstance(func, ast.Attribute) and func.attr == "partial"
        )
    while isinstance(value, ast.Attribute):
        value = value.value
    return isinstance(value, ast.Name) and value.id in ctx.aliases


def _mentions(node: ast.AST, names: frozenset[str]) -> bool:
    return any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(node))


def _is_literal(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.operand, ast.Constant):
        return True
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        return all(_is_literal(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return all(
            k is not None and _is_literal(k) and _is_literal(v) for k, v in zip(node.keys, node.values, strict=True)
        )
    return False


def _arms(value: ast.expr) -> Iterator[ast.expr]:
    """The expressions whose result an assignment of ``value`` binds: ``value`` itself, or each arm of a conditional
    expression."""
    if isinstance(value, ast.IfExp):
        yield from _arms(value.body)
        yield from _arms(value.orelse)
    else:
        yield value


def _resets(body: list[ast.stmt], test: tuple[str, str, bool], self_attr: Callable[[ast.expr], str | None]) -> bool:
    """``body`` (run when ``test`` holds) is a self-resetting branch: ``test`` is on ``self.<attr>`` and a statement
    of the body itself assigns the attribute a value under which the test fails (``if self.first_batch: ...;
    self.first_batch = False``, ``if self.table is None: self.table = build()``): once it ran, later calls skip
    it."""
    name, kind, expected = test
    if not name.startswith(SELF_FLAG) or kind not in ("truth", "none"):
        return False
    attr = name.removeprefix(SELF_FLAG)
    for statement in body:
        if not isinstance(statement, ast.Assign):
            continue
        if not any(isinstance(t, ast.Attribute) and self_attr(t) == attr for t in statement.targets):
            continue
        value = statement.value
        if kind == "none":
            is_none = isinstance(value, ast.Constant) and value.value is None
            if expected != is_none:
                return True  # an `is None` branch assigning something else, an `is not None` one assigning None
        elif isinstance(value, ast.Constant) and bool(value.value) != expected:
            return True
    return False
