"""DL302 data-dependent-branch: Python control flow on a tensor's value inside compiled code (GB0170)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import partial

from dynamo_lens.rules.dl302_data_dependent_branch import RULE
from dynamo_lens.static.checks import Check
from dynamo_lens.static.checks._compiled_code import (
    IN_LOOP,
    FunctionBody,
    InsideCompiledCandidate,
    function_bodies,
    judge,
)
from dynamo_lens.static.context import FileContext

GB_ID = "GB0170"
GB_TYPE = "Data-dependent branching"


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
                    f'(torch 2.13: {GB_ID} "{GB_TYPE}"); use `torch.where(...)` or `torch.cond(...)`'
                    + (IN_LOOP if in_loop else "")
                ),
                severity=RULE.default_severity,
                data=(("gb_id", GB_ID), ("condition", text), ("in_loop", str(in_loop).lower())),
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
