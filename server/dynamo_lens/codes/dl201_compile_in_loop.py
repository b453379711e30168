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
  runs in eager mode (12 compiles under `recompile_limit = 12`: the message states the project's limit). Reported at
  the rule's default severity (warning).
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
the loop (`for m in models: torch.compile(m)`) is not reported, nor one that resets Dynamo before compiling (DL206
reports it when the loop compiles the same thing each time), nor a compile under an `if` that holds on one
iteration only: a counter compared with a constant (`if step == 0:`) or a lazy initialisation
(`if compiled is None:`). Whether a backend expression builds a new callable
is decided from its syntax: a name bound outside the loop, and `torch._dynamo.lookup_backend(...)`, are assumed to
be stable.

## Fix safety
Hoisting the `torch.compile` call out of the loop is offered when its arguments do not depend on anything bound in
the loop; it is marked unsafe because the compiled callable is then shared by every iteration.

## References
- PyTorch, `torch.compile`: https://docs.pytorch.org/docs/stable/generated/torch.compile.html
- `torch/__init__.py`: `_TorchCompileWrapper.__eq__`; `torch/_dynamo/guards.py`: `BACKEND_MATCH`
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from dynamo_lens.codes import Check, Rule
from dynamo_lens.model import Edit, Fix, Severity, Span
from dynamo_lens.static.context import RESETS, FileContext, NodeAt
from dynamo_lens.static.semantic import settings
from dynamo_lens.static.semantic.usage import (
    Loop,
    UsageCandidate,
    bound_in,
    judge_usage,
    names_in,
    site_call,
    usage,
)
from dynamo_lens.static.summary import CompileSite
from dynamo_lens.torch_facts import torch_name

RULE = Rule(
    code="DL201",
    name="compile-in-loop",
    summary="torch.compile is evaluated on every iteration of a loop",
    default_severity=Severity.WARNING,
    source="static",
    docs_url="https://docs.pytorch.org/docs/stable/generated/torch.compile.html",
    fix_title="Hoist torch.compile out of the loop",
)


STABLE_BACKEND_CALLS = frozenset({"torch._dynamo.lookup_backend", "torch._dynamo.backends.registry.lookup_backend"})


def collect(ctx: FileContext) -> Iterator[UsageCandidate]:
    table = usage(ctx)
    for site in ctx.compile_sites:
        if site.form == "decorator":
            continue  # a decorated def inside a loop is rare; its backend would be the same each time
        at = site_call(ctx, site)
        if at is None:
            continue
        call = at.node
        assert isinstance(call, ast.Call)
        loops = table.enclosing_loops(at)
        function = at.scope.function
        helper = getattr(function.node, "name", "") if function is not None else ""
        if loops:
            bound = bound_in(loops[-1])
            compiled = call.func.value if site.form == "method" and isinstance(call.func, ast.Attribute) else None
            compiled = call.args[0] if call.args and compiled is None else compiled
            if compiled is not None and names_in(compiled) & bound:
                continue  # a different model per iteration: each one needs its own wrapper
            if _runs_once(loops[-1], call):
                continue  # `if step == 0:` / `if compiled is None:`: compiled on one iteration only
            where = "on every iteration of this loop"
        elif helper and helper in table.called_in_loop and function is not None:
            bound = bound_in(function.node)
            where = f"on every call of `{helper}()`, which a loop calls"
        else:
            continue
        scope_node = loops[-1] if loops else function.node if function is not None else None
        if scope_node is not None and _resets(ctx, scope_node):
            continue  # the cache is dropped anyway before each compile: one compile per experiment
        backend = _backend(call, site)
        fresh = _fresh_backend(ctx, backend, bound) if backend is not None else None
        text = ctx.source(call, 60)
        if fresh is not None:
            message = (
                f"`{text}` runs {where}, with a new backend callable ({fresh}): the cached entry's `BACKEND_MATCH` "
                f"guard fails every time, so {torch_name()} compiles again on each iteration; {settings.PAST_LIMIT}"
            )
            severity = RULE.default_severity
        elif loops:
            message = (
                f"`{text}` builds a new compiled wrapper {where}: {torch_name()} reuses the cached code (1 compile), "
                "but each wrapper costs about 0.1 ms to build and call through; build it once, before the loop"
            )
            severity = Severity.INFO
        else:
            continue  # a helper that compiles per call is fine when each call compiles something else
        fixes = (_hoist(ctx, at, loops[-1], bound),) if loops else ()
        yield UsageCandidate(
            RULE.code, ctx.span(call), message, severity, (site,), fixes=tuple(f for f in fixes if f is not None)
        )


def _runs_once(loop: ast.AST, call: ast.Call) -> bool:
    """``call`` sits, inside ``loop``, under an ``if`` that holds on one iteration: a counter compared with a
    constant (``if step == 0:``, ``if batch_idx == 0:``) or a lazy initialisation (``if compiled is None:``)."""
    for node in ast.walk(loop):
        if (
            isinstance(node, ast.If)
            and _once(node.test)
            and any(inner is call for s in node.body for inner in ast.walk(s))
        ):
            return True
    return False


def _once(test: ast.expr) -> bool:
    if not isinstance(test, ast.Compare) or len(test.ops) != 1:
        return False
    left, op, right = test.left, test.ops[0], test.comparators[0]
    if isinstance(op, ast.Eq):
        return isinstance(left, ast.Name) and isinstance(right, ast.Constant) and type(right.value) is int
    return isinstance(op, ast.Is) and isinstance(right, ast.Constant) and right.value is None


def _resets(ctx: FileContext, node: ast.AST) -> bool:
    return any(isinstance(inner, ast.Call) and ctx.resolve(inner.func) in RESETS for inner in ast.walk(node))


def _backend(call: ast.Call, site: CompileSite) -> ast.expr | None:
    for keyword in call.keywords:
        if keyword.arg == "backend":
            return keyword.value
    func = call.func
    if site.form == "optimize" and isinstance(func, ast.Call):
        for keyword in func.keywords:
            if keyword.arg == "backend":
                return keyword.value
        return func.args[0] if func.args else None
    return None


def _fresh_backend(ctx: FileContext, backend: ast.expr, bound: set[str]) -> str | None:
    """How ``backend`` makes a new callable each time it is evaluated, or None if it is the same object."""
    if isinstance(backend, ast.Lambda):
        return "a `lambda`"
    if isinstance(backend, ast.Call):
        if ctx.resolve(backend.func) in STABLE_BACKEND_CALLS:
            return None
        return f"`{ctx.source(backend, 50)}` builds it"
    if isinstance(backend, ast.Name) and backend.id in bound:
        return f"`{backend.id}` is defined inside the loop"
    return None


def _hoist(ctx: FileContext, at: NodeAt, loop: Loop, bound: set[str]) -> Fix | None:
    """Move a one-line compile out of the loop when it depends on nothing the loop binds."""
    call = at.node
    assert isinstance(call, ast.Call)
    if call.lineno != call.end_lineno or names_in(call) & bound:
        return None
    source = ast.get_source_segment(ctx.text, call)
    assigned = ctx.assigned_names.get(id(call), ())
    statement = next(
        (s for s in loop.body if isinstance(s, ast.Assign) and s.value is call and len(s.targets) == 1), None
    )
    if source is None:
        return None
    indent = " " * loop.col_offset
    path = ctx.path
    if statement is not None and assigned and statement.lineno == statement.end_lineno:
        insert = Edit(Span(path, loop.lineno, 1, loop.lineno, 1), f"{indent}{assigned[0]} = {source}\n")
        remove = Edit(Span(path, statement.lineno, 1, statement.lineno + 1, 1), "")
        return Fix("Hoist torch.compile out of the loop", (insert, remove))
    if statement is None and call.args and isinstance(call.args[0], ast.Name):
        name = f"compiled_{call.args[0].id}"
        if name in bound:
            return None
        insert = Edit(Span(path, loop.lineno, 1, loop.lineno, 1), f"{indent}{name} = {source}\n")
        return Fix("Hoist torch.compile out of the loop", (insert, Edit(ctx.span(call), name)))
    return None


CHECK = Check(RULE.code, collect=collect, judge=judge_usage)
