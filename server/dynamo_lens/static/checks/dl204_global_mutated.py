"""DL204 global-mutated: compiled code reads a module-level global that the program assigns again.

Measured on torch 2.13 (``backend="eager"``, a new value on each of 12 calls): ints, strings and lists of changing
length recompile per value until ``recompile_limit`` (8); floats, bools and ``None`` → object cost one recompile;
a tensor rebound to a tensor of the same metadata costs nothing (not reported).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from dynamo_lens.model import Related, Severity
from dynamo_lens.rules.dl204_global_mutated import RULE
from dynamo_lens.static.checks import Check
from dynamo_lens.static.checks._compiled_code import (
    FunctionBody,
    InsideCompiledCandidate,
    function_bodies,
    judge,
)
from dynamo_lens.static.checks._python_values import ValueKind, merge_kinds, range_loop_names, value_kind
from dynamo_lens.static.context import FileContext

MAX_RELATED = 3
RECOMPILE_LIMIT = 8
UNBOUNDED = frozenset({"int", "str", "list", "tuple"})
BOUNDED = frozenset({"float", "bool"})


@dataclass(slots=True)
class Binding:
    """One assignment of a module-level name. The kind of its value is worked out only for names compiled code
    reads (most files rebind nothing that matters, and then no value is classified)."""

    target: ast.Name
    value: ast.expr | None
    """The assigned expression; None when ``fixed_kind`` says it all (loop targets, unpacking)."""
    fixed_kind: ValueKind
    rebinds: bool
    """Runs again after the first definition: in a loop, an augmented assignment, or in a function (``global``)."""
    lookup: Callable[[str], ValueKind]

    def kind(self, ctx: FileContext) -> ValueKind:
        return self.fixed_kind if self.value is None else value_kind(self.value, ctx.resolve, self.lookup)


def collect(ctx: FileContext) -> Iterator[InsideCompiledCandidate]:
    bodies = function_bodies(ctx)
    bindings = _module_bindings(ctx)
    for body in bodies:
        for binding in _global_bindings(body):
            bindings.setdefault(binding.target.id, []).append(binding)
    rebound = {name for name, found in bindings.items() if any(b.rebinds for b in found)}
    if not rebound:
        return
    for body in bodies:
        seen: set[str] = set()
        for read in body.name_loads(rebound):
            name = read.id
            if name not in seen and _is_global_in(body, name):
                seen.add(name)
                candidate = _candidate(ctx, body, read, bindings[name])
                if candidate is not None:
                    yield candidate


BINDING_STATEMENTS = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor)


def _module_bindings(ctx: FileContext) -> dict[str, list[Binding]]:
    module_statements = [at for kind in BINDING_STATEMENTS for at in ctx.nodes(kind) if at.scope.kind == "module"]
    ints: set[str] | None = None

    def known(name: str) -> ValueKind:
        nonlocal ints
        if ints is None:
            ints = range_loop_names(at.node for at in module_statements)
        return "int" if name in ints else "unknown"

    found: dict[str, list[Binding]] = {}
    for at in module_statements:
        for binding in _targets(at.node, known, in_loop=at.loop_depth > 0):
            found.setdefault(binding.target.id, []).append(binding)
    return found


def _global_bindings(body: FunctionBody) -> Iterator[Binding]:
    declared = {name for node in body.statements if isinstance(node, ast.Global) for name in node.names}
    if not declared:
        return
    for node in body.statements:
        if isinstance(node, BINDING_STATEMENTS):
            for binding in _targets(node, _unknown, in_loop=True):
                if binding.target.id in declared:
                    yield binding


def _targets(node: ast.AST, lookup: Callable[[str], ValueKind], in_loop: bool) -> Iterator[Binding]:
    """A binding for each plain name a binding statement assigns."""
    if isinstance(node, ast.Assign):
        for target in node.targets:
            value = node.value if isinstance(target, ast.Name) else None
            for name in _names(target):
                yield Binding(name, value, "unknown", in_loop, lookup)
    elif isinstance(node, ast.AnnAssign) and node.value is not None and isinstance(node.target, ast.Name):
        yield Binding(node.target, node.value, "unknown", in_loop, lookup)
    elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
        yield Binding(node.target, node.value, "unknown", True, lookup)
    elif isinstance(node, (ast.For, ast.AsyncFor)):
        is_range = (
            isinstance(node.iter, ast.Call) and isinstance(node.iter.func, ast.Name) and node.iter.func.id == "range"
        )
        for name in _names(node.target):
            kind: ValueKind = "int" if is_range and isinstance(node.target, ast.Name) else "unknown"
            yield Binding(name, None, kind, True, lookup)


def _unknown(name: str) -> ValueKind:
    return "unknown"


def _names(target: ast.AST) -> Iterator[ast.Name]:
    if isinstance(target, ast.Name):
        yield target
    elif isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            yield from _names(element)
    elif isinstance(target, ast.Starred):
        yield from _names(target.value)


def _is_global_in(body: FunctionBody, name: str) -> bool:
    """``name`` read in ``body`` refers to the module global (not a local of it or of an enclosing function)."""
    scope: FunctionBody | None = body
    while scope is not None:
        if name in scope.locals():
            return False
        scope = scope.parent
    return True


def _candidate(
    ctx: FileContext, body: FunctionBody, read: ast.Name, bindings: list[Binding]
) -> InsideCompiledCandidate | None:
    kinds = [b.kind(ctx) for b in bindings]
    kind = merge_kinds(kinds)
    name = read.id
    if kind in UNBOUNDED:
        severity = RULE.default_severity
        what = "global ints always specialise" if kind == "int" else f"a {kind} is never made dynamic"
        guard = f"`len(G['{name}']) == <length>`" if kind in ("list", "tuple") else f"`G['{name}'] == <value>`"
        cost = (
            f"{what}, so every new value recompiles, and after {RECOMPILE_LIMIT} compiles (recompile_limit) "
            "the code runs eagerly"
        )
    elif kind in BOUNDED:
        severity = Severity.INFO
        guard = f"`G['{name}'] == <value>`"
        cost = "one recompile, then the value is dynamic" if kind == "float" else "one compile per value"
    elif kind == "tensor" and "none" in kinds:
        severity = Severity.INFO
        guard = f"`G['{name}'] is None`"
        cost = "one recompile when it stops being None"
    else:
        return None
    rebinds = [b for b in bindings if b.rebinds]
    where = ", ".join(f"line {b.target.lineno}" for b in rebinds[:MAX_RELATED])
    message = (
        f"the global {kind} `{name}` is assigned again ({where}); compiled code that reads it makes Dynamo "
        f"guard {guard}: {cost} (torch 2.13)"
    )
    return InsideCompiledCandidate(
        code=RULE.code,
        span=ctx.span(read),
        function=body.qualname,
        message=message,
        severity=severity,
        related=tuple(Related(ctx.span(b.target), f"`{name}` assigned here") for b in rebinds[:MAX_RELATED]),
        data=(("name", name), ("kind", kind)),
    )


CHECK = Check(RULE.code, collect=collect, judge=judge)
