"""An edit that passes one more keyword to the user's ``torch.compile(...)``: the quick fixes that change how a frame
is compiled (``dynamic=True``, a ``guard_filter_fn``) make it at the line the run recorded as the compile's
(``CacheEntry.compiled_at``).

The compile is ``torch.compile(...)``, ``model.compile(...)`` (which passes its arguments on; not a ``compile`` of
another imported module, such as ``re.compile``), or a decorator ``@torch.compile`` / ``@torch.compile(...)``. The
keyword goes after the last argument, so a trailing comma and a call over several lines stay as they were; a keyword
already passed gets its value replaced. Nothing is offered where the edit could be wrong: no such call on the line,
several, ``**kwargs`` (it may hold the keyword already), or a keyword the caller names as refusing it (torch rejects
``mode=`` together with ``options=``).
"""

from __future__ import annotations

import ast
from collections.abc import Collection

from dynamo_lens.model import Edit, Span
from dynamo_lens.runtime.mark_dynamic_fix import imports_torch
from dynamo_lens.static.positions import LineIndex


def add_keyword(
    path: str, line: int, source: str, name: str, value: str, *, refuse: Collection[str] = ()
) -> Edit | None:
    """The edit that makes the compile on ``line`` of ``source`` pass ``name=value``, or None."""
    try:
        module = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    if not imports_torch(module):
        return None
    found: list[ast.Call | ast.Attribute] = [*_compile_calls(module, line), *_bare_decorators(module, line)]
    if len(found) != 1:
        return None
    [node] = found
    columns = LineIndex(path, source)
    if isinstance(node, ast.Attribute):  # a bare `@torch.compile`: call it with the keyword
        return _insert(columns, node.end_lineno, node.end_col_offset, f"({name}={value})")
    if any(k.arg is None or k.arg in refuse for k in node.keywords):
        return None
    given = next((k for k in node.keywords if k.arg == name), None)
    if given is not None:
        old = given.value
        if old.end_lineno is None or old.end_col_offset is None or ast.unparse(old) == value:
            return None
        return Edit(columns.span(old), value)
    arguments: list[ast.expr | ast.keyword] = [*node.args, *node.keywords]
    if not arguments:  # `torch.compile()`: inside the parentheses
        end = node.end_col_offset
        return _insert(columns, node.end_lineno, None if end is None else end - 1, f"{name}={value}")
    last = max(arguments, key=lambda a: (a.end_lineno or 0, a.end_col_offset or 0))
    return _insert(columns, last.end_lineno, last.end_col_offset, f", {name}={value}")


def _insert(columns: LineIndex, line: int | None, byte_column: int | None, text: str) -> Edit | None:
    """Insert ``text`` at an ``ast`` position (a UTF-8 byte column)."""
    if line is None or byte_column is None:
        return None
    column = columns.column(line, byte_column)
    return Edit(Span(columns.path, line, column, line, column), text)


def _compile_calls(module: ast.Module, line: int) -> list[ast.Call]:
    """``torch.compile(...)`` and ``<module object>.compile(...)`` calls starting on ``line``: not ``re.compile``
    and the like, a ``compile`` of a module the file imports under another name than ``torch``."""
    others = _imported_modules(module) - {"torch"}
    return [
        node
        for node in ast.walk(module)
        if isinstance(node, ast.Call)
        and node.lineno == line
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "compile"
        and not (isinstance(node.func.value, ast.Name) and node.func.value.id in others)
    ]


def _imported_modules(module: ast.Module) -> set[str]:
    """The names ``import x`` / ``import x.y`` / ``import x as y`` bind anywhere in the file."""
    return {
        alias.asname or alias.name.partition(".")[0]
        for node in ast.walk(module)
        if isinstance(node, ast.Import)
        for alias in node.names
    }


def _bare_decorators(module: ast.Module, line: int) -> list[ast.Attribute]:
    """``@torch.compile`` without parentheses on ``line``."""
    return [
        decorator
        for node in ast.walk(module)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        for decorator in node.decorator_list
        if decorator.lineno == line and isinstance(decorator, ast.Attribute) and _is_torch_compile(decorator)
    ]


def _is_torch_compile(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and node.attr == "compile"
        and isinstance(node.value, ast.Name)
        and node.value.id == "torch"
    )
