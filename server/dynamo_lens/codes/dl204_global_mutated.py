"""DL204 · global-mutated

## What it does
Flags a read, inside compiled code, of a module-level global that the program assigns again after its first
definition: in a loop at module level, through `global NAME` in a function (a setter, a step counter), or with an
augmented assignment (`STEP += 1`), including inside the compiled function itself. The finding sits on the read in
the compiled code; the assignments are shown as related locations. The same holds for a member of a module-level
object, dict or list that the program changes the same ways (`cfg.scale = step`, `HPARAMS["lr"] = lr`,
`state.step += 1` in a helper, `STEP[0] = STEP[0] + 1`): Dynamo guards `G['cfg'].scale == 2` like a global. And a
module-level list, dict or set that compiled code changes in place (`HISTORY.append(y)`, a lazy cache
`CACHE[key] = v`, `SEEN.add(n)`), reported at its first read in the compiled function, where Dynamo installs (and
reports the failure of) its guard.

## Why it matters
Dynamo guards every global a compiled frame reads. What the guard checks depends on the value (torch 2.13,
`backend="eager"`, 12 calls with a new value each):

* `int`: guarded by value (`EQUALS_MATCH G['SCALE'] == 2`). Global ints are **always specialised**, never made
  dynamic: every new value recompiles, until `torch._dynamo.config.recompile_limit` (8) is hit; from then on the
  frame silently runs in eager mode (with `fullgraph=True` the ninth call raises `FailOnRecompileLimitHit`).
  From torch 2.14 the guard is installed where the compiled code uses the value, not at its own `COUNT += 1`: a
  counter read nowhere else is not guarded at all (measured on 2.14.1: 1 compile, where 2.13 compiles 8 times), and
  one read later is guarded and reported at that read; the check follows the torch the messages describe.
* `str`: one compile per distinct value, never dynamic: limit hit, like ints.
* a list or tuple of changing length: `len(G['SIZES']) == 2`, one compile per length: limit hit.
* `float`: one recompile, then Dynamo makes the value dynamic (2 compiles in all). With `dynamic=False` at the compile
  site it is never made dynamic: every value recompiles, the limit is hit (reported as a warning, naming the site);
  with `dynamic=True` it is symbolic from the first call (1 compile, not reported).
* `bool`, or `None` later replaced by an object: one recompile per value (2 compiles in all).
* a tensor rebound to another tensor of the same dtype, shape and strides: free (tensors are guarded on metadata).
* a list that compiled code appends to: guarded on its length (`len(G['HISTORY']) == 1`), so every call recompiles
  until the limit (warning). A dict that gains keys is guarded on them (`len(G['CACHE']) == 2`), a set on its contents
  (`G['SEEN'] == {0}`): one compile per new key or element (info: a cache usually holds few); a constant key the
  dict lacks at first costs one extra compile.

The failing guard points at the read inside the compiled code, which is where this finding is reported.

A `guard_filter_fn` in the site's `options=` (torch 2.8+) decides whether the guard on a global name exists:
`torch.compiler.skip_guard_on_globals_unsafe` and `keep_tensor_guards_unsafe` drop every guard whose source starts at
a global, so a global int rebound between calls, or an int attribute of a global object (`cfg.scale`), never
recompiles and the compiled code keeps using its first value (measured: 1 compile for 12 values, every later result
computed with the first): a *warning* about a silent wrong result. A global list the compiled code appends to loses its
length guard the same way, and each call replays the list as it was when it compiled (measured: it stays at one
element). A filter of the project's own makes the finding a hint.

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
tensor is reported only when it replaces `None`. A global changed only through setter functions is reported only
where a setter is called in a loop (or from compiled code) with arguments that can differ between iterations: a loop
calling `set_backend("eager")` sets it from a fixed set of literals. Containers are followed only when the name is
bound once, at module level, to a new list, dict or set, and changed through its own name in the compiled function;
one that the same function also shrinks (`pop`, `clear`) is not reported, since how large it gets cannot be told.

## Fix safety
No automatic fix: turning the global into an argument or a tensor changes every function that reads it. A suppression
comment `# dynamo-lens: ignore[DL204]` is offered when a value changes only a few times on purpose.

## References
- PyTorch, "Dealing with recompilations": https://docs.pytorch.org/docs/stable/compile/programming_model.recompilation.html
- `torch/_dynamo/config.py`: `recompile_limit`
- global ints always specialise: `torch/_dynamo/utils.py`, `is_int_specialization_case`
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dynamo_lens.codes import Check, Rule
from dynamo_lens.model import Finding, Related, Severity
from dynamo_lens.static import exprs
from dynamo_lens.static.context import FileContext, NodeAt
from dynamo_lens.static.semantic import settings
from dynamo_lens.static.semantic.bodies import (
    AUTOMATIC_DYNAMIC_COST,
    MAX_REBINDINGS,
    FunctionBody,
    InsideCompiledCandidate,
    function_bodies,
    guard_message,
    judge_automatic_dynamic,
    rebinding_places,
)
from dynamo_lens.static.semantic.evaluate import FunctionValue
from dynamo_lens.static.semantic.values import ValueKind, kind_of, merge_kinds, range_loop_names
from dynamo_lens.static.walk import SHRINKING_METHODS
from dynamo_lens.torch_facts import GLOBAL_INCREMENT_UNGUARDED_SINCE, GLOBALS, describes_since, torch_name

if TYPE_CHECKING:
    from dynamo_lens.static.semantic.index import WorkspaceIndex

RULE = Rule(
    code="DL204",
    name="global-mutated",
    summary="Compiled code reads a module-level global that the program assigns again between calls",
    default_severity=Severity.WARNING,
    source="static",
    docs_url="https://docs.pytorch.org/docs/stable/compile/programming_model.recompilation.html",
    fix_title="Pass the value as an argument or keep it in a tensor",
    confirmed_by=("DL501", "DL502"),
)


UNBOUNDED = frozenset({"int", "str", "list", "tuple"})
BOUNDED = frozenset({"float", "bool"})


@dataclass(slots=True)
class Binding:
    """One assignment of a module-level name. The kind of its value is worked out only for names compiled code
    reads (most files rebind nothing that matters, and then no value is classified)."""

    target: ast.expr
    """The name (``SCALE``) or member (``cfg.scale``, ``CFG["scale"]``) assigned."""
    value: ast.expr | None
    """The assigned expression; None when ``fixed_kind`` says it all (loop targets, unpacking)."""
    fixed_kind: ValueKind
    rebinds: bool
    """Runs again after the first definition: in a loop, an augmented assignment, or in a function (``global``)."""
    lookup: Callable[[str], ValueKind]
    setter: str = ""
    """The function (qualified name) that assigns a new value through ``global`` without reading the old one: it
    changes the value only if it is called again and again (``set_offset(epoch)`` in a loop)."""

    def kind(self, ctx: FileContext) -> ValueKind:
        return self.fixed_kind if self.value is None else kind_of(self.value, ctx.resolve, self.lookup)


def collect(ctx: FileContext) -> Iterator[InsideCompiledCandidate]:
    bodies = function_bodies(ctx)
    module = _ModuleBindings(ctx)
    declared: dict[str, list[Binding]] = {}
    """Names assigned by functions that declare them ``global``: every such assignment rebinds."""
    for body in bodies:
        for binding in _global_bindings(body):
            declared.setdefault(_name_of(binding.target), []).append(binding)
    bindings = {name: module.of(name) + declared.get(name, []) for name in module.rebound() | set(declared)}
    rebound = set(bindings)
    imports = _plain_imports(ctx)
    owners = {o for o in ctx.member_bindings if o in imports or o in declared or module.of(o)}
    members = _member_bindings(ctx, bodies, owners, module.int_names)
    changed = {key: found for key, found in members.items() if any(b.rebinds for b in found)}
    yield from _container_candidates(ctx, bodies, module, rebound)
    if not rebound and not changed:
        return
    owners = {owner for owner, _ in changed}
    unguarded_increments = describes_since(GLOBAL_INCREMENT_UNGUARDED_SINCE)
    for body in bodies:
        seen: set[str] = set()
        reads = list(body.name_loads(rebound))
        if unguarded_increments:  # Dynamo guards the value where the code uses it, not where it updates itself
            own = _own_update_reads(body, {read.id for read in reads})
            reads = [read for read in reads if id(read) not in own]
        for read in reads:
            name = read.id
            if name not in seen and body.reads_global(name):
                seen.add(name)
                candidate = _candidate(ctx, body, read, name, f"G['{name}']", bindings[name])
                if candidate is not None:
                    yield candidate
        for member, key in _member_reads(body, owners, changed, unguarded_increments):
            shown = ctx.source(member, 40)
            if shown not in seen:
                seen.add(shown)
                candidate = _candidate(ctx, body, member, shown, _guard_source(key), changed[key])
                if candidate is not None:
                    yield candidate


def _name_of(target: ast.expr) -> str:
    assert isinstance(target, ast.Name)
    return target.id


MemberKey = tuple[str, str]
"""(global name, member): ``("cfg", ".scale")``, ``("CFG", "['scale']")``."""


def _member_key(target: ast.AST) -> MemberKey | None:
    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
        return target.value.id, f".{target.attr}"
    if (
        isinstance(target, ast.Subscript)
        and isinstance(target.value, ast.Name)
        and isinstance(target.slice, ast.Constant)
        and isinstance(target.slice.value, (str, int))
    ):
        return target.value.id, f"[{target.slice.value!r}]"
    return None


def _guard_source(key: MemberKey) -> str:
    return f"G['{key[0]}']{key[1]}"


def _plain_imports(ctx: FileContext) -> set[str]:
    """Imported names that may be a module or object of the user's (``import config``), not torch."""
    return {name for name, ref in ctx.aliases.items() if not ref.dotted.startswith("torch")}


