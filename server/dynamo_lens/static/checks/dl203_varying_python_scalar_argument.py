"""DL203: a compiled callable called in a loop with a Python int/float/str argument that changes every iteration."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import Literal

from dynamo_lens.model import Edit, Fix, Severity, Span
from dynamo_lens.rules.dl203_varying_python_scalar_argument import RULE
from dynamo_lens.static.checks import Check
from dynamo_lens.static.checks._usage import HandleCall, Loop, UsageCandidate, judge_usage, usage
from dynamo_lens.static.context import FileContext
from dynamo_lens.static.summary import CompileSite

Kind = Literal["int", "float", "str"]
ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow)


def collect(ctx: FileContext) -> Iterator[UsageCandidate]:
    table = usage(ctx)
    definitions = {node.name: node for at in ctx.nodes(ast.FunctionDef) if isinstance(node := at.node, ast.FunctionDef)}
    for handle_call in table.calls:
        loops = table.enclosing_loops(handle_call.at)
        if not loops:
            continue
        counters = _loop_scalars(loops)
        site = handle_call.handle.site
        dynamic = dict(site.options).get("dynamic")
        params = _parameters(site, definitions)
        for position, argument in _arguments(handle_call):
            kind = _kind(argument, counters)
            if kind is None:
                continue
            if isinstance(position, str):
                name = position
            else:
                name = params[position] if position < len(params) else f"#{position + 1}"
            candidate = _candidate(ctx, handle_call, site, argument, kind, name, dynamic, definitions)
            if candidate is not None:
                yield candidate


def _candidate(
    ctx: FileContext,
    handle_call: HandleCall,
    site: CompileSite,
    argument: ast.expr,
    kind: Kind,
    param: str,
    dynamic: str | None,
    definitions: dict[str, ast.FunctionDef],
) -> UsageCandidate | None:
    label = f"argument {param}" if param.startswith("#") else f"`{param}`"
    text = f"`{ctx.source(argument, 40)}`"
    callee = handle_call.handle.name
    fixes: tuple[Fix, ...] = ()
    if kind == "str":
        message = (
            f"{text} passes a different `str` to {label} of compiled `{callee}` on every iteration: torch 2.13 "
            "guards strings by value and never makes them dynamic, so each value compiles again (8 compiles, then "
            "`recompile_limit` → eager)"
        )
        severity = RULE.default_severity
    elif dynamic == "True":
        return None  # symbolic from the first call
    elif _ranges_over(site, definitions, param):
        message = (
            f"{text} changes {label} of compiled `{callee}` on every iteration, and `{param}` is a `range()` bound "
            "there: torch 2.13 keeps it specialised, so every value compiles again (8 compiles, then "
            "`recompile_limit` → eager)"
        )
        severity = RULE.default_severity
    elif dynamic == "False":
        message = (
            f"{text} changes the {kind} {label} of compiled `{callee}` on every iteration, and the compile site says "
            "`dynamic=False`: torch 2.13 compiles once per value (8 compiles, then `recompile_limit` → eager)"
        )
        severity = RULE.default_severity
        fixes = tuple(f for f in (_dynamic_fix(ctx, site),) if f is not None)
    else:
        message = (
            f"{text} changes the {kind} {label} of compiled `{callee}` on every iteration: torch 2.13 specialises "
            "the first value, recompiles once, then treats it as dynamic (2 compiles in all)"
        )
        severity = Severity.INFO
        fixes = tuple(f for f in (_dynamic_fix(ctx, site),) if f is not None)
    return UsageCandidate(RULE.code, ctx.span(argument), message, severity, (site,), fixes=fixes)


def _arguments(handle_call: HandleCall) -> Iterator[tuple[int | str, ast.expr]]:
    call = handle_call.call
    for index, argument in enumerate(call.args):
        if isinstance(argument, ast.Starred):
            return
        yield index, argument
    for keyword in call.keywords:
        if keyword.arg is not None:
            yield keyword.arg, keyword.value


def _parameters(site: CompileSite, definitions: dict[str, ast.FunctionDef]) -> list[str]:
    definition = _definition(site, definitions)
    if definition is None:
        return []
    return [a.arg for a in (*definition.args.posonlyargs, *definition.args.args)]


def _definition(site: CompileSite, definitions: dict[str, ast.FunctionDef]) -> ast.FunctionDef | None:
    target = site.target
    if target.kind == "function" and target.ref is not None and target.ref.is_local:
        return definitions.get(target.ref.dotted.rpartition(".")[2])
    return None


def _ranges_over(site: CompileSite, definitions: dict[str, ast.FunctionDef], param: str) -> bool:
    definition = _definition(site, definitions)
    if definition is None:
        return False
    for node in ast.walk(definition):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "range"
            and any(isinstance(arg, ast.Name) and arg.id == param for arg in node.args)
        ):
            return True
    return False


def _loop_scalars(loops: list[Loop]) -> dict[str, Kind]:
    """Names that hold a different Python scalar on each iteration: ``range()`` and ``enumerate()`` counters,
    counters incremented in a ``while`` body."""
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
        elif isinstance(loop, ast.While):
            for statement in ast.walk(loop):
                if (
                    isinstance(statement, ast.AugAssign)
                    and isinstance(statement.target, ast.Name)
                    and isinstance(statement.value, ast.Constant)
                    and type(statement.value.value) in (int, float)
                ):
                    counters[statement.target.id] = "float" if isinstance(statement.value.value, float) else "int"
    return counters


def _kind(expr: ast.expr, counters: dict[str, Kind]) -> Kind | None:
    """The scalar kind of ``expr`` if it changes with the loop counters, else None."""
    if isinstance(expr, ast.Name):
        return counters.get(expr.id)
    if isinstance(expr, ast.JoinedStr):
        varying = any(
            isinstance(part, ast.FormattedValue) and _names(part.value) & counters.keys() for part in expr.values
        )
        return "str" if varying else None
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.USub | ast.UAdd):
        return _kind(expr.operand, counters)
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ARITHMETIC):
        left, right = _numeric(expr.left, counters), _numeric(expr.right, counters)
        if left is None or right is None or "varying" not in (left[1], right[1]):
            return None
        if isinstance(expr.op, ast.Div) or "float" in (left[0], right[0]):
            return "float"
        return "int"
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and len(expr.args) == 1:
        inner = _kind(expr.args[0], counters)
        if inner is not None and expr.func.id in ("int", "float", "str"):
            kind: Kind = expr.func.id  # type: ignore[assignment]
            return kind
    return None


def _numeric(expr: ast.expr, counters: dict[str, Kind]) -> tuple[str, str] | None:
    """(kind, "varying" | "constant") of an arithmetic operand, None if it is not a plain number."""
    if isinstance(expr, ast.Constant) and type(expr.value) in (int, float):
        return ("float" if isinstance(expr.value, float) else "int", "constant")
    kind = _kind(expr, counters)
    if kind in ("int", "float"):
        return (kind, "varying")
    return None


def _names(expr: ast.AST) -> set[str]:
    return {node.id for node in ast.walk(expr) if isinstance(node, ast.Name)}


def _dynamic_fix(ctx: FileContext, site: CompileSite) -> Fix | None:
    """``dynamic=True`` at the compile site (replacing ``dynamic=False``)."""
    for at in ctx.nodes(ast.Call):
        node = at.node
        assert isinstance(node, ast.Call)
        if ctx.span(node) != site.span:
            continue
        for keyword in node.keywords:
            if keyword.arg == "dynamic":
                return Fix("Compile with dynamic=True", (Edit(ctx.span(keyword.value), "True"),))
        end = ctx.span(node)
        insert = Span(end.path, end.end_line, end.end_column - 1, end.end_line, end.end_column - 1)
        return Fix("Compile with dynamic=True", (Edit(insert, ", dynamic=True"),))
    if site.form == "decorator":
        return Fix("Compile with dynamic=True", (Edit(site.span, f"{_decorator_text(ctx, site)}(dynamic=True)"),))
    return None


def _decorator_text(ctx: FileContext, site: CompileSite) -> str:
    lines = ctx.text.splitlines()
    line = lines[site.span.line - 1]
    return line[site.span.column - 1 : site.span.end_column - 1]


CHECK = Check(RULE.code, collect=collect, judge=judge_usage)
