"""DL205 · closure-scalar-rebound

## What it does
Flags a read, inside compiled code, of a closed-over variable of an enclosing function that holds a Python scalar and
is bound again while the compiled function is in use: rebound later in the enclosing function (typically in the loop
that calls the compiled function), through `nonlocal` in another inner function, or captured from a loop variable
when a fresh closure is compiled on every iteration. The finding sits on the read; the rebinding is related.

## Why it matters
Dynamo guards the cell contents of every free variable it reads (`EQUALS_MATCH scale == 2`; for a helper closure it
inlines, `helper.__closure__[0].cell_contents == 2`). Measured on torch 2.13 (`backend="eager"`, 12 calls, a new
value each time):

* `int` and `float`: one recompile, after which automatic dynamic shapes turn the cell into a symbolic value
  (2 compiles in all). An int that decides Python control flow or a size (`range(n)`, `x.view(n, -1)` with many
  values) stays specialised: `range(n)` recompiled on every value and hit `recompile_limit` (8) → eager.
* `str`: one compile per distinct value, never dynamic: the limit is hit.
* `bool`: one compile per value (2 in all).

Closures are not globals: unlike a global int (always specialised, see DL204), a closure int usually costs a single
extra compile, so most cases are reported at `info`; strings and ints that feed `range()` are reported at the
rule's default severity.

## Example
```python
def train(x):
    scale = 1

    @torch.compile
    def step(x):
        return x * scale           # DL205: guarded `scale == 1`

    for i in range(100):
        scale = i + 2              # rebinds the cell step() reads
        step(x)
```

## Use instead
Pass the value as an argument, or keep it in a tensor created once and updated in place (`scale.fill_(i + 2)`):
tensors are guarded on metadata, not on their values.

## Settings
The compile site's `dynamic=` decides the int and float cost (measured, 12 values): under `dynamic=False` automatic
dynamic is off, so every value compiles until `recompile_limit` (8 compiles, a warning naming the site); under
`dynamic=True` the cell is symbolic from the first call (1 compile, nothing reported).

## Known limitations
The analysis looks at functions nested in one file: a closure built in one module and compiled in another is seen
only when the compiled function is defined inside the enclosing function. Kinds are inferred from the assigned
expressions (literals, arithmetic, `range()` loop variables, `len()`/`int()`/`float()`/`str()`); other values are
not reported. Whether an int decides control flow is only recognised for `range(name)`.

## Fix safety
No automatic fix: turning a closed-over value into an argument changes the function's signature and every call.

## References
- PyTorch, "Dealing with recompilations": https://docs.pytorch.org/docs/stable/compile/programming_model.recompilation.html
- `torch/_dynamo/config.py`: `automatic_dynamic_shapes`, `recompile_limit`
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from dynamo_lens.codes import Check, Rule
from dynamo_lens.model import Severity
from dynamo_lens.static.context import FileContext
from dynamo_lens.static.semantic import settings
from dynamo_lens.static.semantic.bodies import (
    AUTOMATIC_DYNAMIC_COST,
    FunctionBody,
    InsideCompiledCandidate,
    function_bodies,
    guard_message,
    judge_automatic_dynamic,
    rebinding_places,
    target_names,
)
from dynamo_lens.static.semantic.values import ValueKind, kind_of, merge_kinds, range_loop_names

RULE = Rule(
    code="DL205",
    name="closure-scalar-rebound",
    summary="Compiled code reads a closed-over Python scalar that is rebound between calls",
    default_severity=Severity.WARNING,
    source="static",
    docs_url="https://docs.pytorch.org/docs/stable/compile/programming_model.recompilation.html",
    fix_title="Pass the value as an argument or keep it in a tensor",
    confirmed_by=("DL501", "DL502"),
)


LOOPS = (ast.For, ast.AsyncFor, ast.While)


@dataclass(slots=True)
class CellBinding:
    """One binding of a local of the enclosing function; its value's kind is worked out only when reported."""

    target: ast.Name
    value: ast.expr | None
    """None when ``fixed_kind`` says it all (loop targets, unpacking)."""
    fixed_kind: ValueKind
    lookup: Callable[[str], ValueKind]
    loop_end: int
    """Last line of the outermost loop of the owner that contains the binding (0: not in a loop)."""
    elsewhere: bool = False
    """Bound through ``nonlocal`` in another inner function (or the reader itself)."""

    @property
    def line(self) -> int:
        return self.target.lineno

    def kind(self, ctx: FileContext) -> ValueKind:
        return self.fixed_kind if self.value is None else kind_of(self.value, ctx.resolve, self.lookup)


def collect(ctx: FileContext) -> Iterator[InsideCompiledCandidate]:
    bodies = function_bodies(ctx)
    children: dict[int, list[FunctionBody]] = {}
    for body in bodies:
        if body.parent is not None:
            children.setdefault(id(body.parent), []).append(body)
    cells: dict[int, dict[str, list[CellBinding]]] = {}
    for body in bodies:
        owner = body.parent
        rebound: dict[str, tuple[FunctionBody, list[CellBinding]]] = {}
        while owner is not None:
            if id(owner) not in cells:
                cells[id(owner)] = _bindings(owner, children.get(id(owner), []))
            for name, bindings in cells[id(owner)].items():
                if name not in rebound and name not in body.locals() and _rebinds(bindings, body):
                    rebound[name] = (owner, bindings)
            owner = owner.parent
        if not rebound:
            continue
        seen: set[str] = set()
        for read in body.name_loads(rebound):
            if read.id not in seen:
                seen.add(read.id)
                candidate = _candidate(ctx, body, read, *rebound[read.id])
                if candidate is not None:
                    yield candidate


