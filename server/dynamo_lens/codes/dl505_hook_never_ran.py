"""DL505 · hook-never-ran

## What it does
Reported after an instrumented run for a forward hook or forward pre-hook registered on a submodule of a module
compiled with `torch.compile(model)` after something was compiled, that never ran while the compiled module ran
afterwards: at the user's line that registered it, with the module, the compiled module and how often it ran. It
confirms a static DL401 on that line.

## Why it matters
Dynamo does not guard the (empty) hook dictionaries of submodules (`torch._dynamo.config.skip_nnmodule_hook_guards
= True`): the compiled code keeps running without the hook, no recompile, no error, and the output silently differs
from eager. Measured on torch 2.13 (`backend="eager"`): a forward hook added to `model.lin` after the first compiled
call ran 0 times over the next 3 calls, while a hook added to the compiled module itself ran 3 times (its own hooks
run around the compiled code). A later recompile of the module traces the hook in, so it can start running then.

## Example
```python
compiled = torch.compile(model)
compiled(x)
model.lin.register_forward_hook(log_activations)   # DL505 (after a run): never ran in 3 compiled calls
for x in batches:
    compiled(x)
```

## Use instead
Register hooks before the first compiled call, or set `torch._dynamo.config.skip_nnmodule_hook_guards = False`
before compiling (each hook added later then costs one recompile and runs), or call `torch._dynamo.reset()` after
adding hooks.

## Known limitations
Only forward hooks and forward pre-hooks registered through a submodule of a module wrapped by
`torch.compile(model)`; hooks on modules that a compiled function uses, backward hooks and `model.compile()` in place
are not watched at run time (the static DL401 covers them). A run killed before it could count leaves them out.

## Fix safety
No automatic fix: where to register the hook depends on the program.

## References
- PyTorch, "torch.compile and nn.Module": https://docs.pytorch.org/docs/stable/torch.compiler_nn_module.html
- `torch/_dynamo/config.py`: `skip_nnmodule_hook_guards`
"""

from __future__ import annotations

from dynamo_lens.codes import Rule
from dynamo_lens.model import Severity

RULE = Rule(
    code="DL505",
    name="hook-never-ran",
    summary="A hook added after the compile never ran while the compiled module did",
    default_severity=Severity.WARNING,
    source="runtime",
    docs_url="https://docs.pytorch.org/docs/stable/torch.compiler_nn_module.html",
)
