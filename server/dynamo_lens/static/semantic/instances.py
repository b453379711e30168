"""Which constructor arguments differ between the instances of one class that a file builds.

Stacks of layers are built in a loop or a comprehension (``[Block(cfg, i) for i in range(n)]``), or as a few stacks
that pass different literals (``Block(modulation=True)`` here, ``Block(modulation=False)`` there). An argument that
follows the loop counter (``i``, ``i == 0``, ``f"layer{i}"``) or a literal that differs between constructions gives
each instance its own value, which the class may keep in an attribute: :class:`InstanceArgument` records each such
argument; ``DL107`` puts them together across the workspace.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial

from dynamo_lens.static.context import FileContext, NodeAt
from dynamo_lens.static.semantic.usage import CONVERSIONS, Kind, loop_scalars, names_in, value_kind
from dynamo_lens.static.summary import Candidate, Ref

CHOICE = "choice"
"""The kind of an argument that picks one of two values by the loop counter (``x if i % 2 == 0 else None``)."""
LOOPS = (ast.For, ast.AsyncFor, ast.ListComp, ast.GeneratorExp, ast.SetComp, ast.DictComp)


@dataclass(frozen=True, slots=True)
class InstanceArgument(Candidate):
    """An argument of the construction at ``span`` of the class ``ref``: position ``position`` (-1 for a keyword)
    or keyword ``keyword``. ``literal`` (a ``repr``) for a constant; otherwise it follows a loop counter, has the
    Python ``kind`` (``int``, ``float``, ``bool``, ``str``, or :data:`CHOICE`) and takes ``count`` values (0 when the
    loop's length is unknown)."""

    ref: Ref
    position: int
    keyword: str
    text: str
    kind: str
    literal: str = ""
    count: int = 0
    built_with: tuple[Ref, ...] = ()
    """For an argument that follows a loop counter: the classes the same loop builds (the layers that hold it)."""


def instance_arguments(ctx: FileContext, code: str) -> Iterator[InstanceArgument]:
    """The constructor arguments of ``ctx`` that can differ between instances (as candidates of ``code``): those that
    follow a loop counter, and literal ``bool``/``str`` keywords (which differ when another construction passes
    another one). Classes of torch itself (``nn.Linear(8, 8, bias=False)``) are left out."""
    defs = {node.name: node for node in ctx.tree.body if isinstance(node, ast.FunctionDef)}
    returns = tuple(
        (name, node.returns.id) for name, node in defs.items() if isinstance(node.returns, ast.Name)
    )  # what the annotated helpers return, read by every block: part of the per-block key
    kept = ctx.per_block("instances", partial(_block_arguments, ctx, dict(returns)), key=returns)
    through = _helper_arguments(ctx, defs, dict(returns))
    for found in [*kept, through]:
        for call, ref, position, keyword, text, kind, literal, count, built_with in found:
            span = ctx.span(call)
            yield InstanceArgument(code, span, ref, position, keyword, text, kind, literal, count, built_with)


_Found = tuple[ast.Call, Ref, int, str, str, str, str, int, tuple[Ref, ...]]
MAX_BUILT = 16


def _block_arguments(
    ctx: FileContext, returns: Mapping[str, str], nodes: Mapping[type[ast.AST], list[NodeAt]]
) -> list[_Found]:
    """:func:`instance_arguments` of one block, without positions (kept with the block while it is unchanged)."""
    found: list[_Found] = []
    for loop in LOOPS:
        for at in nodes.get(loop, ()):
            for counters, count, parts in _loop(at.node):
                calls = list(_constructions(parts))
                built = _refs(ctx, calls)
                varying = _derived(parts, counters)
                for call in calls:
                    found.extend(_following(ctx, call, varying, count, built, returns))
    for at in nodes.get(ast.Call, ()):
        node = at.node
        assert isinstance(node, ast.Call)
        if not node.keywords or not _capitalised(node.func):
            continue
        ref = ctx.ref(node.func)
        if ref is None or ref.dotted.startswith("torch."):
            continue
        for keyword in node.keywords:
            value = keyword.value
            if keyword.arg and isinstance(value, ast.Constant) and type(value.value) in (bool, str):
                literal = repr(value.value)
                kind = "bool" if isinstance(value.value, bool) else "str"
                found.append((node, ref, -1, keyword.arg, f"{keyword.arg}={literal}", kind, literal, 1, ()))
    return found


def _helper_arguments(
    ctx: FileContext, defs: Mapping[str, ast.FunctionDef], returns: Mapping[str, str]
) -> list[_Found]:
    """The constructions inside a module-level function of ``defs`` (``def _build_attention(layer_id): return
    Attention(...)``) that a counter loop calls with values following its counter (``_build_attention(layer_id=i)``
    in ``for i in range(n)``): each argument there that follows such a parameter follows the loop. Not kept per block
    (the helper is another block): it runs on every keystroke, so only counter loops are walked."""
    found: list[_Found] = []
    builds: dict[str, list[ast.Call]] = {}
    for block in ctx.blocks:
        for loop in LOOPS:
            for at in block.nodes.get(loop, ()):
                for counters, count, parts in _loop(at.node):
                    calls = [c for c in _calls(parts) if isinstance(c.func, ast.Name) and c.func.id in defs]
                    varying = _derived(parts, counters) if calls else {}
                    built = _refs(ctx, _constructions(parts)) if calls else ()
                    for call in calls:
                        assert isinstance(call.func, ast.Name)
                        helper = defs[call.func.id]
                        made = builds.setdefault(helper.name, list(_constructions(helper.body)))
                        passed = _passed(helper, call, varying, returns) if made else {}
                        if not passed:
                            continue
                        inner = _derived(helper.body, passed)
                        # `return Block(Attention(...))`: the helper builds the layers that hold the instances too
                        holders = tuple(dict.fromkeys((*built, *_refs(ctx, made))))[:MAX_BUILT]
                        for construction in made:
                            found.extend(_following(ctx, construction, inner, count, holders, returns))
    return found


def _refs(ctx: FileContext, calls: Iterable[ast.Call]) -> tuple[Ref, ...]:
    """The classes ``calls`` construct, each once (at most :data:`MAX_BUILT`)."""
    return tuple(dict.fromkeys(r for c in calls if (r := ctx.ref(c.func)) is not None))[:MAX_BUILT]


def _calls(parts: Sequence[ast.AST]) -> Iterator[ast.Call]:
    for part in parts:
        yield from (node for node in ast.walk(part) if isinstance(node, ast.Call))


def _passed(
    helper: ast.FunctionDef, call: ast.Call, varying: Mapping[str, str], returns: Mapping[str, str]
) -> dict[str, str]:
    """The parameters of ``helper`` that ``call`` gives a value following the loop, with its kind."""
    params = [a.arg for a in (*helper.args.posonlyargs, *helper.args.args)]
    named = {*params, *(a.arg for a in helper.args.kwonlyargs)}
    found: dict[str, str] = {}
    for position, keyword, argument in _arguments(call):
        param = keyword if keyword in named else params[position] if 0 <= position < len(params) else ""
        kind = _argument_kind(argument, varying, returns) if param else None
        if kind is not None:
            found[param] = kind
    return found


def _following(
    ctx: FileContext,
    call: ast.Call,
    counters: Mapping[str, str],
    count: int,
    built: tuple[Ref, ...],
    returns: Mapping[str, str],
) -> Iterator[_Found]:
    ref = ctx.ref(call.func)
    if ref is None or ref.dotted.startswith("torch."):
        return
    for position, keyword, argument in _arguments(call):
        kind = _argument_kind(argument, counters, returns)
        if kind is not None:
            values = 2 if kind == CHOICE else count
            yield call, ref, position, keyword, ctx.source(argument, 40), kind, "", values, built


def _argument_kind(argument: ast.expr, varying: Mapping[str, str], returns: Mapping[str, str]) -> str | None:
    """How an argument follows the loop: :data:`CHOICE` for one of two values it picks (``window if i % 2 == 0 else
    None``, or a name bound so), the scalar kind of a value computed from its counter (``i == 0``, or a call of a
    module-level function annotated ``-> bool``: ``returns``), None when it does not follow it."""
    chosen = isinstance(argument, ast.Name) and varying.get(argument.id) == CHOICE
    if chosen or (isinstance(argument, ast.IfExp) and names_in(argument.test) & varying.keys()):
        return CHOICE
    kind, varies = value_kind(argument, _scalars(varying))
    if varies and kind not in CONVERSIONS and isinstance(argument, ast.Call) and isinstance(argument.func, ast.Name):
        kind = returns.get(argument.func.id, kind)  # `use_rope=_layer_use_rope(i, n)` with `-> bool`
    return kind if varies and kind in CONVERSIONS else None


def _derived(parts: Sequence[ast.AST], counters: Mapping[str, str]) -> dict[str, str]:
    """``counters`` with the names the loop body binds from them, in order: a scalar computed from a counter
    (``is_full = (i + 1) % 4 == 0``); :data:`CHOICE` for a name bound to one of two values by a test of them
    (``attention = cfg if is_full else None``; ``moe = None`` and ``moe = make_moe()`` in the two arms of ``if i <
    n_dense:``)."""
    varying: dict[str, str] = dict(counters)
    for statement in _in_order(parts):
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target, value = statement.targets[0], statement.value
            if not isinstance(target, ast.Name):
                continue
            if isinstance(value, ast.IfExp) and names_in(value.test) & varying.keys():
                varying[target.id] = CHOICE
                continue
            found, varies = value_kind(value, _scalars(varying))
            kind = found if varies else None
            if kind in CONVERSIONS:
                varying[target.id] = kind
            else:
                varying.pop(target.id, None)
        elif isinstance(statement, ast.If) and statement.orelse and names_in(statement.test) & varying.keys():
            for name in _assigned_names(statement.body) & _assigned_names(statement.orelse):
                varying[name] = CHOICE
    return varying


def _scalars(varying: Mapping[str, str]) -> dict[str, Kind]:
    """The names of ``varying`` that hold a scalar (not :data:`CHOICE`)."""
    return {name: CONVERSIONS[kind] for name, kind in varying.items() if kind in CONVERSIONS}


def _in_order(parts: Sequence[ast.AST]) -> Iterator[ast.stmt]:
    """The statements of ``parts`` (a loop body) in source order, nested blocks included (not nested functions), each
    compound statement after its blocks (an ``if`` decides what its arms bound)."""
    for part in parts:
        if not isinstance(part, ast.stmt) or isinstance(part, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        for field in ("body", "orelse", "finalbody"):
            yield from _in_order(getattr(part, field, []))
        yield part


def _assigned_names(body: list[ast.stmt]) -> set[str]:
    return {t.id for s in body if isinstance(s, ast.Assign) for t in s.targets if isinstance(t, ast.Name)}


def _loop(node: ast.AST) -> Iterator[tuple[dict[str, Kind], int, list[ast.AST]]]:
    """For a loop or comprehension over ``range()`` / ``enumerate()``: its counters, its length (0 when not a
    literal) and the parts it repeats."""
    if isinstance(node, ast.For | ast.AsyncFor):
        counters = dict(loop_scalars([node]))
        if counters:
            yield counters, _length(node.iter), list(node.body)
        return
    assert isinstance(node, ast.ListComp | ast.GeneratorExp | ast.SetComp | ast.DictComp)
    parts: list[ast.AST] = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
    for generator in node.generators:
        as_loop = ast.For(target=generator.target, iter=generator.iter, body=[], orelse=[])
        counters = dict(loop_scalars([as_loop]))
        if counters:
            yield counters, _length(generator.iter), parts


def _length(iterable: ast.expr) -> int:
    """``n`` for ``range(n)`` / ``enumerate(range(n))`` with a literal ``n``, else 0."""
    if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name) and iterable.args:
        if iterable.func.id == "enumerate":
            return _length(iterable.args[0])
        if iterable.func.id == "range" and len(iterable.args) == 1:
            bound = iterable.args[0]
            if isinstance(bound, ast.Constant) and type(bound.value) is int:
                return bound.value
    return 0


def _constructions(parts: Sequence[ast.AST]) -> Iterator[ast.Call]:
    """Calls of capitalised names (classes, by convention) in ``parts``."""
    for part in parts:
        for node in ast.walk(part):
            if isinstance(node, ast.Call) and _capitalised(node.func):
                yield node


def _capitalised(func: ast.expr) -> bool:
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return name[:1].isupper()


def _arguments(call: ast.Call) -> Iterator[tuple[int, str, ast.expr]]:
    for position, argument in enumerate(call.args):
        if isinstance(argument, ast.Starred):
            return
        yield position, "", argument
    for keyword in call.keywords:
        if keyword.arg is not None:
            yield -1, keyword.arg, keyword.value