MEMBER_STATEMENTS = (ast.Assign, ast.AugAssign, ast.AnnAssign)


def _member_bindings(
    ctx: FileContext, bodies: list[FunctionBody], owners: set[str], module_ints: Callable[[str], ValueKind]
) -> dict[MemberKey, list[Binding]]:
    """Assignments to a member of a module-level object: in a module-level loop, augmented, or in a function."""
    found: dict[MemberKey, list[Binding]] = {}
    by_node = {id(body.node): body for body in bodies}
    filed = {id(at.node): at for owner in owners for at in ctx.member_bindings[owner]}
    statements = sorted(filed.values(), key=lambda at: (_kind_order(at.node, MEMBER_STATEMENTS), _position(at.node)))
    for at in statements:
        node = at.node
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]  # type: ignore[attr-defined]
        value = getattr(node, "value", None)
        for target in targets:
            key = _member_key(target)
            if key is None or key[0] not in owners or value is None:
                continue
            function = at.scope.function
            lookup: Callable[[str], ValueKind] = _unknown
            if function is None:
                rebinds = at.loop_depth > 0 or isinstance(node, ast.AugAssign)
                lookup = module_ints
            else:
                body = by_node.get(id(function.node))
                if body is None or not body.reads_global(key[0]):
                    continue
                rebinds = True
            found.setdefault(key, []).append(Binding(target, _step_of(target, value), "unknown", rebinds, lookup))
    return found


