"""DL401 · hook-added-after-compile

## What it does
Flags `register_forward_hook`, `register_forward_pre_hook`, `register_full_backward_hook` and
`register_full_backward_pre_hook` on a submodule of a compiled module (`model.layer.register_forward_hook(...)`),
or on a module that a compiled function calls, after the compiled code has already run.

## Why it matters
Dynamo does not guard hook dictionaries that were empty when it compiled
(`torch._dynamo.config.skip_nnmodule_hook_guards = True`, documented as unsafe). A hook added afterwards to a
module whose call was traced into the graph is never seen: no recompile, the hook does not run, and the output
silently differs from eager. Measured on torch 2.13 (`backend="eager"`, a hook counting its calls in a tensor):

* forward hook, forward pre-hook and full backward hook added to a *submodule* after the first call: 0 firings
  over the next calls (eager: one per call), with `torch.compile(model)` and with `model.compile()`;
* a hook on a module that a compiled function calls: 0 firings (eager 5);
* a hook on the top-level module of `torch.compile(nn.Sequential(...))`: 0 firings: for `torch.nn` classes
  `torch.compile` traces the module's own `__call__`, hooks included;
* not reported, because they behaved like eager: hooks registered before the first call; a hook on the top-level
  module of a *workspace* class compiled with `torch.compile(model)` or `model.compile()` (its own hooks run
  outside the compiled frame); adding a second hook to a module that already had one (the non-empty dict is
  guarded: one recompile); `nn.Sequential(...).compile()`, whose calls were not compiled at all.

## Example
```python
compiled = torch.compile(model)
compiled(x)
model.encoder.register_forward_hook(save_activation)    # DL401: never called by the compiled code
compiled(x)
```

## Use instead
Register hooks before the first call of the compiled module, or call `torch._dynamo.reset()` after registering them
(one new compile), or set `torch._dynamo.config.skip_nnmodule_hook_guards = False` (more guards on every call).

## Known limitations
"After the compiled code has run" is decided by statement order within one function: a call of the compiled module
or function earlier in the same function, or an enclosing loop that calls it. Hooks registered through helper
functions in other files are not followed.

## Fix safety
No automatic fix: moving a hook registration changes which calls it observes.

## References
- `torch/_dynamo/config.py`: `skip_nnmodule_hook_guards`
- PyTorch, "torch.compile and nn.Module hooks": https://docs.pytorch.org/docs/stable/torch.compiler_nn_module.html
"""

from __future__ import annotations

from collections.abc import Iterator

from dynamo_lens.codes import Check, Rule
from dynamo_lens.model import Severity
from dynamo_lens.static.context import FileContext
from dynamo_lens.static.semantic.usage import (
    UsageCandidate,
    after_compiled_run,
    judge_usage,
    method_calls,
    reach_of,
    usage,
)

RULE = Rule(
    code="DL401",
    name="hook-added-after-compile",
    summary="A module hook is registered after the compiled code ran: compiled calls silently ignore it",
    default_severity=Severity.WARNING,
    source="static",
    docs_url="https://docs.pytorch.org/docs/stable/torch.compiler_nn_module.html",
    fix_title="Register the hook before the first compiled call",
)


HOOKS = frozenset(
    {
        "register_forward_hook",
        "register_forward_pre_hook",
        "register_full_backward_hook",
        "register_full_backward_pre_hook",
        "register_backward_hook",
    }
)


def collect(ctx: FileContext) -> Iterator[UsageCandidate]:
    table = usage(ctx)
    if not table.handles:
        return
    for at, call, func in method_calls(ctx, HOOKS):
        reach = reach_of(table, at, func.value)
        if reach is None or not reach.inside:
            continue
        earlier = table.ran_before(set(reach.sites), at)
        if earlier is None:
            continue
        name = earlier.handle.name
        message = (
            f"`{func.attr}` on `{ctx.source(func.value, 40)}` after compiled `{name}` already ran: torch 2.13 does not "
            "guard hook dicts that were empty when it compiled (`skip_nnmodule_hook_guards`), so the compiled code "
            "never calls this hook: no recompile, no error, and results silently differ from eager"
        )
        yield after_compiled_run(ctx, RULE, call, message, reach, earlier)


CHECK = Check(RULE.code, collect=collect, judge=judge_usage)
