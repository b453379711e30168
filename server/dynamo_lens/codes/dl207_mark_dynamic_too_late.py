"""DL207 · mark-dynamic-too-late

## What it does
Flags `torch._dynamo.mark_dynamic(t, dim)` (also `maybe_mark_dynamic`) on a tensor after a compiled callable has
already been called with that tensor, in the same function.

## Why it matters
`mark_dynamic` is read when Dynamo builds the guards of a new compile. Marking a tensor that a cache entry was
already compiled for does not make that entry dynamic: the entry was compiled with a static size, and the mark
itself fails its guard on the next call. Measured on torch 2.13 (`backend="eager"`): calling with `t`, then marking
`t` and calling again, compiled **twice** even though the shape never changed; marking before the first call compiled
once for 12 different sizes. The cost is one extra compile, so the finding is `info`; the mark also does nothing that
automatic dynamic shapes would not have done after the first size change.

## Example
```python
compiled = torch.compile(model)
x = next(batches)
compiled(x)
torch._dynamo.mark_dynamic(x, 0)    # DL207: too late, costs one more compile
compiled(x)
```

## Use instead
Mark the tensor before the first call that receives it:
```python
x = next(batches)
torch._dynamo.mark_dynamic(x, 0)
compiled(x)
```

## Known limitations
Before torch 2.13 a late `maybe_mark_dynamic` costs nothing (measured on 2.4.1 to 2.12.1: 1 compile; the mark is
read only by a later compile), so it is reported only for 2.13 and later. Only the order of statements in one function
is considered: the call and the mark must use the same name, and a
call earlier in the same loop body counts only when it precedes the mark.

## Fix safety
Moving the `mark_dynamic` statement before the first call is offered when both are statements of the same block;
it is safe: marking earlier only removes the extra compile.

## References
- PyTorch, "Dynamic shapes": https://docs.pytorch.org/docs/stable/torch.compiler_dynamic_shapes.html
- `torch/_dynamo/decorators.py`: `mark_dynamic`
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from dynamo_lens.codes import Check, Rule
from dynamo_lens.model import Fix, Related, Severity
from dynamo_lens.static.context import FileContext, NodeAt
from dynamo_lens.static.semantic.usage import (
    HandleCall,
    UsageCandidate,
    call_named,
    judge_usage,
    line_edit_move,
    position,
    scope_key,
    usage,
)
from dynamo_lens.torch_facts import MAYBE_MARK_GUARDED_SINCE, describes_since, torch_name

RULE = Rule(
    code="DL207",
    name="mark-dynamic-too-late",
    summary="A tensor is marked dynamic after a compiled callable already ran with it",
    default_severity=Severity.INFO,
    source="static",
    docs_url="https://docs.pytorch.org/docs/stable/torch.compiler_dynamic_shapes.html",
    fix_title="Mark the tensor dynamic before the first call",
    confirmed_by=("DL501", "DL502"),
)


MAYBE_MARKS = frozenset({"torch._dynamo.maybe_mark_dynamic", "torch._dynamo.decorators.maybe_mark_dynamic"})
MARKS = MAYBE_MARKS | {"torch._dynamo.mark_dynamic", "torch._dynamo.decorators.mark_dynamic"}


def collect(ctx: FileContext) -> Iterator[UsageCandidate]:
    if "mark_dynamic" not in ctx.text:
        return
    table = usage(ctx)
    # call position → the statement that is that call (`f(x)`) or assigns its result (`y = f(x)`)
    statements = {
        position(node.value): at
        for at in ctx.nodes(ast.Expr, ast.Assign)
        if isinstance(node := at.node, ast.Expr | ast.Assign)
    }
    for at in ctx.nodes(ast.Call):
        mark = call_named(ctx, at, MARKS)
        if mark is None or not mark.args or not isinstance(mark.args[0], ast.Name):
            continue
        if ctx.resolve(mark.func) in MAYBE_MARKS and not describes_since(MAYBE_MARK_GUARDED_SINCE):
            continue  # the described torch reads a late `maybe_mark_dynamic` only at a later compile: no extra one
        tensor = mark.args[0].id
        receivers = [c for c in table.calls if scope_key(c.at.scope) == scope_key(at.scope) and _passes(c, tensor)]
        sites = {c.handle.site for c in receivers}
        earlier = table.ran_before(sites, at, next_iteration=False) if sites else None
        if earlier is None:
            continue
        name = earlier.handle.name
        message = (
            f"`{ctx.source(mark, 50)}` comes after compiled `{name}` already ran: the entry it compiled has a static "
            f"size, so {torch_name()} compiles once more when `{tensor}` arrives marked (2 compiles where marking "
            "first gives 1); mark the tensor before the first call"
        )
        related = (Related(ctx.span(earlier.call), f"`{name}` ran here first"),)
        fix = _move_fix(ctx, statements, at, earlier)
        yield UsageCandidate(
            RULE.code,
            ctx.span(mark),
            message,
            RULE.default_severity,
            (earlier.handle.site,),
            related=related,
            fixes=(fix,) if fix is not None else (),
        )


def _passes(call: HandleCall, tensor: str) -> bool:
    return any(
        isinstance(a, ast.Name) and a.id == tensor for a in (*call.call.args, *(k.value for k in call.call.keywords))
    )


def _move_fix(
    ctx: FileContext, statements: dict[tuple[int, int], NodeAt], mark: NodeAt, earlier: HandleCall
) -> Fix | None:
    """Move the mark above the earlier call when both are expression statements of the same block."""
    mark_statement = statements.get(position(mark.node))
    call_statement = _statement_of(statements, earlier)
    if mark_statement is None or call_statement is None:
        return None
    if position(call_statement.node) > position(mark_statement.node):
        return None
    mark_node, call_node = mark_statement.node, call_statement.node
    assert isinstance(mark_node, ast.stmt) and isinstance(call_node, ast.stmt)
    if mark_node.col_offset != call_node.col_offset:
        return None
    if (
        mark_statement.loop_depth != call_statement.loop_depth
        or mark_statement.branch_depth != call_statement.branch_depth
    ):
        return None
    moves = line_edit_move(ctx, mark_node, call_node)
    return Fix(RULE.fix_title or "Mark the tensor dynamic before the first call", moves, safe=True) if moves else None


def _statement_of(statements: dict[tuple[int, int], NodeAt], call: HandleCall) -> NodeAt | None:
    """The statement ``name(...)`` or ``out = name(...)`` that makes the call."""
    return statements.get(position(call.call))


CHECK = Check(RULE.code, collect=collect, judge=judge_usage)
