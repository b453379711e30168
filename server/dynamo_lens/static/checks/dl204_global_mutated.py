"""DL204 global-mutated: compiled code reads a module-level global that the program assigns again.

Measured on torch 2.13 (``backend="eager"``, a new value on each of 12 calls): ints, strings and lists of changing
length recompile per value until ``recompile_limit`` (8); floats, bools and ``None`` → object cost one recompile;
a tensor rebound to a tensor of the same metadata costs nothing (not reported).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from dynamo_lens.model import Related, Severity, Span
from dynamo_lens.rules.dl204_global_mutated import RULE
from dynamo_lens.static.checks import Check
from dynamo_lens.static.checks._compiled_code import (
    FunctionBody,
    InsideCompiledCandidate,
    function_bodies,
    judge,
    name_loads,
)
from dynamo_lens.static.checks._python_values import ValueKind, merge_kinds, range_loop_names, value_kind
from dynamo_lens.static.context import FileContext

MAX_RELATED = 3
RECOMPILE_LIMIT = 8
UNBOUNDED = frozenset({"int", "str", "list", "tuple"})
BOUNDED = frozenset({"float", "bool"})


@dataclass(slots=True)
class Binding:
    span: Span
    kind: ValueKind
    rebinds: bool
    """Runs again after the first definition: in a loop, an augmented assignment, or in a function (``global``)."""


def collect(ctx: FileContext) -> Iterator[InsideCompiledCandidate]:
    bodies = function_bodies(ctx)
    bindings = _module_bindings(ctx)
    for body in bodies:
        for name, binding in _global_bindings(ctx, body):
            bindings.setdefault(name, []).append(binding)
    rebound = {name for name, found in bindings.items() if any(b.rebinds for b in found)}
    if not rebound:
        return
    for body in bodies:
        seen: set[str] = set()
        for read in name_loads(body):
            name = read.id
            if name in rebound and name not in seen and _is_global_in(body, name):
                seen.add(name)
                candidate = _candidate(ctx, body, read, bindings[name])
                if candidate is not None:
                    yield candidate


def _module_bindings(ctx: FileContext) -> dict[str, list[Binding]]:
    module_statements = [at for at in ctx.nodes(ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor)]
    module_statements = [at for at in module_statements if at.scope.kind == "module"]
    ints = range_loop_names(at.node for at in module_statements)

    def known(name: str) -> ValueKind:
        return "int" if name in ints else "unknown"

    found: dict[str, list[Binding]] = {}
    for at in module_statements:
        node = at.node
        in_loop = at.loop_depth > 0
        for target, kind, rebinds in _targets(node, ctx, known):
            found.setdefault(target.id, []).append(Binding(ctx.span(target), kind, rebinds or in_loop))
    return found


def _global_bindings(ctx: FileContext, body: FunctionBody) -> Iterator[tuple[str, Binding]]:
    declared = {name for node in body.nodes if isinstance(node, ast.Global) for name in node.names}
    if not declared:
        return
    for node in body.nodes:
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor)):
            for target, kind, _ in _targets(node, ctx, _unknown):
                if target.id in declared:
                    yield target.id, Binding(ctx.span(target), kind, rebinds=True)


def _targets(
    node: ast.AST, ctx: FileContext, lookup: Callable[[str], ValueKind]
) -> Iterator[tuple[ast.Name, ValueKind, bool]]:
    """(name, kind of the value, rebinds by itself) for each plain name a binding statement assigns."""
    if isinstance(node, ast.Assign):
        kind = value_kind(node.value, ctx.resolve, lookup)
        for target in node.targets:
            for name in _names(target):
                yield name, kind if isinstance(target, ast.Name) else "unknown", False
    elif isinstance(node, ast.AnnAssign) and node.value is not None and isinstance(node.target, ast.Name):
        yield node.target, value_kind(node.value, ctx.resolve, lookup), False
    elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
        yield node.target, value_kind(node.value, ctx.resolve, lookup), True
    elif isinstance(node, (ast.For, ast.AsyncFor)):
        is_range = (
            isinstance(node.iter, ast.Call) and isinstance(node.iter.func, ast.Name) and node.iter.func.id == "range"
        )
        for name in _names(node.target):
            yield name, "int" if is_range and isinstance(node.target, ast.Name) else "unknown", True


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
    kinds = [b.kind for b in bindings]
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
    where = ", ".join(f"line {b.span.line}" for b in rebinds[:MAX_RELATED])
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
        related=tuple(Related(b.span, f"`{name}` assigned here") for b in rebinds[:MAX_RELATED]),
        data=(("name", name), ("kind", kind)),
    )


CHECK = Check(RULE.code, collect=collect, judge=judge)
