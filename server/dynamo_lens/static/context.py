"""What a check sees of one file while ``summarize`` runs: the tree, positions, names and the nodes by type.

A :class:`FileContext` is built by one walk of the tree (``static/walk.py``); checks never walk the whole tree
again, they ask for the nodes they care about with :meth:`FileContext.nodes`.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from dynamo_lens.model import Span
from dynamo_lens.static import exprs
from dynamo_lens.static.exprs import Expr
from dynamo_lens.static.positions import LineIndex
from dynamo_lens.static.summary import LOCAL, CompileSite, ModuleBinding, Ref

TORCH_COMPILE = "torch.compile"
DYNAMO_OPTIMIZE = ("torch._dynamo.optimize", "torch._dynamo.eval_frame.optimize")
PARTIAL = "functools.partial"
RESETS = frozenset({"torch._dynamo.reset", "torch.compiler.reset", "torch._dynamo.eval_frame.reset"})
"""Calls that drop every compiled entry."""
SELF_FLAG = "self."
"""Prefix of a requirement on an attribute of the method's own instance (``("self.cache_labels", "truth", True)``
for a statement under ``if self.cache_labels:``), next to those on parameters (``NodeAt.requires``)."""
HASATTR = "hasattr"
"""The kind of a requirement that ``hasattr(self, "<name>")`` holds (``("self.<name>", "hasattr", True)``)."""
IS_COMPILING = frozenset({"torch.compiler.is_compiling", "torch._dynamo.is_compiling"})
DISABLE_DECORATORS = frozenset(
    {"torch.compiler.disable", "torch._dynamo.disable", "torch._dynamo.eval_frame.disable", "torch.jit.ignore"}
)


T = TypeVar("T")


class Block(Protocol):
    """What a check may see of one block of top-level statements (``static/walk.py`` records them)."""

    nodes: dict[type[ast.AST], list[NodeAt]]
    memo: dict[str, tuple[Any, Any]]


@dataclass(slots=True, eq=False)
class Scope:
    """A module, class or function body. ``qualname`` is ``""`` for the module, ``Model.forward`` for a method."""

    kind: str  # "module" | "class" | "function"
    qualname: str
    node: ast.AST
    parent: Scope | None
    params: frozenset[str] = frozenset()
    """Parameter names of a function scope."""

    @property
    def class_name(self) -> str | None:
        """The class whose method this scope is (directly), if any."""
        if self.kind == "function" and self.parent is not None and self.parent.kind == "class":
            return self.parent.qualname
        return None

    @property
    def function(self) -> Scope | None:
        """The innermost function scope containing this scope (itself if it is one)."""
        scope: Scope | None = self
        while scope is not None and scope.kind != "function":
            scope = scope.parent
        return scope


SETTER = "setter"
"""The last part of a property setter's (or deleter's) qualified name: it shares the getter's name, but runs on
assignment, never when compiled code reads the property, so it is kept apart (``Net.n.setter``)."""


def function_qualname(parent: Scope, node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    """The qualified name of a function defined in ``parent``."""
    qualname = f"{parent.qualname}.{node.name}" if parent.qualname else node.name
    if parent.kind == "class" and any(
        isinstance(d, ast.Attribute) and d.attr in ("setter", "deleter") for d in node.decorator_list
    ):
        return f"{qualname}.{SETTER}"
    return qualname


@dataclass(frozen=True, slots=True)
class NodeAt:
    """A recorded node with where it sits: its scope and how many loops of that scope enclose it."""

    node: ast.AST
    scope: Scope
    loop_depth: int
    branch_depth: int
    """``if``/``try``/loop bodies of the scope that enclose it (0 = always executed when the scope runs)."""
    path: tuple[int, ...] = ()
    """Those bodies, outermost first, as ids unique within the function (``()`` at module and class level): a
    statement whose path is a prefix of another's runs whenever the other does (early exits aside)."""
    guarded: bool = False
    """Inside a body of its function that runs only under a condition (an ``if`` arm, ``except``, ``case``), not
    whenever the function runs (loop bodies, ``try`` and ``finally`` bodies count as running)."""
    eager_only: bool = False
    """Never traced by Dynamo: under ``if not torch.compiler.is_compiling():``, or after an ``if
    torch.compiler.is_compiling(): return`` in the same body."""
    grad: str = ""
    """The grad mode its function sets around it (``semantic.contexts``: ``no_grad``, ``inference_mode``, ...),
    ``""`` when it sets none (the caller's mode applies)."""
    grad_from: ast.expr | None = None
    """The ``with`` item or decorator that sets ``grad``."""
    requires: tuple[tuple[str, str, bool], ...] = ()
    """What parameters of its function must be for it to run: ``(param, "truth", True)`` inside ``if param:`` or
    after ``if not param: return``; ``(param, "none", False)`` inside ``if param is not None:``; the same with
    ``"self.<attr>"`` for a test of an attribute of a method's own instance (``if self.cache_labels:``)."""
    first_call: tuple[tuple[str, str, bool], ...] = ()
    """When every condition it runs under is a self-resetting test of the method's instance (``if
    self.first_batch:`` whose body sets ``self.first_batch = False``; ``if self.table is None:`` whose body fills
    it), those tests: it runs on the first call whose instance starts out passing them, and not after."""
    forced_eager: bool = False
    """Inside ``with torch.compiler.set_stance("force_eager"):`` (or a function decorated with it): compiled code
    called there runs eagerly, compiles nothing and checks no guard."""
    autocast: str = ""
    """The autocast state its function sets around it (``semantic.contexts``: ``autocast``, ``autocast off``, ...),
    ``""`` when it sets none."""
    autocast_from: ast.expr | None = None
    """The ``with`` item or decorator that sets ``autocast``."""


