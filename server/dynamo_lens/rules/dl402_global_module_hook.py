"""DL402 · global-module-hook

## What it does
Flags `torch.nn.modules.module.register_module_forward_pre_hook`, `register_module_forward_hook`,
`register_module_full_backward_hook` and `register_module_full_backward_pre_hook` (hooks on *every* module) in a
file that compiles a module or function.

## Why it matters
A global hook runs for each module call. Under `torch.compile` the set of module calls is not the same as in eager
mode. Measured on torch 2.13 (`backend="eager"`, a hook that doubles each output, model = a wrapper around one
`Linear`):

* registered before compiling: eager fired for `Linear` and the wrapper; a compiled call fired for `Linear`, the
  wrapper **and** the `OptimizedModule` returned by `torch.compile`, so the output was doubled three times instead of
  twice: a different result from eager, with no warning. A pre-hook behaved the same way.
* registered after the first compiled call: the hook no longer fired for the inner `Linear` (its call is inside the
  compiled graph) but still fired for the wrapper and the `OptimizedModule`.

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
Any global hook in a file that compiles is reported, whatever the hook does; a hook that only logs is harmless for
results but still fires a different number of times.

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
