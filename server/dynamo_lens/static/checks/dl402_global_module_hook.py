"""DL402: a global module hook (``register_module_forward_hook`` & co.) in a workspace that compiles."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from dynamo_lens.model import Finding
from dynamo_lens.rules.dl402_global_module_hook import RULE
from dynamo_lens.static.checks import Check
from dynamo_lens.static.checks._usage import call_named
from dynamo_lens.static.context import FileContext
from dynamo_lens.static.index import WorkspaceIndex
from dynamo_lens.static.summary import Candidate

_MODULE = "torch.nn.modules.module."
GLOBAL_HOOKS = frozenset(
    _MODULE + name
    for name in (
        "register_module_forward_hook",
        "register_module_forward_pre_hook",
        "register_module_full_backward_hook",
        "register_module_full_backward_pre_hook",
        "register_module_backward_hook",
    )
)


@dataclass(frozen=True, slots=True)
class GlobalHook(Candidate):
    function: str


def collect(ctx: FileContext) -> Iterator[GlobalHook]:
    for at in ctx.nodes(ast.Call):
        call = call_named(ctx, at, GLOBAL_HOOKS)
        if call is not None:
            name = (ctx.resolve(call.func) or "").rpartition(".")[2]
            yield GlobalHook(RULE.code, ctx.span(call), name)


def judge(candidate: GlobalHook, index: WorkspaceIndex) -> Iterator[Finding]:
    sites = index.compile_sites()
    if not sites:
        return  # a global hook in a program that never compiles is ordinary eager code
    here = [site for site in sites if site.span.path == candidate.span.path]
    message = (
        f"`{candidate.function}` installs a hook on every module, and this workspace compiles: under torch 2.13 "
        "compiled calls fire it differently from eager: also for the `OptimizedModule` that `torch.compile(module)` "
        "returns (torch warns about this), and not for modules whose calls were traced into a graph before the hook "
        "existed; a hook that changes outputs then changes results"
    )
    yield index.finding(RULE, candidate.span, message, here or sites)


CHECK = Check(RULE.code, collect=collect, judge=judge)
