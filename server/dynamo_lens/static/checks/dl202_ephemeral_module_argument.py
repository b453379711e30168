"""DL202: a module constructed per call and passed to a compiled function."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from dynamo_lens.model import Finding, Severity
from dynamo_lens.rules.dl202_ephemeral_module_argument import RULE
from dynamo_lens.static.checks import Check
from dynamo_lens.static.checks._usage import compiled_code_reads, loop_scalars, names_in, position, scope_key, usage
from dynamo_lens.static.context import FileContext
from dynamo_lens.static.index import WorkspaceIndex
from dynamo_lens.static.summary import Candidate, CompileSite, Ref


@dataclass(frozen=True, slots=True)
class FreshModule(Candidate):
    constructor: Ref
    text: str
    callee: str
    site: CompileSite
    varying: tuple[str, ...]
    """Keyword arguments of the constructor whose value changes with the loop counter."""


def collect(ctx: FileContext) -> Iterator[FreshModule]:
    table = usage(ctx)
    for handle_call in table.calls:
        if handle_call.handle.module:
            continue  # the arguments of a compiled module's forward are inputs, not modules
        loops = table.enclosing_loops(handle_call.at)
        if not loops:
            continue
        innermost = loops[-1]
        counters = set(loop_scalars(loops))
        for argument in (*handle_call.call.args, *(k.value for k in handle_call.call.keywords)):
            built = argument
            if isinstance(argument, ast.Name):
                value = table.value_of(scope_key(handle_call.at.scope), argument.id, position(handle_call.call))
                inside = value is not None and innermost.body[0].lineno <= value.lineno <= handle_call.call.lineno
                built = value if inside and value is not None else argument
            if not isinstance(built, ast.Call) or not isinstance(built.func, ast.Name | ast.Attribute):
                continue
            constructor = ctx.ref(built.func, handle_call.at.scope)
            if constructor is None:
                continue
            varying = tuple(k.arg for k in built.keywords if k.arg is not None and names_in(k.value) & counters)
            yield FreshModule(
                RULE.code,
                ctx.span(argument),
                constructor,
                ctx.source(built, 40),
                handle_call.handle.name,
                handle_call.handle.site,
                varying,
            )


def judge(candidate: FreshModule, index: WorkspaceIndex) -> Iterator[Finding]:
    path = candidate.span.path
    key = index.resolve_class(path, candidate.constructor)
    ref = candidate.constructor
    if key is not None:
        if not index.is_module_class(key):
            return
    elif not (ref.level == 0 and ref.dotted.startswith("torch.nn.") and ref.last[:1].isupper()):
        return
    guarded = _guarded_attributes(index, key, candidate.varying) if key is not None else []
    base = (
        f"`{candidate.text}` builds a new module for every call of compiled `{candidate.callee}`: any parameters it "
        "has are freshly initialised each time."
    )
    if guarded:
        message = (
            f"{base} Its `{'`, `'.join(guarded)}` changes per call and the compiled code reads it as a Python "
            "scalar: torch 2.13 guards it per instance, so every new value compiles again (8 compiles, then "
            "`recompile_limit` → eager)"
        )
        severity = Severity.WARNING
    else:
        message = (
            f"{base} On torch 2.13 this does not recompile (modules are unspecialized: 1 compile); on torch < 2.5 "
            "each new module was a cache miss until `recompile_limit`"
        )
        severity = RULE.default_severity
    yield index.finding(RULE, candidate.span, message, (candidate.site,), severity=severity)


def _guarded_attributes(index: WorkspaceIndex, key: tuple[str, str], keywords: tuple[str, ...]) -> list[str]:
    """Attributes that ``__init__`` sets from one of ``keywords`` and that the compiled code reads."""
    found: list[str] = []
    for owner in index.mro(key)[0]:
        owner_summary = index.class_summary(owner)
        if owner_summary is None:
            continue
        for attr in owner_summary.init_attrs:
            if (
                attr.value_text in keywords
                and compiled_code_reads(index, key, attr.name, reached_only=False) is not False
            ):
                found.append(f"self.{attr.name}")
    return found


CHECK = Check(RULE.code, collect=collect, judge=judge)