def _step_of(target: ast.expr, value: ast.expr) -> ast.expr:
    """What ``BUF[0] = BUF[0] + 1`` adds to the member, as ``BUF[0] += 1`` says it: its kind is the member's."""
    if isinstance(value, ast.BinOp):
        if _same_member(value.left, target):
            return value.right
        if _same_member(value.right, target) and isinstance(value.op, ast.Add | ast.Mult):
            return value.left
    return value


def _same_member(a: ast.expr, b: ast.expr) -> bool:
    """``a`` and ``b`` spell the same name, attribute or constant subscript (``BUF[0]``, ``cfg.step``)."""
    if isinstance(a, ast.Name) and isinstance(b, ast.Name):
        return a.id == b.id
    if isinstance(a, ast.Attribute) and isinstance(b, ast.Attribute):
        return a.attr == b.attr and _same_member(a.value, b.value)
    if isinstance(a, ast.Subscript) and isinstance(b, ast.Subscript):
        keys = a.slice, b.slice
        return (
            all(isinstance(k, ast.Constant) for k in keys)
            and a.slice.value == b.slice.value  # type: ignore[attr-defined]
            and _same_member(a.value, b.value)
        )
    return False


def _member_reads(
    body: FunctionBody, owners: set[str], changed: dict[MemberKey, list[Binding]], unguarded_increments: bool
) -> Iterator[tuple[ast.expr, MemberKey]]:
    """Reads of changed members in ``body``, in source order (``cfg.scale``, ``CFG["scale"]``, ``s.n += 1``);
    with ``unguarded_increments``, not the reads that only compute the member's own next value
    (``STEP[0] = STEP[0] + 1``), which Dynamo no longer guards from torch 2.14."""
    names = {owner for owner in owners if body.reads_global(owner)}
    if not names:
        return
    pattern = re.compile(r"\b(?:" + "|".join(re.escape(n) for n in names) + r")\b")
    reads: list[tuple[ast.expr, MemberKey]] = []
    for statement, node in body.expressions(lambda line: pattern.search(line) is not None):
        is_load = isinstance(getattr(node, "ctx", None), ast.Load)
        is_aug_target = isinstance(statement, ast.AugAssign) and statement.target is node
        if unguarded_increments and _in_own_update(statement, node):
            continue
        if isinstance(node, (ast.Attribute, ast.Subscript)) and (is_load or is_aug_target):
            key = _member_key(node)
            if key is not None and key in changed and key[0] in names:
                reads.append((node, key))
    reads.sort(key=lambda read: (read[0].lineno, read[0].col_offset))
    yield from reads


