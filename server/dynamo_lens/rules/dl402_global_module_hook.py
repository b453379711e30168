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
case looks at every compile site of the workspace. `module.compile()` (no wrapper) was not measured and is not
reported on its own.

## Fix safety
No automatic fix.

## References
- `torch.nn.modules.module.register_module_forward_hook`:
  https://docs.pytorch.org/docs/stable/generated/torch.nn.modules.module.register_module_forward_hook.html
"""

from dynamo_lens.model import Severity
from dynamo_lens.rules import Rule

RULE = Rule(
    code="DL402",
    name="global-module-hook",
    summary="A global module hook is registered in a program that compiles: it fires differently compiled vs eager",
    default_severity=Severity.WARNING,
    source="static",
    docs_url="https://docs.pytorch.org/docs/stable/generated/torch.nn.modules.module.register_module_forward_hook.html",
)