def _rebinds(bindings: list[CellBinding], reader: FunctionBody) -> bool:
    """A binding can run after the reader exists: later in the owner, in a loop that reaches the reader's
    definition, or from another inner function through ``nonlocal``."""
    defined = reader.node.lineno
    return any(b.elsewhere or b.line > defined or b.loop_end >= defined for b in bindings)


def _bindings(owner: FunctionBody, inner: list[FunctionBody]) -> dict[str, list[CellBinding]]:
    """Every binding of each local of ``owner``, including ``nonlocal`` rebinding from its inner functions."""
    ints: set[str] | None = None

    def known(other: str) -> ValueKind:
        nonlocal ints
        if ints is None:
            ints = range_loop_names(owner.statements)
        return "int" if other in ints else "unknown"

    loops = [(s.lineno, s.end_lineno or s.lineno) for s in owner.statements if isinstance(s, LOOPS)]
    found: dict[str, list[CellBinding]] = {}
    for statement in owner.statements:
        for target, value, kind in _stores(statement):
            line = target.lineno
            loop_end = max((end for start, end in loops if start <= line <= end), default=0)
            found.setdefault(target.id, []).append(CellBinding(target, value, kind, known, loop_end))
    for function in inner:
        declared = {n for s in function.statements if isinstance(s, ast.Nonlocal) for n in s.names}
        for statement in function.statements if declared else ():
            for target, value, kind in _stores(statement):
                if target.id in declared and target.id in found:
                    found[target.id].append(CellBinding(target, value, kind, known, 0, elsewhere=True))
    return found


def _stores(node: ast.stmt) -> Iterator[tuple[ast.Name, ast.expr | None, ValueKind]]:
    """(target, assigned value or None, kind when there is no value) for each name a statement binds."""
    if isinstance(node, ast.Assign):
        for target in node.targets:
            if isinstance(target, ast.Name):
                yield target, node.value, "unknown"
            else:
                yield from ((t, None, "unknown") for t in _target_nodes(target))
    elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and isinstance(node.target, ast.Name):
        if node.value is not None:
            yield node.target, node.value, "unknown"
    elif isinstance(node, (ast.For, ast.AsyncFor)):
        is_range = (
            isinstance(node.iter, ast.Call) and isinstance(node.iter.func, ast.Name) and node.iter.func.id == "range"
        )
        if isinstance(node.target, ast.Name):
            yield node.target, None, "int" if is_range else "unknown"
        else:
            yield from ((t, None, "unknown") for t in _target_nodes(node.target))


def _target_nodes(target: ast.AST) -> Iterator[ast.Name]:
    names = set(target_names(target))
    yield from (n for n in ast.walk(target) if isinstance(n, ast.Name) and n.id in names)


def _candidate(
    ctx: FileContext, body: FunctionBody, read: ast.Name, owner: FunctionBody, bindings: list[CellBinding]
) -> InsideCompiledCandidate | None:
    defined = body.node.lineno
    rebinds = [b for b in bindings if b.elsewhere or b.line > defined or b.loop_end >= defined]
    kinds = [b.kind(ctx) for b in bindings]
    kind = merge_kinds(kinds)
    name = read.id
    if kind == "str" or (kind == "int" and _bounds_range(body, name)):
        severity = RULE.default_severity
        cost = (
            f"{'a string' if kind == 'str' else 'an int that bounds range()'} stays specialised: every new value "
            f"recompiles, and {settings.PAST_LIMIT}"
        )
    elif kind in ("int", "float"):
        severity = Severity.INFO
        cost = AUTOMATIC_DYNAMIC_COST
    elif kind == "bool":
        severity = Severity.INFO
        cost = "one compile per value"
    elif kind == "tensor" and "none" in kinds:
        severity = Severity.INFO
        cost = "one recompile when it stops being None"
    else:
        return None
    where, related = rebinding_places(ctx, [b.target for b in rebinds], f"`{name}` bound again here")
    subject, guard = f"the closed-over {kind} `{name}` is bound again ({where})", f"`{name} == <value>`"
    return InsideCompiledCandidate(
        code=RULE.code,
        span=ctx.span(read),
        function=body.qualname,
        message=guard_message(subject, guard, cost),
        severity=severity,
        related=related,
        data=(
            ("name", name),
            ("kind", kind),
            *((("subject", subject), ("guard", guard)) if cost == AUTOMATIC_DYNAMIC_COST else ()),
        ),
        cells_of=owner.qualname,
    )


def _bounds_range(body: FunctionBody, name: str) -> bool:
    return any(
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "range"
        and any(isinstance(a, ast.Name) and a.id == name for a in node.args)
        for node in body.calls
    )


CHECK = Check(RULE.code, collect=collect, judge=judge_automatic_dynamic, judged_locally=True)
