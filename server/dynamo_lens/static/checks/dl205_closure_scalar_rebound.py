"""DL205 closure-scalar-rebound: compiled code reads a closed-over Python scalar that is bound again later.

Measured on torch 2.13 (``backend="eager"``, a new value on each of 12 calls): a closure int or float recompiles once
and then becomes dynamic; a bool costs one compile per value; a string, or an int used as a ``range()`` bound,
recompiles per value until ``recompile_limit`` (8); a tensor updated in place costs nothing (not reported).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from dynamo_lens.model import Related, Severity, Span
from dynamo_lens.rules.dl205_closure_scalar_rebound import RULE
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
LOOPS = (ast.For, ast.AsyncFor, ast.While)


@dataclass(slots=True)
class CellBinding:
    span: Span
    line: int
    kind: ValueKind
    loop_end: int
    """Last line of the outermost loop of the owner that contains the binding (0: not in a loop)."""
    elsewhere: bool = False
    """Bound through ``nonlocal`` in another inner function (or the reader itself)."""


def collect(ctx: FileContext) -> Iterator[InsideCompiledCandidate]:
    bodies = function_bodies(ctx)
    children: dict[int, list[FunctionBody]] = {}
    for body in bodies:
        if body.parent is not None:
            children.setdefault(id(body.parent), []).append(body)
    for body in bodies:
        if body.parent is None:
            continue
        seen: set[str] = set()
        for read in name_loads(body):
            name = read.id
            if name in seen or name in body.locals():
                continue
            owner = _owner(body, name)
            if owner is None:
                continue
            seen.add(name)
            bindings = _bindings(ctx, owner, name, children.get(id(owner), []))
            candidate = _candidate(ctx, body, read, bindings)
            if candidate is not None:
                yield candidate


def _declares_nonlocal(body: FunctionBody, name: str) -> bool:
    return any(isinstance(n, ast.Nonlocal) and name in n.names for n in body.nodes)


def _owner(body: FunctionBody, name: str) -> FunctionBody | None:
    """The enclosing function whose local ``name`` is (the cell ``body`` reads)."""
    scope = body.parent
    while scope is not None:
        if name in scope.locals():
            return scope
        scope = scope.parent
    return None


def _bindings(ctx: FileContext, owner: FunctionBody, name: str, inner: list[FunctionBody]) -> list[CellBinding]:
    ints = range_loop_names(owner.nodes)

    def known(other: str) -> ValueKind:
        return "int" if other in ints else "unknown"

    loops = [n for n in owner.nodes if isinstance(n, LOOPS)]
    found: list[CellBinding] = []
    for node in owner.nodes:
        for target, kind in _stores(node, name, ctx, known):
            line = target.lineno
            ends = [loop.end_lineno or loop.lineno for loop in loops if loop.lineno <= line <= (loop.end_lineno or 0)]
            found.append(CellBinding(ctx.span(target), line, kind, max(ends, default=0)))
    for function in inner:
        if _declares_nonlocal(function, name):
            for node in function.nodes:
                for target, kind in _stores(node, name, ctx, known):
                    found.append(CellBinding(ctx.span(target), target.lineno, kind, 0, elsewhere=True))
    return found


def _stores(
    node: ast.AST, name: str, ctx: FileContext, lookup: Callable[[str], ValueKind]
) -> Iterator[tuple[ast.Name, ValueKind]]:
    if isinstance(node, ast.Assign):
        for target in node.targets:
            if isinstance(target, ast.Name) and target.id == name:
                yield target, value_kind(node.value, ctx.resolve, lookup)
            elif isinstance(target, (ast.Tuple, ast.List)):
                yield from ((t, "unknown") for t in target.elts if isinstance(t, ast.Name) and t.id == name)
    elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and isinstance(node.target, ast.Name):
        if node.target.id == name and node.value is not None:
            yield node.target, value_kind(node.value, ctx.resolve, lookup)
    elif isinstance(node, (ast.For, ast.AsyncFor)) and isinstance(node.target, ast.Name) and node.target.id == name:
        is_range = (
            isinstance(node.iter, ast.Call) and isinstance(node.iter.func, ast.Name) and node.iter.func.id == "range"
        )
        yield node.target, "int" if is_range else "unknown"


def _candidate(
    ctx: FileContext, body: FunctionBody, read: ast.Name, bindings: list[CellBinding]
) -> InsideCompiledCandidate | None:
    defined = body.node.lineno
    # A binding matters if it can run after the reader exists: later in the owner, in a loop that reaches the
    # reader's definition, or from another inner function through `nonlocal`.
    rebinds = [b for b in bindings if b.elsewhere or b.line > defined or b.loop_end >= defined]
    if not rebinds:
        return None
    kinds = [b.kind for b in bindings]
    kind = merge_kinds(kinds)
    name = read.id
    if kind == "str" or (kind == "int" and _bounds_range(body, name)):
        severity = RULE.default_severity
        cost = (
            f"{'a string' if kind == 'str' else 'an int that bounds range()'} stays specialised: every new value "
            f"recompiles, and after {RECOMPILE_LIMIT} compiles (recompile_limit) the code runs eagerly"
        )
    elif kind in ("int", "float"):
        severity = Severity.INFO
        cost = "one recompile, then the value is dynamic"
    elif kind == "bool":
        severity = Severity.INFO
        cost = "one compile per value"
    elif kind == "tensor" and "none" in kinds:
        severity = Severity.INFO
        cost = "one recompile when it stops being None"
    else:
        return None
    where = ", ".join(f"line {b.span.line}" for b in rebinds[:MAX_RELATED])
    message = (
        f"the closed-over {kind} `{name}` is bound again ({where}); compiled code that reads it makes Dynamo guard "
        f"`{name} == <value>`: {cost} (torch 2.13)"
    )
    return InsideCompiledCandidate(
        code=RULE.code,
        span=ctx.span(read),
        function=body.qualname,
        message=message,
        severity=severity,
        related=tuple(Related(b.span, f"`{name}` bound again here") for b in rebinds[:MAX_RELATED]),
        data=(("name", name), ("kind", kind)),
    )


def _bounds_range(body: FunctionBody, name: str) -> bool:
    return any(
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "range"
        and any(isinstance(a, ast.Name) and a.id == name for a in node.args)
        for node in body.nodes
    )


CHECK = Check(RULE.code, collect=collect, judge=judge)
