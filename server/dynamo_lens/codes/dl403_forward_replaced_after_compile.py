"""DL403 · forward-replaced-after-compile

## What it does
Flags an assignment to `forward` of a compiled module, or of a module a compiled function calls
(`model.forward = ...`, `model.encoder.forward = types.MethodType(f, model.encoder)`), made after the module was
compiled.

## Why it matters
Monkeypatching `forward` puts `forward` into the instance `__dict__`. On torch 2.13 Dynamo notices it: measured
with `backend="eager"`, replacing the forward of the compiled module, of a submodule, or of a module called by a
compiled function after the first call ran the new forward on the next call with **one recompile** (2 compiles in
all); the results were correct. Each distinct replacement function is a new code object and is compiled on its own
(12 different lambdas → 12 compiles, with no recompile-limit hit). The results stay right and the cost is one
compile per new function, so the finding is `info`: it explains the extra compiles and points at a patch that is
easy to lose track of.

`load_state_dict(..., assign=True)` after compiling was also measured: the new parameters were used, with no
recompile; it is not reported.

## Example
```python
compiled = torch.compile(model)
compiled(x)
model.forward = patched_forward     # DL403: recompiles, and patches are easy to lose track of
compiled(x)
```

## Use instead
Subclass the module (or wrap it in another module) and compile the new module, or patch before compiling.

## Known limitations
Only assignments through a name bound in the same file to a compiled module (or a module attribute path starting at
one) are recognised.

## Fix safety
No automatic fix.

## References
- PyTorch, "torch.compile and nn.Module": https://docs.pytorch.org/docs/stable/torch.compiler_nn_module.html
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from dynamo_lens.codes import Check, Rule
from dynamo_lens.model import Severity
from dynamo_lens.static.context import FileContext
from dynamo_lens.static.semantic.usage import UsageCandidate, after_compiled_run, judge_usage, reach_of, usage
from dynamo_lens.torch_facts import torch_name

RULE = Rule(
    code="DL403",
    name="forward-replaced-after-compile",
    summary="A compiled module's forward is replaced after compiling: one recompile per new forward",
    default_severity=Severity.INFO,
    source="static",
    docs_url="https://docs.pytorch.org/docs/stable/torch.compiler_nn_module.html",
)


def collect(ctx: FileContext) -> Iterator[UsageCandidate]:
    table = usage(ctx)
    if not table.handles:
        return
    for at in ctx.attribute_bindings.get("forward", ()):
        node = at.node
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            if not isinstance(target, ast.Attribute) or target.attr != "forward":
                continue
            reach = reach_of(table, at, target.value)
            if reach is None:
                continue
            earlier = table.ran_before(set(reach.sites), at)
            if earlier is None:
                continue
            name = earlier.handle.name
            message = (
                f"`{ctx.source(target, 40)}` is replaced after compiled `{name}` already ran: {torch_name()} sees the "
                "new `forward` in the instance `__dict__` and compiles it on the next call (one compile per new "
                "function; results stay right), but the compiled module no longer runs the code its class shows"
            )
            yield after_compiled_run(ctx, RULE, target, message, reach, earlier)


CHECK = Check(RULE.code, collect=collect, judge=judge_usage)