def _own_update_reads(body: FunctionBody, names: set[str]) -> set[int]:
    """The ids of the reads of global ``names`` in ``body`` that only compute the name's own next value
    (``COUNT += 1``, ``COUNT = COUNT + 1``)."""
    if not names:
        return set()
    pattern = re.compile(r"\b(?:" + "|".join(re.escape(n) for n in names) + r")\b")
    return {
        id(node)
        for statement, node in body.expressions(lambda line: pattern.search(line) is not None)
        if isinstance(node, ast.Name) and node.id in names and _in_own_update(statement, node)
    }


def _in_own_update(statement: ast.stmt, node: ast.AST) -> bool:
    """``node`` is the global or member a statement updates from itself: ``M += 1``, or ``M`` read in
    ``M = M + 1``."""
    target: ast.expr
    if isinstance(statement, ast.AugAssign):
        target = statement.target
    elif isinstance(statement, ast.Assign) and len(statement.targets) == 1:
        target = statement.targets[0]
    else:
        return False
    return isinstance(node, (ast.Name, ast.Attribute, ast.Subscript)) and ast.unparse(node) == ast.unparse(target)


BINDING_STATEMENTS = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor)


class _ModuleBindings:
    """The module-level bindings of each name, worked out only for the names asked about (a file may bind
    thousands of module-level names that no compiled code reads)."""

    def __init__(self, ctx: FileContext) -> None:
        self.ctx = ctx
        self.loops = [at for kind in (ast.For, ast.AsyncFor) for at in ctx.nodes(kind) if at.scope.kind == "module"]
        self.int_names = _LoopInts(self.loops)
        """The bindings' lookup (its own object: bindings that pointed back here would make a reference cycle)."""
        self._of: dict[str, list[Binding]] = {}

    def rebound(self) -> set[str]:
        """Names some module-level binding assigns again: in a loop, augmented, or a loop variable."""
        ctx = self.ctx
        names: set[str] = set()
        for kind in (ast.Assign, ast.AnnAssign, ast.AugAssign):
            for at in ctx.nodes(kind):
                if at.scope.kind == "module" and (at.loop_depth or kind is ast.AugAssign):
                    names.update(b.target.id for b in self._bindings(at) if b.rebinds)  # type: ignore[attr-defined]
        for at in self.loops:
            names.update(_name_of(b.target) for b in self._bindings(at))
        return names

    def of(self, name: str) -> list[Binding]:
        """Every module-level binding of ``name`` (assignments, then augmented and annotated ones, then loops)."""
        found = self._of.get(name)
        if found is None:
            statements = [at for at in self.ctx.name_bindings.get(name, ()) if at.scope.kind == "module"]
            statements += [at for at in self.loops if name in set(_target_names(at.node))]
            statements.sort(key=lambda at: (_kind_order(at.node, BINDING_STATEMENTS), _position(at.node)))
            found = self._of[name] = [b for at in statements for b in self._bindings(at) if _name_of(b.target) == name]
        return found

    def _bindings(self, at: NodeAt) -> Iterator[Binding]:
        return _targets(at.node, self.int_names, in_loop=at.loop_depth > 0)


class _LoopInts:
    """``int`` for the variable of a module-level ``for name in range(...)``, ``unknown`` for other names."""

    def __init__(self, loops: list[NodeAt]) -> None:
        self._loops = loops
        self._names: set[str] | None = None

    def __call__(self, name: str) -> ValueKind:
        if self._names is None:
            self._names = range_loop_names(at.node for at in self._loops)
        return "int" if name in self._names else "unknown"


