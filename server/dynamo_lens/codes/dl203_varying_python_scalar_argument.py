"""DL203 · varying-python-scalar-argument

## What it does
Flags a call of a compiled callable, inside a loop, with a Python `int`, `float`, `bool` or `str` argument whose
value changes from one iteration to the next: the loop counter (`range()`, the index of `enumerate()`), a counter
that starts as a number and is advanced with `+=` in the loop (`step += 1`), the variable of a loop over a literal
list of values (or a name bound to one), a number read out of a tensor in the loop (`n = mask.sum().item()`: an
`int` for a count, else a `float`), arithmetic on them, a comparison of them (`step < warmup`), an f-string built
from them. Also flags calls of one compiled callable in a file that pass different literals for a parameter it
reads (a reference pass that leaves `return_logits` at its default `True` before a training loop that passes
`False`; `heads=2` and `heads=8` under `dynamic=False`), or a tensor at some calls and `None` (passed, or the
default) at others (`model(prompt, mask=padding)` once, `model(x)` on every decoding step), or dict displays with
different keys, or the same keys in another order, for a parameter the function iterates (`batch.values()`): the
finding sits on the calls whose value the fewest calls share, counting calls in loops first.

## Why it matters
Dynamo first specialises every Python scalar argument to its value (`EQUALS_MATCH n == 2`). Measured on torch 2.13
(`backend="eager"`, 12 calls, a new value each call):

* `int` or `float` argument used in arithmetic: one recompile, then automatic dynamic turns it into a symbolic value
  (2 compiles in all). An int used as a size behaved the same (`torch.zeros(n)`, `x[:n]`, `x.repeat(n, 1)`: 2
  compiles for 12 values); `x.reshape(n, -1)` added divisibility guards (5 compiles for 10 powers of two). Reported
  at `info`.
* an argument the compiled function never reads is not guarded (1 compile): not reported.
* the same with `dynamic=False` at the compile site: one compile per value, 8 compiles then `recompile_limit` (8) →
  eager. Reported at the rule's default severity (warning).
* an int that decides Python control flow stays specialised: `for _ in range(n)` in the compiled function compiled
  per value (8 + limit, warning); `if n > 5:` added one compile per branch (3 in all).
* `str` argument: one compile per distinct value, never dynamic (8 + limit, warning).
* `bool` argument (`warm=step < warmup`): one entry per value whatever `dynamic=` says (2 compiles, `info`).
* `dynamic=True` at the compile site: 1 compile for int arguments.
* the project's settings, where every program that runs the site makes them first:
  `torch._dynamo.config.automatic_dynamic_shapes = False` keeps ints and floats static (8 compiles, then the limit;
  `dynamic=True` at the site still makes them symbolic: 1 compile); `specialize_float = True` keeps a float static
  even under `dynamic=True` (8 + limit), and `specialize_int = True` an int (8 + limit, with or without
  `dynamic=True`); `assume_static_by_default = False` makes an int symbolic from the first call
  (1 compile, no finding). The message names the setting and where it is made.
* calls inside `with torch.compiler.set_stance("force_eager")`, or in a function decorated with it, run eagerly:
  a sweep of twelve values there compiled nothing (not reported).
* different literals at different calls: a bool left at its default `True` once and passed `False` in the loop
  compiled 2 entries; three int literals under `dynamic=False` compiled 3; a literal that differs only for a
  parameter the function never reads compiled 1. A literal set is finite, so these are `info` up to the limit.
* a tensor at one call and `None` at the others, for a parameter the function tests (`if mask is not None:`):
  2 compiles (info); for a parameter it never reads, 1.
* dicts passed to a parameter the function iterates: each key set, and each order of the keys, is an entry
  (`list(dict.keys(batch))[0] == 'image'`): three layouts compiled 3, a reordered dict 2; read only by key
  (`batch["image"]`), three layouts compiled 1, and are not reported.

## Example
```python
@torch.compile(dynamic=False)
def f(x, n):
    return x * n

for i in range(100):
    f(x, i)                         # DL203: `n` guarded by value, eager after 8 values
```

## Use instead
Pass the changing value as a tensor (`torch.tensor(i)`), mark the compile site `dynamic=True` (or drop
`dynamic=False`), or keep strings and loop bounds that select code paths out of the compiled function.

## Known limitations
Only values whose kind is evident from the syntax are followed (loop counters, numeric arithmetic and comparisons
on them, f-strings, `str()`); values from data loaders are not assumed to be scalars, and a name advanced with `+=`
counts only when it was last bound to a number literal (`pos = torch.tensor([T])` then `pos += 1` is a tensor).
Whether the callee uses the argument in `range()` is checked for compiled functions defined in the same file.
Differing literals are compared only between calls of one file whose compiled `def` (a function, or `forward` of a
class the file builds) is in that file, and not for a `def` without any attribute access in its body: one that does
no tensor work compiles no graph, and Dynamo skips its frame without guarding anything.

## Fix safety
Adding `dynamic=True` at the compile site is offered as an unsafe fix: it makes every input dynamic, which can slow
down the compiled code or the compile.

## References
- PyTorch, "Dealing with recompilations": https://docs.pytorch.org/docs/stable/compile/programming_model.recompilation.html
- PyTorch, "Dynamic shapes": https://docs.pytorch.org/docs/stable/torch.compiler_dynamic_shapes.html
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING

from dynamo_lens.codes import Check, Rule
from dynamo_lens.model import Edit, Finding, Fix, Related, Severity, Span
from dynamo_lens.static import exprs
from dynamo_lens.static.context import FileContext
from dynamo_lens.static.semantic import settings
from dynamo_lens.static.semantic.usage import (
    HandleCall,
    Kind,
    Usage,
    UsageCandidate,
    judge_usage,
    local_function,
    loop_scalars,
    scalar_kind,
    scope_key,
    site_call,
    usage,
)
from dynamo_lens.static.semantic.values import ValueKind, kind_of
from dynamo_lens.static.summary import CompileSite
from dynamo_lens.torch_facts import torch_name

if TYPE_CHECKING:
    from dynamo_lens.static.semantic.index import WorkspaceIndex

RULE = Rule(
    code="DL203",
    name="varying-python-scalar-argument",
    summary="A compiled callable is called with a Python scalar argument that changes between calls",
    default_severity=Severity.WARNING,
    source="static",
    docs_url="https://docs.pytorch.org/docs/stable/compile/programming_model.recompilation.html",
    fix_title="Compile with dynamic=True",
    confirmed_by=("DL501", "DL502"),
)


def collect(ctx: FileContext) -> Iterator[UsageCandidate]:
    table = usage(ctx)
    if not table.calls:
        return
    definitions = {node.name: node for at in ctx.nodes(ast.FunctionDef) if isinstance(node := at.node, ast.FunctionDef)}
    yield from _differing_literals(ctx, table.calls, definitions)
    for handle_call in table.calls:
        loops = table.enclosing_loops(handle_call.at)
        if not loops:
            continue
        scope, here = scope_key(handle_call.at.scope), (handle_call.call.lineno, handle_call.call.col_offset)
        counters = loop_scalars(loops, partial(table.value_of, scope, before=here))
        site = handle_call.handle.site
        dynamic = dict(site.options).get("dynamic")
        callee = _callee(ctx, site, definitions)
        params = _parameters(callee)
        used = _names_read(callee[0]) if callee is not None else None
        for position, argument in _arguments(handle_call):
            kind = scalar_kind(argument, counters)
            if kind is None:
                continue
            if isinstance(position, str):
                name = position
            else:
                name = params[position] if position < len(params) else f"#{position + 1}"
            if used is not None and name in params and name not in used:
                continue  # measured: an argument the compiled code never reads is not guarded (1 compile)
            definition = callee[0] if callee is not None else None
            candidate = _candidate(ctx, handle_call, site, argument, kind, name, dynamic, definition)
            if candidate is not None:
                yield candidate


def _candidate(
    ctx: FileContext,
    handle_call: HandleCall,
    site: CompileSite,
    argument: ast.expr,
    kind: Kind,
    param: str,
    dynamic: str | None,
    definition: ast.FunctionDef | None,
) -> UsageCandidate | None:
    label = f"argument {param}" if param.startswith("#") else f"`{param}`"
    text = f"`{ctx.source(argument, 40)}`"
    callee = handle_call.handle.name
    fixes: tuple[Fix, ...] = ()
    if kind == "bool":
        message = (
            f"{text} passes a bool that changes between iterations to {label} of compiled `{callee}`: {torch_name()} "
            "guards it by value in every mode (`dynamic=` does not change that), so each value has its own compiled "
            "entry (2 in all)"
        )
        severity = Severity.INFO
    elif kind == "str":
        message = (
            f"{text} passes a different `str` to {label} of compiled `{callee}` on every iteration: {torch_name()} "
            f"guards strings by value and never makes them dynamic, so each value compiles again; {settings.PAST_LIMIT}"
        )
        severity = RULE.default_severity
    elif dynamic == "True" and kind in ("float", "int"):
        # symbolic from the first call, unless the project specialises such numbers (decided when linked)
        changes = f"{text} changes the {kind} {label} of compiled `{callee}` on every iteration"
        return VaryingNumber(
            RULE.code,
            ctx.span(argument),
            changes,
            Severity.INFO,
            (site,),
            kind=kind,
            changes=changes,
            dynamic_site=True,
        )
    elif _ranges_over(definition, param):
        message = (
            f"{text} changes {label} of compiled `{callee}` on every iteration, and `{param}` is a `range()` bound "
            f"there: {torch_name()} keeps it specialised, so every value compiles again; {settings.PAST_LIMIT}"
        )
        severity = RULE.default_severity
    elif dynamic == "False":
        message = (
            f"{text} changes the {kind} {label} of compiled `{callee}` on every iteration, and the compile site says "
            f"`dynamic=False`: {torch_name()} compiles once per value; {settings.PAST_LIMIT}"
        )
        severity = RULE.default_severity
        fixes = tuple(f for f in (_dynamic_fix(ctx, site),) if f is not None)
    else:
        changes = f"{text} changes the {kind} {label} of compiled `{callee}` on every iteration"
        message = (
            f"{changes}: {torch_name()} specialises the first value, recompiles once, then treats it as dynamic (2 "
            "compiles in all)"
        )
        fixes = tuple(f for f in (_dynamic_fix(ctx, site),) if f is not None)
        return VaryingNumber(
            RULE.code, ctx.span(argument), message, Severity.INFO, (site,), fixes=fixes, kind=kind, changes=changes
        )
    return UsageCandidate(RULE.code, ctx.span(argument), message, severity, (site,), fixes=fixes)


@dataclass(frozen=True, slots=True)
class VaryingNumber(UsageCandidate):
    """An int or float argument under torch's defaults (dynamic after one recompile): what the project's Dynamo
    settings make of it is decided when the workspace is linked."""

    kind: str = ""
    changes: str = ""
    """The message's first part: which argument changes (the cost follows)."""
    dynamic_site: bool = False
    """The site says ``dynamic=True``: only a setting that specialises the number's kind leaves a cost."""


