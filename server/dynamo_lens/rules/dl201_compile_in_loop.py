"""DL201 · compile-in-loop

## What it does
Flags `torch.compile(...)` (and `torch._dynamo.optimize(...)`) evaluated inside a loop, or inside a function that is
called from a loop in the same file, so that a new compiled wrapper is built on every iteration.

## Why it matters
Dynamo caches compiled code on the Python code object, not on the wrapper, so rebuilding the wrapper usually does
*not* recompile. Measured on torch 2.13 (12 iterations):

* `torch.compile(f, backend="eager")(x)` in a loop: 1 compile; `torch.compile(f)` (Inductor) likewise (the
  wrappers compare equal: `_TorchCompileWrapper.__eq__`, `_TorchCompileInductorWrapper.__eq__`). The cost is the
  wrapper itself: about 110 µs to build an `eager` wrapper, 370 µs an Inductor one, and a call through a fresh wrapper
  took 149 µs against 15 µs through a hoisted one. Reported at `info`.
* A backend that is a **new callable on every iteration** (a `lambda`, a function defined in the loop, a
  `functools.partial(...)` or any call that builds the backend): the cache entry's `BACKEND_MATCH` guard fails
  ("torch.compile detected different backend callables"): 8 compiles, then `recompile_limit` is hit and the function
  runs in eager mode. Reported at the rule's default severity (warning).
* A function defined inside the loop that closes over the loop variable: one recompile, then the cell is dynamic
  (2 compiles).

## Example
```python
for batch in loader:
    step = torch.compile(train_step, backend=lambda gm, ex: gm.forward)   # DL201: BACKEND_MATCH fails every time
    step(batch)
```

## Use instead
Build the compiled callable once, before the loop, and reuse it (and reuse one backend object):
```python
step = torch.compile(train_step, backend=my_backend)
for batch in loader:
    step(batch)
```

## Known limitations
Functions called from a loop are followed one level, within one file, and are reported only with a fresh backend
(a helper that compiles per call may compile a different model each time). A loop that compiles something bound in
the loop (`for m in models: torch.compile(m)`) is not reported, nor one that resets Dynamo before compiling (each
iteration is then meant to compile from scratch; see DL206). Whether a backend expression builds a new callable
is decided from its syntax: a name bound outside the loop, and `torch._dynamo.lookup_backend(...)`, are assumed to
be stable.

## Fix safety
Hoisting the `torch.compile` call out of the loop is offered when its arguments do not depend on anything bound in
the loop; it is marked unsafe because the compiled callable is then shared by every iteration.

## References
- PyTorch, `torch.compile`: https://docs.pytorch.org/docs/stable/generated/torch.compile.html
- `torch/__init__.py`: `_TorchCompileWrapper.__eq__`; `torch/_dynamo/guards.py`: `BACKEND_MATCH`
"""

from dynamo_lens.model import Severity
from dynamo_lens.rules import Rule

RULE = Rule(
    code="DL201",
    name="compile-in-loop",
    summary="torch.compile is evaluated on every iteration of a loop",
    default_severity=Severity.WARNING,
    source="static",
    docs_url="https://docs.pytorch.org/docs/stable/generated/torch.compile.html",
    fix_title="Hoist torch.compile out of the loop",
)
