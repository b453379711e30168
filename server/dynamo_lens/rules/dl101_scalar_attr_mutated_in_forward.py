"""DL101 · scalar-attr-mutated-in-forward

## What it does
Flags a Python `int`, `float`, `bool` or `str` attribute of an `nn.Module` that `forward` (or a method reachable from
it) reads and then writes, so that its value is carried from one call to the next: `self.steps += 1`,
`self.calls = self.calls + 1`, `self.flag = not self.flag`.

## Why it matters
On torch 2.13 Dynamo treats every `nn.Module` as unspecialized and guards each attribute it reads on its own. A
Python scalar attribute is burned into the compiled graph as a constant and protected by a guard on its value
(`EQUALS_MATCH self.steps == 3`; `TRUE_MATCH`/`FALSE_MATCH` for bools). When the next call sees a new value, the
guard fails and the frame is compiled again.

* `int`: one compile per distinct value, never made dynamic automatically
  (`torch._dynamo.config.allow_unspec_int_on_nn_module` is False by default). A counter recompiles on every call
  until `torch._dynamo.config.recompile_limit` (8) is hit; from then on the frame silently runs in eager mode.
* `float`: one recompile, after which Dynamo makes the value dynamic (`specialize_float=False`).
* `bool`: at most one compiled entry per value (two in all), so it costs one extra compile.
* `str`: one compile per distinct value, never dynamic.

The guard that fails points at the *read* of the attribute; the write is what makes the value change.

Only `nn.Module` int attributes stay static: on a plain Python object whose method is compiled
(`@torch.compile def step(self, ...)`), an int attribute is made dynamic after one recompile (measured: two
compiles), so that case is reported as `info`.

## Example
```python
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.steps = 0

    def forward(self, x):
        self.steps += 1            # DL101: recompiles on every call, eager after 8
        return self.lin(x) * self.steps
```

## Use instead
Keep the counter in a tensor buffer and update it in place; Dynamo guards tensors on metadata, not values:
```python
        self.register_buffer("steps", torch.zeros((), dtype=torch.long))
    ...
        self.steps.add_(1)
```
Or let Dynamo treat integer module attributes as dynamic (one extra compile, then a symbolic int):
`torch._dynamo.config.allow_unspec_int_on_nn_module = True`. Or move the bookkeeping out of `forward`.

## Known limitations
The analysis follows `self.<name>` reads and writes in evaluation order through methods called as `self.method()`,
`super().method()` and properties, through the class's bases in the workspace; it does not follow aliases
(`s = self; s.steps += 1`) or writes through other objects. A write counts as happening on every call only when it
is not under `if`/loops/`try`; a helper's unconditional writes are assumed to have run even when the helper can
return early (Dynamo traces one path at a time). Writes of a constant (`self.mode = 2`), bools and floats cost a
bounded number of compiles and are reported as `info`; an attribute first created in `forward` is DL103.

## Fix safety
Converting the counter to a buffer (offered when `__init__` sets an int literal and every change is `+=`/`-=`) is
unsafe: code that uses the attribute as a Python `int` (indexing, `range`, string formatting, comparisons feeding
Python control flow) now sees a tensor. Setting `allow_unspec_int_on_nn_module` (measured on 2.13: two compiles
instead of eight plus the limit) keeps results but changes what Dynamo specialises for every module, so it is not
applied in bulk either; it is offered for torch ≥ 2.5, where modules are traced unspecialised (not verified on
older releases).

## References
- PyTorch, "Dealing with recompilations": https://docs.pytorch.org/docs/stable/compile/programming_model.recompilation.html
- `torch/_dynamo/config.py`: `recompile_limit`, `allow_unspec_int_on_nn_module`
"""

from dynamo_lens.model import Severity
from dynamo_lens.rules import Rule

RULE = Rule(
    code="DL101",
    name="scalar-attr-mutated-in-forward",
    summary="A Python scalar module attribute is read and then changed inside the compiled forward",
    default_severity=Severity.WARNING,
    source="static",
    docs_url="https://docs.pytorch.org/docs/stable/compile/programming_model.recompilation.html",
    fix_title="Keep the counter in a tensor buffer",
)