def _target_names(node: ast.AST) -> Iterator[str]:
    target = getattr(node, "target", None)
    return (name.id for name in _names(target)) if target is not None else iter(())


def _kind_order(node: ast.AST, kinds: tuple[type[ast.stmt], ...]) -> int:
    return next(i for i, kind in enumerate(kinds) if isinstance(node, kind))


def _position(node: ast.AST) -> tuple[int, int]:
    return node.lineno, node.col_offset  # type: ignore[attr-defined]


def _global_bindings(body: FunctionBody) -> Iterator[Binding]:
    declared = {name for node in body.statements if isinstance(node, ast.Global) for name in node.names}
    if not declared:
        return
    for node in body.statements:
        if isinstance(node, BINDING_STATEMENTS):
            for binding in _targets(node, _unknown, in_loop=True):
                name = _name_of(binding.target)
                if name in declared:
                    counter = isinstance(node, ast.AugAssign) or (
                        binding.value is not None and _mentions_name(binding.value, name)
                    )
                    if not counter:
                        binding.setter = body.qualname
                    yield binding


def _mentions_name(expr: ast.AST, name: str) -> bool:
    return any(isinstance(node, ast.Name) and node.id == name for node in ast.walk(expr))


def _targets(node: ast.AST, lookup: Callable[[str], ValueKind], in_loop: bool) -> Iterator[Binding]:
    """A binding for each plain name a binding statement assigns."""
    if isinstance(node, ast.Assign):
        for target in node.targets:
            value = node.value if isinstance(target, ast.Name) else None
            for name in _names(target):
                yield Binding(name, value, "unknown", in_loop, lookup)
    elif isinstance(node, ast.AnnAssign) and node.value is not None and isinstance(node.target, ast.Name):
        yield Binding(node.target, node.value, "unknown", in_loop, lookup)
    elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
        yield Binding(node.target, node.value, "unknown", True, lookup)
    elif isinstance(node, (ast.For, ast.AsyncFor)):
        is_range = (
            isinstance(node.iter, ast.Call) and isinstance(node.iter.func, ast.Name) and node.iter.func.id == "range"
        )
        for name in _names(node.target):
            kind: ValueKind = "int" if is_range and isinstance(node.target, ast.Name) else "unknown"
            yield Binding(name, None, kind, True, lookup)


def _unknown(name: str) -> ValueKind:
    return "unknown"


def _names(target: ast.AST) -> Iterator[ast.Name]:
    if isinstance(target, ast.Name):
        yield target
    elif isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            yield from _names(element)
    elif isinstance(target, ast.Starred):
        yield from _names(target.value)


def _candidate(
    ctx: FileContext, body: FunctionBody, read: ast.expr, shown: str, source: str, bindings: list[Binding]
) -> InsideCompiledCandidate | None:
    kinds = [b.kind(ctx) for b in bindings]
    kind = merge_kinds(kinds)
    is_name = isinstance(read, ast.Name)
    if kind in UNBOUNDED:
        severity = RULE.default_severity
        what = "global ints always specialise" if kind == "int" else f"a {kind} is never made dynamic"
        guard = f"`len({source}) == <length>`" if kind in ("list", "tuple") else f"`{source} == <value>`"
        cost = f"{what}, so every new value recompiles, and {settings.PAST_LIMIT}"
    elif kind in BOUNDED:
        severity = Severity.INFO
        guard = f"`{source} == <value>`"
        cost = AUTOMATIC_DYNAMIC_COST if kind == "float" else "one compile per value"
    elif kind == "tensor" and "none" in kinds and is_name:
        severity = Severity.INFO
        guard = f"`{source} is None`"
        cost = "one recompile when it stops being None"
    else:
        return None
    rebinds = [b for b in bindings if b.rebinds]
    where, related = rebinding_places(ctx, [b.target for b in rebinds], f"`{shown}` assigned here")
    what_changes = f"the global {kind} `{shown}` is assigned again" if is_name else f"`{shown}` ({kind}) is changed"
    subject = f"{what_changes} ({where})"
    owner = read.id if isinstance(read, ast.Name) else shown.partition(".")[0].partition("[")[0]
    return InsideCompiledCandidate(
        code=RULE.code,
        span=ctx.span(read),
        function=body.qualname,
        message=guard_message(subject, guard, cost),
        severity=severity,
        related=related,
        data=(
            ("name", shown),
            ("kind", kind),
            ("global", owner),
            ("setters", _setters(rebinds)),
            *((("subject", subject), ("guard", guard)) if cost == AUTOMATIC_DYNAMIC_COST else ()),
        ),
        guards_on=GLOBALS,  # `G['SCALE']`, and `G['cfg'].scale` too: every guard whose source starts at a global
    )