STATIC_SETTINGS = (
    ("automatic_dynamic_shapes", "False", ("int", "float")),
    ("specialize_float", "True", ("float",)),
    ("specialize_int", "True", ("int",)),
)
"""Settings that keep a changing number static (measured on 2.13, 12 values: 8 compiles, then the limit).
``dynamic=True`` at the site overrides the first (1 compile), not the others (8 compiles and the limit)."""
SPECIALIZING = frozenset({"specialize_float", "specialize_int"})
"""The settings ``dynamic=True`` does not override: no ``dynamic=True`` fix is offered under them."""


def judge(candidate: UsageCandidate, index: WorkspaceIndex) -> Iterator[Finding]:
    """:func:`judge_usage`, after the project's settings decide what a changing number costs: one compile per value
    under ``automatic_dynamic_shapes = False`` (or ``specialize_float = True`` for a float, ``specialize_int =
    True`` for an int), none beyond the first
    under ``assume_static_by_default = False`` for an int (measured: 1 compile)."""
    if isinstance(candidate, VaryingNumber):
        for name, value, kinds in STATIC_SETTINGS[1:] if candidate.dynamic_site else STATIC_SETTINGS:
            static = settings.in_force(index, name, value, candidate.sites) if candidate.kind in kinds else None
            if static is not None:
                message = (
                    f"{candidate.changes}, and `{name} = {value}` keeps it static: {torch_name()} compiles once per "
                    f"value; {settings.PAST_LIMIT}"
                )
                related = (*candidate.related, settings.set_here(static))
                # `dynamic=True` does not make a specialised number dynamic
                fixes = () if name in SPECIALIZING else candidate.fixes
                candidate = replace(
                    candidate, message=message, severity=RULE.default_severity, related=related, fixes=fixes
                )
                break
        else:
            if candidate.dynamic_site:
                return  # symbolic from the first call
            if candidate.kind == "int" and settings.in_force(
                index, "assume_static_by_default", "False", candidate.sites
            ):
                return  # symbolic from the first call
    yield from judge_usage(candidate, index)


