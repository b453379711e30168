"""DL001 · compile-site

## What it does
Marks every place that hands code to `torch.compile`: `torch.compile(fn_or_module, ...)`, `@torch.compile` and
`@torch.compile(...)`, `module.compile(...)`, `torch._dynamo.optimize(...)(fn)`, and the same through aliases
(`import torch as T`, `from torch import compile as tc`, `compiler = torch.compile`,
`functools.partial(torch.compile, mode=...)`). It says what is compiled: a function, a method, or a module instance
whose class it finds in the workspace, also when the class lives in another file.

This is not a problem. It anchors the editor features (code lens, hover, the run's per-frame counts) and tells the
other checks which code runs under Dynamo: hazards in code that a compile site reaches are warnings, hazards in
code no compile site reaches are hints.

## Why it matters
`torch.compile` compiles lazily: the first call of the compiled callable traces the Python code (the module's
`forward`, every method and submodule it calls, every function it calls that is not disabled) and installs *guards*
on what the trace read. Every later call checks the guards; a failing guard recompiles the frame, and after
`torch._dynamo.config.recompile_limit` (8 on torch 2.13) failed entries the frame runs eagerly. Knowing which
lines run under Dynamo is the first step to knowing which state it guards.

On torch 2.13, `torch.compile(module)` returns an `OptimizedModule` that shares the module's state: changing
`model.x` also changes what the compiled wrapper sees. `module.compile()` compiles in place (the module's own
`__call__` is routed through Dynamo).

## Example
```python
model = Model()
compiled = torch.compile(model, mode="reduce-overhead")   # DL001: compiles Model.forward (model.py)

@torch.compile(dynamic=True)                               # DL001: compiles step
def step(x):
    return x.sin()
```

## Use instead
Nothing to change. Compile once, outside loops (see DL201), and keep the compiled callable alive.

## Known limitations
Targets are followed through names bound in the same function or at module level (`m = Model(); torch.compile(m)`),
imports between workspace files, `self.<attr>` submodules created in `__init__`, and classmethod constructors
(`Model.from_config(...)`). A module returned by a factory function, or a callable stored in a container, is
reported with an unknown target. `model.compile()` is recognised by its shape (no positional arguments, a receiver
that is not an imported module), so another library's `compile()` method with that shape is marked too.

## Fix safety
There is no fix: this finding only marks the site.

## References
- PyTorch, `torch.compile`: https://docs.pytorch.org/docs/stable/generated/torch.compile.html
- PyTorch, "Dealing with recompilations": https://docs.pytorch.org/docs/stable/compile/programming_model.recompilation.html
"""

from dynamo_lens.model import Severity
from dynamo_lens.rules import Rule

RULE = Rule(
    code="DL001",
    name="compile-site",
    summary="Code is handed to torch.compile here",
    default_severity=Severity.HINT,
    source="static",
    docs_url="https://docs.pytorch.org/docs/stable/generated/torch.compile.html",
)