LIST_GROWTH = frozenset({"append", "extend", "insert", "appendleft", "extendleft"})
KEYED_GROWTH = frozenset({"add", "update", "setdefault"})
CONTAINER_CALLS = {
    "list": "list", "dict": "dict", "set": "set", "collections.OrderedDict": "dict",
    "collections.defaultdict": "dict", "collections.deque": "list",
}  # fmt: skip
CONTAINER_DISPLAYS = {ast.List: "list", ast.ListComp: "list", ast.Dict: "dict", ast.DictComp: "dict"}
CONTAINER_DISPLAYS |= {ast.Set: "set", ast.SetComp: "set"}


@dataclass(frozen=True, slots=True)
class _Growth:
    """A statement of compiled code that changes a module-level container in place."""

    node: ast.stmt | ast.expr
    name: str
    per_call: bool
    """It grows on every call (``HISTORY.append(y)``); else once per distinct key or element."""
    new_key: str = ""
    """A constant key the dict gains once (``STATS["last"] = y``)."""


def _container_candidates(
    ctx: FileContext, bodies: list[FunctionBody], module: _ModuleBindings, rebound: set[str]
) -> Iterator[InsideCompiledCandidate]:
    """Module-level lists, dicts and sets that compiled code changes in place. Measured on 2.13: Dynamo guards a
    list's length and a dict's keys (``len(G['CACHE']) == 3``), a set's contents (``G['SEEN'] == {0}``), at the
    first read, so a list appended to on every call recompiles every call up to the limit, and a dict or set
    recompiles for each new key or element (a constant key: once)."""
    kinds: dict[str, str | None] = {}
    for body in bodies:
        grown: dict[str, list[_Growth]] = {}
        for growth in _growths(body):
            if growth.name not in rebound and body.reads_global(growth.name):
                grown.setdefault(growth.name, []).append(growth)
        for name, growths in grown.items():
            if name not in kinds:
                kinds[name] = _container_kind(ctx, module.of(name))
            kind = kinds[name]
            if kind is not None and not _shrinks(body, name):
                candidate = _container_candidate(ctx, body, name, kind, growths, module.of(name)[0])
                if candidate is not None:
                    yield candidate


def _growths(body: FunctionBody) -> Iterator[_Growth]:
    for call in body.calls:
        func = call.func
        if any(_is_hook_handle(a) for a in call.args):
            continue  # Dynamo cannot keep a hook handle outside the frame: it runs the function eagerly (GB0092)
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            if func.attr in LIST_GROWTH:
                yield _Growth(call, func.value.id, per_call=True)
            elif func.attr in KEYED_GROWTH:
                yield _Growth(call, func.value.id, per_call=False)
    for statement in body.statements:
        if isinstance(statement, ast.Assign):
            for target in statement.targets:
                if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
                    key = target.slice
                    constant = repr(key.value) if isinstance(key, ast.Constant) else ""
                    yield _Growth(statement, target.value.id, per_call=False, new_key=constant)


def _is_hook_handle(expr: ast.expr) -> bool:
    return isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr == "register_hook"


def _shrinks(body: FunctionBody, name: str) -> bool:
    """The call also takes elements out (``CACHE.pop(k)``, ``HISTORY.clear()``): how large it gets cannot be told."""
    return any(
        isinstance(func := call.func, ast.Attribute)
        and func.attr in SHRINKING_METHODS
        and isinstance(func.value, ast.Name)
        and func.value.id == name
        for call in body.calls
    )


def _container_kind(ctx: FileContext, bindings: list[Binding]) -> str | None:
    """``list``, ``dict`` or ``set`` for a name bound once at module level to a new container."""
    if len(bindings) != 1 or bindings[0].rebinds or bindings[0].value is None:
        return None
    value = bindings[0].value
    if isinstance(value, ast.Call):
        if any(k.arg == "maxlen" for k in value.keywords) or len(value.args) > 1:
            return None  # `deque(maxlen=4)` stops growing: how often its length changes cannot be told
        func = value.func
        return CONTAINER_CALLS.get(ctx.resolve(func) or (func.id if isinstance(func, ast.Name) else ""))
    return CONTAINER_DISPLAYS.get(type(value))