@dataclass(slots=True, eq=False)
class FileContext:
    """Everything a check's ``collect`` may use. Built once per file; read-only for checks."""

    path: str
    text: str
    tree: ast.Module
    lines: LineIndex
    aliases: dict[str, Ref] = field(default_factory=dict)
    """Every name bound by an import or an alias assignment, flattened over scopes (last binding wins)."""
    compile_partials: set[str] = field(default_factory=set)
    """Names bound to ``functools.partial(torch.compile, ...)``: calling them compiles."""
    local_defs: dict[str, dict[str, str]] = field(default_factory=dict)
    """scope qualname → {simple name: qualname} for classes and functions defined in that scope."""
    defined_names: set[str] = field(default_factory=set)
    """Every simple name some scope of the file defines with ``def``/``class`` (a fast negative test)."""
    by_type: dict[type[ast.AST], list[NodeAt]] = field(default_factory=dict)
    name_bindings: dict[str, list[NodeAt]] = field(default_factory=dict)
    """Name → the assignment statements (``Assign``, ``AnnAssign``, ``AugAssign``) with a target that binds it
    (``x = ...``, ``x, y = ...``, ``x += 1``), in source order: ask for the names you care about instead of looping
    over every assignment of the file."""
    member_bindings: dict[str, list[NodeAt]] = field(default_factory=dict)
    """Name → the assignment statements with a target that starts at it (``cfg.scale = ...``, ``d["k"] += 1``,
    ``model.encoder.forward = f``), in source order."""
    attribute_bindings: dict[str, list[NodeAt]] = field(default_factory=dict)
    """Attribute → the assignment statements with a target ``<expr>.<attribute>``, in source order."""
    assigned_names: dict[int, tuple[str, ...]] = field(default_factory=dict)
    """id(value node) → the plain names it is assigned to (``cm = torch.compile(m)`` → ``("cm",)``)."""
    module_bindings: Sequence[ModuleBinding] = ()
    """Module-level names bound to values that can matter (filled after the walk, like ``compile_sites``)."""
    compile_sites: tuple[CompileSite, ...] = ()
    """Filled after the walk; checks may use them (``DL201`` looks at ``in_loop``)."""
    blocks: Sequence[Block] = ()
    """The file's top-level statements in blocks (one block on the command line; see ``static/incremental.py``)."""
    names: object = None
    """Stands for every name the file resolves (its aliases and definitions): equal for two versions whose names are
    the same, so a result that only depends on a block and on names can be kept with the block (:meth:`per_block`)."""

    # -- nodes -------------------------------------------------------------------------------------------------
    def nodes(self, *types: type[ast.AST]) -> Sequence[NodeAt]:
        """Recorded nodes of the given types in source order. Every statement type, ``Call`` and ``Lambda`` are
        recorded; nothing else (ask the framework owner before relying on another type)."""
        if len(types) == 1:
            return self.by_type.get(types[0], ())
        found = [n for t in types for n in self.by_type.get(t, ())]
        found.sort(key=lambda n: (n.node.lineno, n.node.col_offset))  # type: ignore[attr-defined]
        return found

    def span(self, node: ast.AST) -> Span:
        return self.lines.span(node)

    def source(self, node: ast.AST, limit: int = 80) -> str:
        return self.lines.source(node, limit)

    def per_block(
        self, name: str, compute: Callable[[Mapping[type[ast.AST], list[NodeAt]]], T], key: object = None
    ) -> list[T]:
        """``compute(nodes)`` of every block (its recorded nodes by type), in order. Each result is kept with its
        block under ``name`` while the file's :attr:`names` and ``key`` (whatever else ``compute`` reads) are the
        same, so that in the editor an edit recomputes only the blocks it touched: ``compute`` may use the nodes,
        the names and what ``key`` stands for, never positions (a block moves when lines are added above it, its
        nodes with it) nor other blocks."""
        results: list[T] = []
        for block in self.blocks:
            found = block.memo.get(name)
            if found is None or found[0][0] is not self.names or found[0][1] != key:
                found = block.memo[name] = ((self.names, key), compute(block.nodes))
            results.append(found[1])
        return results

    # -- names -------------------------------------------------------------------------------------------------
    def ref(self, expr: ast.AST, scope: Scope | None = None) -> Ref | None:
        """What a (dotted) name expression refers to: an import path, or a class/function defined in this file.

        ``T.nn.Module`` with ``import torch as T`` → ``Ref("torch.nn.Module")``; ``Model`` defined here →
        ``Ref("Model", LOCAL)``; ``from .model import Model`` → ``Ref("model.Model", 1)``. None for anything else
        (a parameter, a call, a subscript)."""
        parts: list[str] = []
        while isinstance(expr, ast.Attribute):
            parts.append(expr.attr)
            expr = expr.value
        if not isinstance(expr, ast.Name):
            return None
        parts.reverse()
        name = expr.id
        local = self._local_def(name, scope) if name in self.defined_names else None
        if local is not None:
            return Ref(".".join([local, *parts]), LOCAL)
        alias = self.aliases.get(name)
        if alias is None:
            return None
        if not parts:
            return alias
        return Ref(f"{alias.dotted}.{'.'.join(parts)}" if alias.dotted else ".".join(parts), alias.level)

    def resolve(self, expr: ast.AST, scope: Scope | None = None) -> str | None:
        """The absolute dotted name of an imported thing (``torch.compile``), or None (locals, relative imports)."""
        root = expr
        while isinstance(root, ast.Attribute):
            root = root.value
        if not isinstance(root, ast.Name) or root.id not in self.aliases:
            return None  # not an import or alias: a local, a parameter, a builtin
        ref = self.ref(expr, scope)
        return ref.dotted if ref is not None and ref.level == 0 else None

    def is_torch_compile(self, expr: ast.AST) -> bool:
        """``expr`` is ``torch.compile`` under any alias (``T.compile``, ``tc``, ``compiler = torch.compile``)."""
        return self.resolve(expr) == TORCH_COMPILE

    def module_value(self, expr: Expr) -> Expr:
        """``expr`` with a module-level name of this file replaced by what it was last bound to above its use."""
        if isinstance(expr, exprs.Global):
            bound = [b for b in self.module_bindings if b.name == expr.name and (not expr.line or b.line < expr.line)]
            if bound:
                return bound[-1].value
        return expr

    def torch_name(self) -> str | None:
        """The local name bound to the ``torch`` package (for fixes that insert torch code), if any."""
        for name, ref in self.aliases.items():
            if ref.level == 0 and ref.dotted == "torch":
                return name
        return None

    def _local_def(self, name: str, scope: Scope | None) -> str | None:
        while scope is not None:
            if scope.kind != "class":
                found = self.local_defs.get(scope.qualname, {}).get(name)
                if found is not None:
                    return found
            scope = scope.parent
        return self.local_defs.get("", {}).get(name)