class _Tensor:
    """What a call passes for a parameter when it passes a tensor, compared with ``None`` (passed, or the default)."""

    def __repr__(self) -> str:
        return "a tensor"


TENSOR = _Tensor()


@dataclass(frozen=True, slots=True)
class _Keys:
    """The keys, in order, of a dict display a call passes (``{"image": x}``) to a parameter the compiled function
    iterates: Dynamo then guards each key at its position (``list(dict.keys(batch))[0] == 'image'``)."""

    keys: tuple[str, ...]

    def __repr__(self) -> str:
        return "a dict with keys " + ", ".join(repr(k) for k in self.keys)


Literal = bool | int | str | None | _Tensor | _Keys


def _differing_literals(
    ctx: FileContext, calls: list[HandleCall], definitions: dict[str, ast.FunctionDef]
) -> Iterator[UsageCandidate]:
    """Calls of one compiled callable that pass different literals (or the default) for a parameter it reads: a
    reference pass with ``return_logits`` left at ``True`` before a training loop that passes ``False``. Each value
    is guarded, so the calls in the minority (fewest calls in loops, then fewest calls) compile entries of their
    own."""
    by_site: dict[CompileSite, list[HandleCall]] = {}
    for handle_call in calls:
        by_site.setdefault(handle_call.handle.site, []).append(handle_call)
    for site, site_calls in by_site.items():
        callee = _callee(ctx, site, definitions) if len(site_calls) > 1 else None
        if callee is None:
            continue
        definition, skip = callee
        if not any(isinstance(n, ast.Attribute) for statement in definition.body for n in ast.walk(statement)):
            continue  # no tensor work: Dynamo finds no graph to compile, skips the frame and guards nothing
        read = _names_read(definition)
        for param, groups in _literal_groups(ctx, definition, skip, site_calls).items():
            if len(groups) < 2 or param not in read:
                continue
            entries, reason = _entries(site, definition, param, list(groups))
            if entries < 2:
                continue
            main = max(groups.values(), key=lambda g: (sum(c.at.loop_depth > 0 for c, _ in g), len(g)))
            for value, group in groups.items():
                if group is not main:
                    yield _literal_candidate(ctx, site, param, value, group, groups, (entries, reason))


