"""The quick fix for a recompile caused by a tensor size: ``torch._dynamo.mark_dynamic(arg, dim)`` before the call.

A DL501 whose failing guard is ``tensor 'x' size mismatch at index 0`` names the compiled function's parameter and
the dimension; the recompile's call site names the user's call. The fix finds the argument that call passes for
that parameter and inserts the marking on the line before the call's statement, at its indentation, so every call
(each iteration of a loop) marks the tensor it passes. Measured on torch 2.13 (ten batch sizes, ``backend="eager"``):
8 compiles and the limit under ``dynamic=False``, 2 under the default; 1 in both with the marking.

Offered only where it is sure to be right: a plain name passed positionally or by keyword, a call that is its own
statement's (not inside a lambda or comprehension, whose variables the line before cannot see), and a file that
imports ``torch`` by that name. The fix is not safe (ruff's sense): code that specialises on the size raises a
constraint violation instead of recompiling.

Where the sizes involved are 0 or 1, Dynamo specialises them even on a dimension marked dynamic (measured, sizes 1, 2,
3, 4, 5 under ``dynamic=False``: 5 compiles, 2 with ``mark_dynamic``, 1 with ``mark_unbacked``), so the fix marks the
dimension *unbacked* instead (``torch._dynamo.decorators.mark_unbacked``, torch 2.5 and later); code that branches on
such a size then fails to trace instead of specialising.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence

from dynamo_lens.model import Edit, Fix, Span

SIZE_MISMATCH = re.compile(
    r"tensor '(?P<name>[A-Za-z_]\w*)' size mismatch at index (?P<dim>\d+)"
    r"(?:\. expected (?P<expected>\d+), actual (?P<actual>\d+))?"
)
SPECIALISED_SIZES = frozenset({"0", "1"})
"""Sizes Dynamo specialises even on a dimension marked dynamic."""
UNBACKED_MIN_TORCH = "2.5"
_SCOPES = (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
KEYWORD_ONLY = -1
"""The position of a parameter the caller can pass only by keyword."""


def mark_dynamic_fix(
    guard_text: str, def_path: str, def_line: int, call_path: str, call_line: int, earlier: Sequence[str] = ()
) -> Fix | None:
    """The fix for the size guard ``guard_text`` of the function defined at ``def_path:def_line`` (its first line,
    decorators included), failed by the call on ``call_path:call_line``; None where it cannot be sure. ``earlier``
    are the texts of the same guard failing before (the first recompile names the size 1 a later one no longer
    shows)."""
    found = SIZE_MISMATCH.search(guard_text)
    if found is None:
        return None
    name, dim = found["name"], int(found["dim"])
    sizes = {
        size
        for text in (guard_text, *earlier)
        if (seen := SIZE_MISMATCH.search(text)) is not None and (seen["name"], seen["dim"]) == (name, found["dim"])
        for size in (seen["expected"], seen["actual"])
    }
    unbacked = bool(sizes & SPECIALISED_SIZES)
    definition = _parse(def_path)
    calling = definition if call_path == def_path else _parse(call_path)
    if definition is None or calling is None or not imports_torch(calling):
        return None
    position = _parameter_position(definition, def_line, name)
    if position is None:
        return None
    for statement in ast.walk(calling):
        if not isinstance(statement, ast.stmt) or isinstance(statement, ast.FunctionDef | ast.ClassDef):
            continue
        for call in _own_calls(statement, call_line):
            argument = _argument(call, position, name)
            if argument is None:
                continue
            at = Span(call_path, statement.lineno, 1, statement.lineno, 1)
            indent = " " * statement.col_offset
            if unbacked:
                text = f"{indent}torch._dynamo.decorators.mark_unbacked({argument}, {dim})\n"
                title = (
                    f"Mark `{argument}` dimension {dim} unbacked before this call (`mark_unbacked`: sizes 0 and 1 too)"
                )
                return Fix(title, (Edit(at, text),), min_torch=UNBACKED_MIN_TORCH)
            text = f"{indent}torch._dynamo.mark_dynamic({argument}, {dim})\n"
            return Fix(
                f"Mark `{argument}` dimension {dim} dynamic before this call (`mark_dynamic`)", (Edit(at, text),)
            )
    return None


def _parse(path: str) -> ast.Module | None:
    try:
        with open(path, encoding="utf-8") as handle:
            return ast.parse(handle.read())
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
        return None


def imports_torch(module: ast.Module) -> bool:
    """``import torch`` at the module level: a fix may write ``torch.…`` in this file."""
    return any(
        isinstance(node, ast.Import) and any(alias.name == "torch" and alias.asname is None for alias in node.names)
        for node in module.body
    )


def _parameter_position(module: ast.Module, line: int, name: str) -> int | None:
    """Where ``name`` is among the positional parameters a caller passes to the function starting on ``line``: a
    method's ``self`` (or ``cls``) is passed by the call itself, not by the caller."""
    for node in ast.walk(module):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        if min([node.lineno, *(d.lineno for d in node.decorator_list)]) != line:
            continue
        params = [a.arg for a in (*node.args.posonlyargs, *node.args.args)]
        if params[:1] in (["self"], ["cls"]):
            params = params[1:]
        if name in params:
            return params.index(name)
        return KEYWORD_ONLY if any(a.arg == name for a in node.args.kwonlyargs) else None
    return None


def _own_calls(statement: ast.stmt, line: int) -> list[ast.Call]:
    """The calls starting on ``line`` that belong to ``statement`` itself (not to a nested statement, lambda or
    comprehension, whose variables the line before the statement cannot see)."""
    found: list[ast.Call] = []
    pending: list[ast.AST] = list(ast.iter_child_nodes(statement))
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.stmt, *_SCOPES)):
            continue
        if isinstance(node, ast.Call) and node.lineno == line:
            found.append(node)
        pending.extend(ast.iter_child_nodes(node))
    return found


def _argument(call: ast.Call, position: int, name: str) -> str | None:
    """The plain name the call passes for the parameter (at ``position``, or :data:`KEYWORD_ONLY`)."""
    if any(isinstance(a, ast.Starred) for a in call.args):
        return None
    passed: ast.expr | None = None
    if 0 <= position < len(call.args):
        passed = call.args[position]
    else:
        passed = next((k.value for k in call.keywords if k.arg == name), None)
    return passed.id if isinstance(passed, ast.Name) else None