def _container_candidate(
    ctx: FileContext, body: FunctionBody, name: str, kind: str, growths: list[_Growth], binding: Binding
) -> InsideCompiledCandidate | None:
    initial = binding.value
    keys = (
        {repr(k.value) for k in initial.keys if isinstance(k, ast.Constant)} if isinstance(initial, ast.Dict) else set()
    )
    # a list grows only through its methods (`HISTORY[i] = y` keeps its length), a dict or set only through keys
    growths = [g for g in growths if g.per_call == (kind == "list") and not (g.new_key and g.new_key in keys)]
    if not growths:
        return None  # nothing changes its structure: every key it writes is there from the start
    guard = f"`G['{name}'] == {{...}}`" if kind == "set" else f"`len(G['{name}']) == <length>`"
    if any(g.per_call for g in growths):
        severity, what = RULE.default_severity, f"grows the global {kind} `{name}`"
        cost = f"every call that grows it recompiles; {settings.PAST_LIMIT}"
    elif all(g.new_key for g in growths):
        severity, what = Severity.INFO, f"adds the key {growths[0].new_key} to the global dict `{name}`"
        cost = "its keys change once: one extra compile (create the key where the dict is defined to avoid it)"
    else:
        element = "element" if kind == "set" else "key"
        severity, what = Severity.INFO, f"adds computed {element}s to the global {kind} `{name}`"
        cost = f"each new {element} compiles once more; {settings.PAST_LIMIT}"
    reads = body.name_loads({name})
    read = reads[0] if reads else growths[0].node
    changed = [g.node for g in growths if g.node.lineno != read.lineno]
    related = tuple(Related(ctx.span(node), f"`{name}` changed here") for node in changed[:MAX_REBINDINGS])
    return InsideCompiledCandidate(
        code=RULE.code,
        span=ctx.span(read),
        function=body.qualname,
        message=f"compiled code {what} (line {growths[0].node.lineno}) and reads it: Dynamo guards {guard}: {cost} "
        f"({torch_name()})",
        severity=severity,
        related=(*related, Related(ctx.span(binding.target), f"`{name}` defined here")),
        data=(("name", name), ("kind", kind), ("global", name), ("setters", "")),
        # the change must run for the guard to fail: a hint where the compiled code reaches this function only
        # under a condition (a cache filled under `if key not in CACHE` in its own function is the idiom itself)
        only_if_taken=True,
        guards_on=GLOBALS,
    )


def _setters(rebinds: list[Binding]) -> str:
    """The setter functions, comma-separated, when every rebinding is done by one (else ``""``)."""
    if not rebinds or any(not b.setter for b in rebinds):
        return ""
    return ",".join(sorted({b.setter for b in rebinds}))


def judge_global(candidate: InsideCompiledCandidate, index: WorkspaceIndex) -> Iterator[Finding]:
    """As every check inside compiled code, except that state set on a compiled module or function belongs to DL111,
    and a global changed only by setter functions matters only where a setter is called in a loop."""
    data = dict(candidate.data)
    if data["name"] != data["global"] and index.compiled_binding(candidate.span.path, "", data["global"]):
        return
    setters = [s for s in data.get("setters", "").split(",") if s]
    path = candidate.span.path
    if setters and not any(
        _called_in_loop(index, path, setter) or index.sites_for_scope(path, setter) for setter in setters
    ):
        return  # set once (at start-up, say): whether after compiled code ran cannot be told
    yield from judge_automatic_dynamic(candidate, index)


def _called_in_loop(index: WorkspaceIndex, path: str, qualname: str) -> bool:
    """The setter is called in a loop with arguments that can differ from one iteration to the next (a call passing
    only literals, ``set_backend("eager")``, sets the global from a fixed set of values: nothing unbounded)."""
    target = FunctionValue((path, qualname))
    for call, at in index.evaluator.callers(qualname.rpartition(".")[2]):
        literal = (call.args or call.keywords) and all(
            isinstance(arg, exprs.Const) for arg in (*call.args, *(value for _, value in call.keywords))
        )
        if call.in_loop and not literal and target in index.evaluator.evaluate(call.func, at):
            return True
    return False


CHECK = Check(RULE.code, collect=collect, judge=judge_global)
