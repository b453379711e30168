"""DL111 · state-changed-between-calls

## What it does
Flags an assignment to an attribute of a compiled module made *outside* the compiled code, between calls:
`model.scale = 0.5`, `model.k = step`, `compiled.mode = "fast"`. It reports only attributes that the module's
`forward` (or a method reachable from it) reads, and grades the finding by the kind of value assigned.

## Why it matters
On torch 2.13 Dynamo treats every `nn.Module` as unspecialized and guards each Python scalar attribute that the
compiled code reads on its value (`EQUALS_MATCH self.k == 3`). Changing the attribute from outside fails that guard
on the next call. Measured on torch 2.13 (`backend="eager"`, 12 calls, a new value before each call):

* `int`: one compile per distinct value, never made dynamic: 8 compiles, then `recompile_limit` (8) is hit and the
  module silently runs in eager mode from then on.
* `str`: the same, one compile per value (12 distinct strings → 8 compiles + limit); two alternating strings → 2.
* `float`: one recompile, after which Dynamo makes the value dynamic (2 compiles in all).
* `bool`: one compiled entry per value (2 in all).
* An attribute the compiled code never reads is not guarded: changing it costs nothing (1 compile).

Setting the attribute through the compiled wrapper (`compiled.k = 3`) writes the original module's attribute and
behaves the same (8 compiles + limit for an int).

## Example
```python
model = Model()                     # forward reads self.k
compiled = torch.compile(model)
for step in range(1000):
    model.k = step % 16             # DL111: a compile per value, eager after 8
    compiled(x)
```

## Use instead
Keep values that change at run time in a tensor buffer updated in place (`model.k_t.fill_(step % 16)`): tensors
are guarded on metadata, not on values. Or pass the value as an argument of `forward` (an int argument becomes
dynamic after one recompile), or set `torch._dynamo.config.allow_unspec_int_on_nn_module = True`.

## Known limitations
The receiver must be a name bound in the same file to a module instance that is compiled (`torch.compile(model)`,
`model.compile()`) or to the compiled wrapper itself; attributes reached through containers or other objects are
not followed. Only changes made after the compiled module already ran (earlier in the same function, or in a loop
that calls it) are reported: configuring attributes before the first call costs nothing. Whether compiled code
reads the attribute is known only for classes defined in the workspace; attributes of other classes (`nn.Linear`)
are not reported. Values are classified from the assigned expression (literals, comparisons, arithmetic on loop
counters, `int()`/`float()`/`str()`); otherwise the kind `__init__` gave the attribute is used. A change made once
(not in a loop) is reported at `info`: one recompile.

## Fix safety
No automatic fix: turning an attribute into a buffer changes its type for every other reader.

## References
- PyTorch, "Dealing with recompilations": https://docs.pytorch.org/docs/stable/compile/programming_model.recompilation.html
- `torch/_dynamo/config.py`: `allow_unspec_int_on_nn_module`, `recompile_limit`
"""

from dynamo_lens.model import Severity
from dynamo_lens.rules import Rule

RULE = Rule(
    code="DL111",
    name="state-changed-between-calls",
    summary="A Python scalar attribute that compiled code reads is changed between calls",
    default_severity=Severity.WARNING,
    source="static",
    docs_url="https://docs.pytorch.org/docs/stable/compile/programming_model.recompilation.html",
    fix_title="Keep the value in a tensor buffer updated in place",
)
