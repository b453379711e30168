"""DL111: an attribute of a compiled module, read by its compiled code, is changed between calls."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from dynamo_lens.model import Finding, Related, Severity, Span
from dynamo_lens.rules.dl111_state_changed_between_calls import RULE
from dynamo_lens.static.checks import Check
from dynamo_lens.static.checks._usage import (
    compiled_code_reads,
    loop_scalars,
    position,
    scope_key,
    statements_changing,
    usage,
    value_kind,
)
from dynamo_lens.static.context import FileContext
from dynamo_lens.static.index import WorkspaceIndex
from dynamo_lens.static.summary import Candidate, CompileSite, Ref

SCALARS = ("int", "float", "bool", "str")
IGNORED = frozenset({"forward", "training"})


@dataclass(frozen=True, slots=True)
class StateChange(Candidate):
    receiver: str
    attr: str
    cls: Ref | None
    kind: str
    varies: bool
    site: CompileSite
    earlier: Span


def collect(ctx: FileContext) -> Iterator[StateChange]:
    table = usage(ctx)
    if not table.handles:
        return
    for at in statements_changing(ctx, {name for _, name in table.handles}, (ast.Assign, ast.AugAssign)):
        node = at.node
        assert isinstance(node, ast.Assign | ast.AugAssign)
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            if not isinstance(target, ast.Attribute) or not isinstance(target.value, ast.Name):
                continue
            if target.attr in IGNORED or target.attr.startswith("__"):
                continue
            handle = table.handle(scope_key(at.scope), target.value.id)
            if handle is None or not handle.module:
                continue
            earlier = table.ran_before({handle.site}, at)
            if earlier is None:
                continue  # configuration before the first compiled call costs nothing
            loops = table.enclosing_loops(at)
            kind, varies = value_kind(node.value, loop_scalars(loops))
            if isinstance(node, ast.AugAssign):
                varies = bool(loops)
            cls = handle.site.target.ref if handle.site.target.kind == "instance" else None
            if cls is None:
                cls = table.class_ref(scope_key(at.scope), handle.site.target.text or handle.name, position(node))
            yield StateChange(
                RULE.code,
                ctx.span(target),
                target.value.id,
                target.attr,
                cls,
                kind,
                varies and bool(loops),
                handle.site,
                ctx.span(earlier.call),
            )


def judge(candidate: StateChange, index: WorkspaceIndex) -> Iterator[Finding]:
    key = index.resolve_class(candidate.site.span.path, candidate.cls) if candidate.cls is not None else None
    if key is None:
        return  # a class outside the workspace: we cannot tell whether its compiled code reads the attribute
    read = compiled_code_reads(index, key, candidate.attr)
    if read is False:
        return  # never read by compiled code: not guarded, changing it is free
    init = read if not isinstance(read, bool) else None
    kind = candidate.kind if candidate.kind != "unknown" else (init.kind if init is not None else "unknown")
    if kind not in SCALARS:
        return
    name = f"`{candidate.receiver}.{candidate.attr}`"
    if kind in ("int", "str") and candidate.varies:
        severity = RULE.default_severity
        message = (
            f"{name} ({kind}) changes between calls of the compiled module, whose code reads it: torch 2.13 guards "
            f"it by value (`EQUALS_MATCH`) and never makes {kind} module attributes dynamic, so each distinct value "
            "compiles once more; past 8 values `recompile_limit` is hit and the module runs eagerly"
        )
    elif kind in ("int", "str"):
        severity = Severity.INFO
        message = (
            f"{name} ({kind}) is changed after the compiled module ran, and its code reads it: torch 2.13 guards it by "
            "value, so the next call compiles again (one recompile per distinct value)"
        )
    elif kind == "float":
        severity = Severity.INFO
        message = (
            f"{name} (float) changes between calls of the compiled module, whose code reads it: torch 2.13 "
            "recompiles once, then treats the float as dynamic (2 compiles in all)"
        )
    else:
        severity = Severity.INFO
        message = (
            f"{name} (bool) changes between calls of the compiled module, whose code reads it: torch 2.13 keeps one "
            "compiled entry per value (2 in all)"
        )
    related = [Related(candidate.earlier, "the compiled module ran here before")]
    if init is not None:
        related.append(Related(init.span, f"`{candidate.attr}` set in __init__"))
    yield index.finding(RULE, candidate.span, message, (candidate.site,), severity=severity, related=related)


CHECK = Check(RULE.code, collect=collect, judge=judge)
