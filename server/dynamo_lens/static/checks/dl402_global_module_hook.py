"""DL402: a global module hook (``register_module_forward_hook`` & co.) in a workspace that compiles."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from dynamo_lens.model import Finding, Related, Span
from dynamo_lens.rules.dl402_global_module_hook import RULE
from dynamo_lens.static.checks import Check
from dynamo_lens.static.checks._usage import call_named, usage
from dynamo_lens.static.context import FileContext
from dynamo_lens.static.index import WorkspaceIndex
from dynamo_lens.static.summary import Candidate, CompileSite

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
    ran_before: CompileSite | None
    """The compile site whose compiled code already ran when the hook is installed (same function), if any."""
    earlier: Span | None


def collect(ctx: FileContext) -> Iterator[GlobalHook]:
    if "register_module_" not in ctx.text:
        return
    table = usage(ctx)
    every_site = {handle.site for handle in table.handles.values()}
    for at in ctx.nodes(ast.Call):
        call = call_named(ctx, at, GLOBAL_HOOKS)
        if call is None:
            continue
        name = (ctx.resolve(call.func) or "").rpartition(".")[2]
        earlier = table.ran_before(every_site, at) if every_site else None
        if earlier is not None:
            yield GlobalHook(RULE.code, ctx.span(call), name, earlier.handle.site, ctx.span(earlier.call))
        else:
            yield GlobalHook(RULE.code, ctx.span(call), name, None, None)


def judge(candidate: GlobalHook, index: WorkspaceIndex) -> Iterator[Finding]:
    if candidate.ran_before is not None and candidate.earlier is not None:
        message = (
            f"`{candidate.function}` installs a hook on every module after compiled code already ran: module calls "
            "that torch 2.13 traced into that graph never reach the hook (measured: 0 firings where eager fires on "
            "every call), so it silently sees less than in eager"
        )
        related = (Related(candidate.earlier, "compiled code ran here first"),)
        yield index.finding(RULE, candidate.span, message, (candidate.ran_before,), related=related)
        return
    wrapped = [site for site in index.compile_sites() if _compiles_module(index, site)]
    if not wrapped:
        return  # hooks installed before compiled functions are traced in and fire as in eager (measured)
    here = [site for site in wrapped if site.span.path == candidate.span.path]
    message = (
        f"`{candidate.function}` installs a hook on every module, and this workspace wraps modules with "
        "`torch.compile(module)`: torch 2.13 fires global hooks differently for compiled calls (also for the "
        "`OptimizedModule` wrapper, which torch itself warns about, and not for calls traced into the graph; "
        "measured: 6 or 24 firings where eager fires 18), so a hook that counts or changes outputs sees other results"
    )
    yield index.finding(RULE, candidate.span, message, here or wrapped)


def _compiles_module(index: WorkspaceIndex, site: CompileSite) -> bool:
    """``torch.compile(<module>)`` (the form that returns an ``OptimizedModule``), not a function or ``.compile()``."""
    if site.form not in ("call", "optimize", "partial"):
        return False
    target = site.target
    if target.kind in ("instance", "unknown", "self_attr"):
        return True
    if target.kind == "name" and target.ref is not None:
        symbol = index.resolve(site.span.path, target.ref)
        return symbol is None or symbol.kind == "instance"
    return False


CHECK = Check(RULE.code, collect=collect, judge=judge)