def _literal_groups(
    ctx: FileContext, definition: ast.FunctionDef, skip: int, calls: list[HandleCall]
) -> dict[str, dict[Literal, list[tuple[HandleCall, ast.expr | None]]]]:
    """Per parameter that every call gives a literal (or leaves at a literal default), the calls by value, each with
    the argument it passes (None: the default). Values of different types (``1``, ``True``) are not compared, except
    ``None`` and a tensor (``mask=None`` left at its default, ``mask=torch.ones(...)`` elsewhere). A dict display
    with string keys counts by its key set."""
    table = usage(ctx)
    args = definition.args
    every = [a.arg for a in (*args.posonlyargs, *args.args)]
    positional = every[skip:]
    defaults: dict[str, ast.expr] = dict(zip(every[len(every) - len(args.defaults) :], args.defaults, strict=True))
    defaults.update((a.arg, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None)
    found: dict[str, dict[Literal, list[tuple[HandleCall, ast.expr | None]]]] = {}
    for param in [*positional, *(a.arg for a in args.kwonlyargs)]:
        groups: dict[Literal, list[tuple[HandleCall, ast.expr | None]]] = {}
        kinds: set[type] = set()  # `True == 1`: the keys alone cannot tell a bool from an int
        for handle_call in calls:
            call = handle_call.call
            if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
                break
            passed = next((k.value for k in call.keywords if k.arg == param), None)
            index = positional.index(param) if param in positional else -1
            if passed is None and 0 <= index < len(call.args):
                passed = call.args[index]
            value = passed if passed is not None else defaults.get(param)
            literal: Literal
            if isinstance(value, ast.Constant) and (value.value is None or isinstance(value.value, bool | int | str)):
                literal = value.value
            elif value is not None and _is_tensor(ctx, table, handle_call, value):
                literal = TENSOR
            elif isinstance(value, ast.Dict) and all(_string(k) for k in value.keys) and _iterates(definition, param):
                literal = _Keys(tuple(str(k.value) for k in value.keys if isinstance(k, ast.Constant)))
            else:
                break
            kinds.add(type(literal))
            groups.setdefault(literal, []).append((handle_call, passed))
        else:
            if len(kinds) == 1 or kinds == {type(None), _Tensor}:
                found[param] = groups
    return found


def _is_tensor(ctx: FileContext, table: Usage, handle_call: HandleCall, value: ast.expr) -> bool:
    """``value``, passed by the call, is a tensor (made by a ``torch`` function or a tensor method, or a local
    assigned one)."""
    scope, here = scope_key(handle_call.at.scope), (handle_call.call.lineno, handle_call.call.col_offset)

    def local(name: str) -> ValueKind:
        assigned = table.value_of(scope, name, before=here)
        return kind_of(assigned, ctx.resolve) if assigned is not None else "unknown"

    return kind_of(value, ctx.resolve, local) == "tensor"


def _entries(site: CompileSite, definition: ast.FunctionDef, param: str, values: list[Literal]) -> tuple[int, str]:
    """How many entries the values compile, and why: one each for bools and strings, and for ints under
    ``dynamic=False`` or as a ``range()`` bound; otherwise the second int makes it dynamic (2 in all; 1 under
    ``dynamic=True``)."""
    kind = type(values[0]).__name__
    if isinstance(values[0], _Keys):
        return len(values), f"{torch_name()} guards the keys of a dict it iterates, in order, so each has its own entry"
    if any(v is None or isinstance(v, _Tensor) for v in values):
        return len(values), f"{torch_name()} guards whether it is `None`, so each has its own compiled entry"
    if isinstance(values[0], bool | str):
        return len(values), f"{torch_name()} guards the {kind} by value, so each value has its own compiled entry"
    dynamic = dict(site.options).get("dynamic")
    if dynamic == "False":
        return len(values), f"the compile site says `dynamic=False`: {torch_name()} compiles once per value"
    if _ranges_over(definition, param):
        return len(values), f"`{param}` is a `range()` bound there: {torch_name()} keeps it specialised, once per value"
    reason = f"{torch_name()} specialises the first int it sees, recompiles once for another, then keeps it dynamic"
    return (1 if dynamic == "True" else 2), reason


def _literal_candidate(
    ctx: FileContext,
    site: CompileSite,
    param: str,
    value: Literal,
    group: list[tuple[HandleCall, ast.expr | None]],
    groups: dict[Literal, list[tuple[HandleCall, ast.expr | None]]],
    cost: tuple[int, str],
) -> UsageCandidate:
    handle_call, argument = group[0]
    callee = handle_call.handle.name
    here = f"{value!r} for `{param}`" if isinstance(value, _Tensor | _Keys) else f"`{param}={value!r}`"
    here += " (its default)" if argument is None else ""
    others = [(v, g[0][0]) for v, g in groups.items() if v != value]
    elsewhere = ", ".join(f"{_shown(v)} at line {c.call.lineno}" for v, c in others[:3])
    entries, reason = cost
    message = f"compiled `{callee}` is called with {here} here and with {elsewhere}: {reason}"
    related = tuple(Related(ctx.span(c.call), f"called with {_shown(v)} here") for v, c in others[:3])
    span = ctx.span(argument if argument is not None else handle_call.call)
    return UsageCandidate(
        RULE.code,
        span,
        f"{message} ({entries} entries needed; {settings.PAST_LIMIT})",
        RULE.default_severity,
        (site,),
        related=related,
        entries=entries,
        bounded_message=f"{message} ({entries} entries in all)",
    )


def _shown(value: Literal) -> str:
    return repr(value) if isinstance(value, _Tensor | _Keys) else f"`{value!r}`"


ITERATING_METHODS = frozenset({"keys", "values", "items"})
ITERATING_BUILTINS = frozenset({"len", "list", "tuple", "sorted", "enumerate", "zip"})


def _iterates(definition: ast.FunctionDef, param: str) -> bool:
    """The function iterates its parameter ``param`` (``batch.values()``, ``for k in batch``, ``len(batch)``,
    ``**batch``): indexing it by a literal key alone guards neither the other keys nor their order (measured: 1
    compile for three layouts)."""

    def named(node: ast.AST) -> bool:
        return isinstance(node, ast.Name) and node.id == param

    for node in ast.walk(definition):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in ITERATING_METHODS and named(func.value):
                return True
            if isinstance(func, ast.Name) and func.id in ITERATING_BUILTINS and any(named(a) for a in node.args):
                return True
            if any(k.arg is None and named(k.value) for k in node.keywords):
                return True
        elif isinstance(node, ast.For | ast.comprehension) and named(node.iter):
            return True
    return False


def _string(key: ast.expr | None) -> bool:
    return isinstance(key, ast.Constant) and isinstance(key.value, str)


def _arguments(handle_call: HandleCall) -> Iterator[tuple[int | str, ast.expr]]:
    call = handle_call.call
    for index, argument in enumerate(call.args):
        if isinstance(argument, ast.Starred):
            return
        yield index, argument
    for keyword in call.keywords:
        if keyword.arg is not None:
            yield keyword.arg, keyword.value


def _parameters(callee: tuple[ast.FunctionDef, int] | None) -> list[str]:
    """The positional parameter names a call of the compiled callable binds."""
    if callee is None:
        return []
    definition, skip = callee
    return [a.arg for a in (*definition.args.posonlyargs, *definition.args.args)][skip:]


def _callee(
    ctx: FileContext, site: CompileSite, definitions: dict[str, ast.FunctionDef]
) -> tuple[ast.FunctionDef, int] | None:
    """The ``def`` a call of the compiled callable runs, and how many leading parameters the call does not bind:
    the compiled function itself, or ``forward`` (minus ``self``) of a module whose class is defined in this file."""
    function = local_function(ctx, site)
    if function is not None:
        definition = definitions.get(function.rpartition(".")[2])
        return (definition, 0) if definition is not None else None
    target = exprs.without_identity(site.target)
    if isinstance(target, exprs.Global):  # `model = torch.compile(model)` at module level: every binding above
        options = tuple(b.value for b in ctx.module_bindings if b.name == target.name and b.line < site.span.line)
    else:
        options = target.options if isinstance(target, exprs.OneOf) else (target,)
    classes = {_built_class(exprs.without_identity(option)) for option in options}
    if len(classes) != 1 or None in classes:
        return None
    name = classes.pop()
    for at in ctx.nodes(ast.ClassDef):
        node = at.node
        if isinstance(node, ast.ClassDef) and node.name == name:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "forward":
                    return item, 1
    return None


def _built_class(expr: exprs.Expr) -> str | None:
    """The class of this file that ``expr`` instantiates: ``Net(...)``, or a constructor classmethod of it
    (``GPT.from_pretrained(...)``)."""
    if not isinstance(expr, exprs.Call) or not isinstance(expr.func, exprs.Named) or not expr.func.ref.is_local:
        return None
    return expr.func.ref.dotted.partition(".")[0]


def _names_read(definition: ast.FunctionDef) -> set[str]:
    """The names the body of ``definition`` reads (not its decorators or defaults)."""
    return {n.id for statement in definition.body for n in ast.walk(statement) if isinstance(n, ast.Name)}


def _ranges_over(definition: ast.FunctionDef | None, param: str) -> bool:
    """``param`` is a ``range()`` bound in the compiled ``def`` (Dynamo then keeps the int specialised)."""
    if definition is None:
        return False
    return any(
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "range"
        and any(isinstance(arg, ast.Name) and arg.id == param for arg in node.args)
        for statement in definition.body
        for node in ast.walk(statement)
    )


def _dynamic_fix(ctx: FileContext, site: CompileSite) -> Fix | None:
    """``dynamic=True`` at the compile site (replacing ``dynamic=False``)."""
    at = site_call(ctx, site)
    if at is not None:
        node = at.node
        assert isinstance(node, ast.Call)
        for keyword in node.keywords:
            if keyword.arg == "dynamic":
                return Fix("Compile with dynamic=True", (Edit(ctx.span(keyword.value), "True"),))
        end = ctx.span(node)
        insert = Span(end.path, end.end_line, end.end_column - 1, end.end_line, end.end_column - 1)
        return Fix("Compile with dynamic=True", (Edit(insert, ", dynamic=True"),))
    if site.form == "decorator":
        return Fix("Compile with dynamic=True", (Edit(site.span, f"{_decorator_text(ctx, site)}(dynamic=True)"),))
    return None


def _decorator_text(ctx: FileContext, site: CompileSite) -> str:
    line = ctx.lines.lines[site.span.line - 1]
    return line[site.span.column - 1 : site.span.end_column - 1]


CHECK = Check(RULE.code, collect=collect, judge=judge)
