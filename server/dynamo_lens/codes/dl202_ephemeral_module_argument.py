"""DL202 · ephemeral-module-argument

## What it does
Flags a module constructed inside a loop (or inline in the call) and passed as an argument to a compiled function:
`run(Block(), x)`, `step(nn.Linear(8, 8), batch)`.

## Why it matters
On torch 2.13 modules are unspecialized: Dynamo guards the module's type and the attributes it reads, and passes the
parameters as graph inputs. Measured on torch 2.13 (`backend="eager"`, 12 calls, a fresh `Block()` each call):
**1 compile**, no recompile. The cost appears when the fresh modules differ in a Python scalar the compiled code
reads: `run(Block(k=i), x)` with `self.k = k` read in `forward` compiled 8 times and then hit `recompile_limit` (8)
→ eager, because each instance's int is guarded by value (`EQUALS_MATCH`).

On torch < 2.5 (`inline_inbuilt_nn_modules` off) the module was specialized and guarded by identity (`ID_MATCH`):
every fresh module was a cache miss, dead modules' entries still counted towards the limit ("Cache line invalidated
... deallocated"), so the pattern recompiled until the limit (pytorch#130776). Reproduced on 2.13 by the legacy
switch `torchdynamo_force_dynamic = False`: 8 compiles + limit.

Building a module per call is also rarely what was meant: its parameters are freshly initialised on every call and
never trained. Reported at `info` on torch 2.13, and at `warning` when a constructor keyword that changes with the
loop counter is stored by `__init__` in an attribute that the module's methods read (the 8 + limit case above).

## Example
```python
@torch.compile
def run(mod, x):
    return mod(x) + 1

for x in loader:
    run(Block(), x)                 # DL202: a new module (and new weights) on every call
```

## Use instead
Build the module once, outside the loop, and pass the same instance on every call:
```python
block = Block()
for x in loader:
    run(block, x)
```

## Known limitations
Only constructor calls of classes known to be `nn.Module` subclasses (workspace classes and `torch.nn` layers) are
recognised, when they appear directly as an argument or through a name bound in the same loop body.

## Fix safety
No automatic fix: sharing one instance changes behaviour whenever the per-call construction was intended (fresh
random weights, different constructor arguments).

## References
- pytorch/pytorch#130776: https://github.com/pytorch/pytorch/issues/130776
- `torch/_dynamo/mutation_guard.py`: `is_dynamic_nn_module`
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from dynamo_lens.codes import Check, Rule
from dynamo_lens.model import Finding, Related, Severity
from dynamo_lens.static.context import FileContext
from dynamo_lens.static.semantic import settings
from dynamo_lens.static.semantic.index import WorkspaceIndex
from dynamo_lens.static.semantic.usage import compiled_code_reads, loop_scalars, names_in, position, scope_key, usage
from dynamo_lens.static.summary import Candidate, CompileSite, Ref
from dynamo_lens.torch_facts import is_torch_nn_module, torch_name

RULE = Rule(
    code="DL202",
    name="ephemeral-module-argument",
    summary="A module built per call is passed to a compiled function",
    default_severity=Severity.INFO,
    source="static",
    docs_url="https://github.com/pytorch/pytorch/issues/130776",
    fix_title="Build the module once, outside the loop",
    confirmed_by=("DL501", "DL502"),
)


@dataclass(frozen=True, slots=True)
class FreshModule(Candidate):
    constructor: Ref
    text: str
    callee: str
    site: CompileSite
    varying: tuple[str, ...]
    """Keyword arguments of the constructor whose value changes with the loop counter."""


def collect(ctx: FileContext) -> Iterator[FreshModule]:
    table = usage(ctx)
    for handle_call in table.calls:
        if handle_call.handle.module:
            continue  # the arguments of a compiled module's forward are inputs, not modules
        loops = table.enclosing_loops(handle_call.at)
        if not loops:
            continue
        innermost = loops[-1]
        counters = set(loop_scalars(loops))
        for argument in (*handle_call.call.args, *(k.value for k in handle_call.call.keywords)):
            built = argument
            if isinstance(argument, ast.Name):
                value = table.value_of(scope_key(handle_call.at.scope), argument.id, position(handle_call.call))
                inside = value is not None and innermost.body[0].lineno <= value.lineno <= handle_call.call.lineno
                built = value if inside and value is not None else argument
            if not isinstance(built, ast.Call) or not isinstance(built.func, ast.Name | ast.Attribute):
                continue
            constructor = ctx.ref(built.func, handle_call.at.scope)
            if constructor is None:
                continue
            varying = tuple(k.arg for k in built.keywords if k.arg is not None and names_in(k.value) & counters)
            yield FreshModule(
                RULE.code,
                ctx.span(argument),
                constructor,
                ctx.source(built, 40),
                handle_call.handle.name,
                handle_call.handle.site,
                varying,
            )


def judge(candidate: FreshModule, index: WorkspaceIndex) -> Iterator[Finding]:
    path = candidate.span.path
    key = index.resolve_class(path, candidate.constructor)
    ref = candidate.constructor
    if key is not None:
        if not index.is_module_class(key):
            return
    elif not (ref.level == 0 and is_torch_nn_module(ref.dotted)):
        return
    guarded = _guarded_attributes(index, key, candidate.varying) if key is not None else []
    base = (
        f"`{candidate.text}` builds a new module for every call of compiled `{candidate.callee}`: any parameters it "
        "has are freshly initialised each time."
    )
    related: tuple[Related, ...] = ()
    if guarded:
        limit = settings.recompile_limit(index, (candidate.site,))
        message = (
            f"{base} Its `{'`, `'.join(guarded)}` changes per call and the compiled code reads it as a Python "
            f"scalar: {torch_name()} guards it per instance, so every new value compiles again; {limit.past()}"
        )
        severity = Severity.WARNING
        related = limit.related
    else:
        message = (
            f"{base} On {torch_name()} this does not recompile (modules are unspecialized: 1 compile); on torch < 2.5 "
            "each new module was a cache miss until `recompile_limit`"
        )
        severity = RULE.default_severity
    yield index.finding(RULE, candidate.span, message, (candidate.site,), severity=severity, related=related)


def _guarded_attributes(index: WorkspaceIndex, key: tuple[str, str], keywords: tuple[str, ...]) -> list[str]:
    """Attributes that ``__init__`` sets from one of ``keywords`` and that the compiled code reads."""
    found: list[str] = []
    for owner in index.mro(key)[0]:
        owner_summary = index.class_summary(owner)
        if owner_summary is None:
            continue
        for attr in owner_summary.init_attrs:
            if (
                attr.value_text in keywords
                and compiled_code_reads(index, key, attr.name, reached_only=False) is not False
            ):
                found.append(f"self.{attr.name}")
    return found


CHECK = Check(RULE.code, collect=collect, judge=judge)
