"""DL302 · data-dependent-branch

## What it does
Flags an `if`, `while`, conditional expression (`a if cond else b`) or `and`/`or` operand inside compiled code whose
condition is a tensor: a comparison or a reduction of tensor values (`if y.sum() > 0:`,
`while t.abs().max() > 1:`, `if torch.isnan(x).any():`). The finding sits on the condition.

## Why it matters
Python control flow needs a Python `bool`, and a tensor's truth value is only known once the graph has run. Dynamo
stops the graph there (registry id GB0170 "Data-dependent branching", torch 2.13), runs the branch in Python and
resumes in a new frame, with its own guards and compiles. A data-dependent branch inside a loop makes Dynamo skip the
whole frame. Conditions on shapes, dtypes, `requires_grad`, `dim()` or `numel()` are known while tracing and are not
flagged, nor is `assert` on a tensor (Dynamo turns it into a runtime assertion without breaking). Compiled with
`fullgraph=True` everywhere it is reached, the branch raises `torch._dynamo.exc.Unsupported` on the first call
instead (measured), and the finding says so.

## Example
```python
@torch.compile
def clip(y):
    if y.abs().max() > 100:        # DL302: GB0170
        y = y / 100
    return y
```

## Use instead
Make the code branchless, which usually costs nothing on well-behaved inputs:
```python
    y = torch.where(y.abs().max() > 100, y / 100, y)
```
or express the branch with `torch.cond(pred, true_fn, false_fn, (y,))`, which Dynamo captures as one graph.

## Known limitations
A condition is recognised as a tensor when it is built from tensor methods (`sum`, `any`, `max`, ...), `torch.*`
functions, arguments annotated `torch.Tensor` or that every call of the compiled function (or compiled module, for
its `forward`) in its file passes a tensor (`step(x, torch.tensor(True))`, `model(batch, torch.tensor(True))`), or
local names assigned from such expressions. Any other bare argument
(`if x:`) is not reported, since it could be a Python flag. Branches on `.item()` values are reported as DL301. A
branch that compiled code reaches only under a condition (an outer `if`, or a call made conditionally on the way from
the compile site) is a hint: the scan cannot tell whether the program takes it. A branch only the first call takes
(`if self.stats is None:` with `self.stats = None` in `__init__`, filled by the branch) breaks once: an info.

## Fix safety
No automatic fix: `torch.where` evaluates both branches, and `torch.cond` needs both branches to return tensors of
the same shape.

## References
- Graph-break registry entry GB0170: https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0170.html
- PyTorch, `torch.cond`: https://docs.pytorch.org/docs/stable/generated/torch.cond.html
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import partial

from dynamo_lens.codes import Check, Rule
from dynamo_lens.model import Severity
from dynamo_lens.static.context import FileContext
from dynamo_lens.static.semantic.bodies import (
    FunctionBody,
    InsideCompiledCandidate,
    function_bodies,
    judge,
)
from dynamo_lens.torch_facts import BRANCH, break_in_loop, raised_under_fullgraph, torch_name

RULE = Rule(
    code="DL302",
    name="data-dependent-branch",
    summary="A branch inside compiled code depends on a tensor's value: the graph breaks here",
    default_severity=Severity.WARNING,
    source="static",
    docs_url="https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0170.html",
    confirmed_by=("DL503",),
)


def collect(ctx: FileContext) -> Iterator[InsideCompiledCandidate]:
    for body in function_bodies(ctx):
        for keyword, condition, statement in body.memoised(RULE.code, None, partial(_on_tensors, ctx, body)):
            text = ctx.source(condition, 60)
            shown = f"{keyword} {text}" if keyword in ("if", "while") else f"{text} {keyword} ..."
            in_loop = id(statement) in body.in_loop
            yield InsideCompiledCandidate(
                code=RULE.code,
                span=ctx.span(condition),
                function=body.qualname,
                message=(
                    f"`{shown}` branches on a tensor's value: the graph breaks here when compiled "
                    f"({torch_name()}: {BRANCH.quoted()}); {BRANCH.advice}" + (break_in_loop() if in_loop else "")
                ),
                severity=RULE.default_severity,
                data=(
                    ("gb_id", BRANCH.installed_id()),
                    ("condition", text),
                    ("in_loop", str(in_loop).lower()),
                    ("skips_function", str(in_loop).lower()),
                ),
                only_if_taken=True,
                guarded=id(statement) in body.guarded,
                requires=body.requires.get(id(statement), ()),
                first_call=body.first_call.get(id(statement), ()),
                raised_message=raised_under_fullgraph(f"`{shown}` branches on a tensor's value", BRANCH),
            )


def _on_tensors(ctx: FileContext, body: FunctionBody) -> list[tuple[str, ast.expr, ast.stmt]]:
    """The conditions of ``body`` that ask for a tensor's truth value."""
    conditions = list(_conditions(body))
    if not conditions:
        return []
    tensors = body.tensors(ctx)
    return [found for found in conditions if tensors.is_tensor_condition(found[1])]


def _may_branch(line: str) -> bool:
    return " if " in line or " and " in line or " or " in line


def _conditions(body: FunctionBody) -> Iterator[tuple[str, ast.expr, ast.stmt]]:
    """The expressions whose truth value Python asks for: ``if``/``while``/``x if c else y`` conditions, and the
    operands of ``a and b`` / ``a or b`` that decide whether the next one runs; each with its statement."""
    for statement in body.statements:
        if isinstance(statement, (ast.If, ast.While)):
            yield ("while" if isinstance(statement, ast.While) else "if"), statement.test, statement
    # Other statements are walked only when a line reads like a conditional expression or a boolean operator.
    found = [
        (statement, node)
        for statement, node in body.expressions(_may_branch, skip=(ast.If, ast.While))
        if isinstance(node, (ast.IfExp, ast.BoolOp))
    ]
    inside_tests: set[int] = set()
    for statement, node in found:
        if isinstance(node, ast.IfExp) and id(node) not in inside_tests:
            inside_tests.update(id(n) for n in ast.walk(node.test))
            yield "if", node.test, statement
    for statement, node in found:
        if isinstance(node, ast.BoolOp) and id(node) not in inside_tests:
            operator = "and" if isinstance(node.op, ast.And) else "or"
            yield from ((operator, v, statement) for v in node.values[:-1])


CHECK = Check(RULE.code, collect=collect, judge=judge, judged_locally=True)
