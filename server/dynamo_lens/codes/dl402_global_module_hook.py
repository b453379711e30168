"""DL402 · global-module-hook

## What it does
Flags `torch.nn.modules.module.register_module_forward_pre_hook`, `register_module_forward_hook`,
`register_module_full_backward_hook` and `register_module_full_backward_pre_hook` (hooks on *every* module) when
compiled calls will fire them differently from eager: the workspace wraps a module with `torch.compile(module)`, or
the hook is installed after compiled code already ran (same function).

## Why it matters
A global hook runs for each module call, but compiled code does not make the same module calls as eager code.
Measured on torch 2.13 (`backend="eager"`, a hook that counts calls in a tensor, 6 calls):

* `torch.compile(nn.Sequential(nn.Linear(...), nn.ReLU()))` with the hook installed first: eager fired 18 times;
  compiled calls fired 24 times in a fresh process (also for the `OptimizedModule` wrapper; torch itself warns
  "this will cause the hooks to fire an extra time for the OptimizedModule") and 6 times after other compiled
  scripts had run in the same process. With a hook that changes outputs, the results differed from eager.
* installed after a compiled function already ran: the `Linear` called inside the compiled graph never reached the
  hook (0 firings where eager fired 5).
* installed before a compiled *function* first ran: the hook was traced into the graph and fired exactly as in eager
  (6 and 6): this case is not reported.

## Example
```python
from torch.nn.modules.module import register_module_forward_hook

register_module_forward_hook(log_shapes)    # DL402: fires differently compiled vs eager
compiled = torch.compile(model)
```

## Use instead
Register hooks on the specific modules you want to observe, before compiling (see DL401), or run the instrumented
pass on the uncompiled model.

## Known limitations
The hook is reported whatever it does; a hook that only logs is harmless for results but still fires a different
number of times. "After compiled code ran" is decided by statement order within one function; the module-wrapper
case looks at every compile site that can run in the same program as the hook (a file reaching both, or one reaching
the other), whether or not it actually runs. `module.compile()` (no wrapper) was not measured and is not
reported on its own.

## Fix safety
No automatic fix.

## References
- `torch.nn.modules.module.register_module_forward_hook`:
  https://docs.pytorch.org/docs/stable/generated/torch.nn.modules.module.register_module_forward_hook.html
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from dynamo_lens.codes import Check, Rule
from dynamo_lens.model import Finding, Related, Severity, Span
from dynamo_lens.static.context import FileContext
from dynamo_lens.static.semantic.evaluate import Container, External, Instance
from dynamo_lens.static.semantic.index import WorkspaceIndex
from dynamo_lens.static.semantic.usage import call_named, usage
from dynamo_lens.static.summary import Candidate, CompileSite
from dynamo_lens.torch_facts import torch_name

RULE = Rule(
    code="DL402",
    name="global-module-hook",
    summary="A global module hook is registered in a program that compiles: it fires differently compiled vs eager",
    default_severity=Severity.WARNING,
    source="static",
    docs_url="https://docs.pytorch.org/docs/stable/generated/torch.nn.modules.module.register_module_forward_hook.html",
)


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
            f"that {torch_name()} traced into that graph never reach the hook (measured: 0 firings where eager fires "
            "on every call), so it silently sees less than in eager"
        )
        related = (Related(candidate.earlier, "compiled code ran here first"),)
        yield index.finding(RULE, candidate.span, message, (candidate.ran_before,), related=related)
        return
    wrapped = [
        site
        for site in index.compile_sites()
        if index.files.together(candidate.span.path, site.span.path) and _compiles_module(index, site)
    ]
    if not wrapped:
        return  # hooks installed before compiled functions are traced in and fire as in eager (measured)
    here = [site for site in wrapped if site.span.path == candidate.span.path]
    message = (
        f"`{candidate.function}` installs a hook on every module, and this workspace wraps modules with "
        f"`torch.compile(module)`: {torch_name()} fires global hooks differently for compiled calls (also for the "
        "`OptimizedModule` wrapper, which torch itself warns about, and not for calls traced into the graph; "
        "measured: 6 or 24 firings where eager fires 18), so a hook that counts or changes outputs sees other results"
    )
    yield index.finding(RULE, candidate.span, message, here or wrapped)


def _compiles_module(index: WorkspaceIndex, site: CompileSite) -> bool:
    """``torch.compile(<module>)`` (the form that returns an ``OptimizedModule``) of something known to be a module,
    not a function, ``.compile()``, or a value the semantic model cannot tell."""
    if site.form not in ("call", "optimize", "partial"):
        return False
    for value in index.reach.site_values(site):
        if isinstance(value, Instance) and index.is_module_class(value.cls):
            return True
        if (isinstance(value, External) and value.instance) or (isinstance(value, Container) and value.sequential):
            return True
    return False


CHECK = Check(RULE.code, collect=collect, judge=judge)
