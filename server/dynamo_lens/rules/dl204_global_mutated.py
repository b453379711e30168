"""DL204 · global-mutated

## What it does
Flags a read, inside compiled code, of a module-level global that the program assigns again after its first
definition: in a loop at module level, through `global NAME` in a function (a setter, a step counter), or with an
augmented assignment (`STEP += 1`), including inside the compiled function itself. The finding sits on the read in
the compiled code; the assignments are shown as related locations. The same holds for a member of a module-level
object or dict that the program changes the same ways (`cfg.scale = step`, `HPARAMS["lr"] = lr`, `state.step += 1`
in a helper): Dynamo guards `G['cfg'].scale == 2` like a global.

## Why it matters
Dynamo guards every global a compiled frame reads. What the guard checks depends on the value (torch 2.13,
`backend="eager"`, 12 calls with a new value each):

* `int`: guarded by value (`EQUALS_MATCH G['SCALE'] == 2`). Global ints are **always specialised**, never made
  dynamic: every new value recompiles, until `torch._dynamo.config.recompile_limit` (8) is hit; from then on the
  frame silently runs in eager mode (with `fullgraph=True` the ninth call raises `FailOnRecompileLimitHit`).
* `str`: one compile per distinct value, never dynamic: limit hit, like ints.
* a list or tuple of changing length: `len(G['SIZES']) == 2`, one compile per length: limit hit.
* `float`: one recompile, then Dynamo makes the value dynamic (2 compiles in all).
* `bool`, or `None` later replaced by an object: one recompile per value (2 compiles in all).
* a tensor rebound to another tensor of the same dtype, shape and strides: free (tensors are guarded on metadata).

The failing guard points at the read inside the compiled code, which is where this finding is reported.

## Example
```python
SCALE = 1

@torch.compile
def f(x):
    return x * SCALE               # DL204: guarded `G['SCALE'] == 1`

for step in range(100):
    SCALE = step + 2               # a new value every call: 8 compiles, then eager
    f(x)
```

## Use instead
Pass the value as an argument (a varying Python int argument recompiles once, then becomes dynamic), or keep it in a
tensor updated in place, which Dynamo guards on metadata only:
```python
SCALE = torch.tensor(1.0)

@torch.compile
def f(x):
    return x * SCALE

for step in range(100):
    SCALE.fill_(step + 2)          # one compile
    f(x)
```

## Known limitations
Only assignments the analysis can see are counted: plain, augmented and annotated assignments to the name at module
level (a second binding or one inside a loop) and in functions that declare it `global`, plus loop targets at module
level; for members, assignments to `name.attr` / `name["key"]` (constant key) in a module-level loop, augmented, or in
any function. Writes from other modules (`config.SCALE = 3` where `config` is imported is followed only inside the
file that reads it), through `globals()[...]` or `setattr`, and members of a module that is itself compiled (DL111)
are not reported here. Values whose kind cannot be inferred (the result of an arbitrary call) are not reported; a
tensor is reported only when it replaces `None`.

## Fix safety
No automatic fix: turning the global into an argument or a tensor changes every function that reads it. A suppression
comment `# dynamo-lens: ignore[DL204]` is offered when a value changes only a few times on purpose.

## References
- PyTorch, "Dealing with recompilations": https://docs.pytorch.org/docs/stable/compile/programming_model.recompilation.html
- `torch/_dynamo/config.py`: `recompile_limit`
- global ints always specialise: `torch/_dynamo/utils.py`, `is_int_specialization_case`
"""

from dynamo_lens.model import Severity
from dynamo_lens.rules import Rule

RULE = Rule(
    code="DL204",
    name="global-mutated",
    summary="Compiled code reads a module-level global that the program assigns again between calls",
    default_severity=Severity.WARNING,
    source="static",
    docs_url="https://docs.pytorch.org/docs/stable/compile/programming_model.recompilation.html",
    fix_title="Pass the value as an argument or keep it in a tensor",
)
