"""Lower Python expressions of one file into the semantic layer's expressions (``static/exprs.py``).

One :class:`Lowering` per file, used after the walk (every definition and import of the file is known). Inside a
function, a local variable becomes what was assigned to it on the way to the use: the latest assignment above the
use that runs whenever the use does, together with the conditional ones in between (``model = A()`` then, under an
``if``, ``model = B()``: one of both). A parameter stays a :class:`~dynamo_lens.static.exprs.Param`; a module-level
name a :class:`~dynamo_lens.static.exprs.Global`; an import or a definition a
:class:`~dynamo_lens.static.exprs.Named`. A use under ``if isinstance(m, Block):`` (or after
``if not isinstance(m, Block): continue``), in a function or in module-level code, is an instance of ``Block``.
Nothing here looks at another file.

Exactness for the editor: a function's lowered expressions depend only on its own statements and on the file's
names (imports and definitions), so they are kept with the block that contains the function.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import partial

from dynamo_lens.static import exprs
from dynamo_lens.static.context import PARTIAL, FileContext, NodeAt, Scope
from dynamo_lens.static.exprs import UNKNOWN, Expr
from dynamo_lens.static.summary import LOCAL, Ref
from dynamo_lens.torch_facts import MODULE_HOOK_REGISTRATIONS

RETURNS_RECEIVER = frozenset(
    {"to", "cuda", "cpu", "eval", "train", "half", "bfloat16", "float", "double", "requires_grad_", "to_empty",
     "share_memory", "type", "xpu", "mps", "ipu"}
)  # fmt: skip
"""Methods of ``nn.Module`` that return the module itself (on a tensor they return a tensor: the same kind)."""
MODULE_WRAPPERS = frozenset(
    {"torch.nn.parallel.DistributedDataParallel", "torch.nn.DataParallel", "torch.nn.parallel.DataParallel",
     "torch.distributed.fsdp.FullyShardedDataParallel", "torch.distributed.fsdp.fully_shard",
     "torch.distributed._composable.fsdp.fully_shard", "torch.distributed._composable.fully_shard",
     "torch.nn.parallel.distributed.DistributedDataParallel", "tensordict.nn.TensorDictModule",
     "tensordict.nn.common.TensorDictModule"}
)  # fmt: skip
"""Calls whose result runs the wrapped module's ``forward`` (or is that module): ``TensorDictModule(model, in_keys=...,
out_keys=...)`` calls ``model`` with the tensors it reads from the tensordict."""
TRANSPARENT_CALLS = frozenset({PARTIAL}) | MODULE_WRAPPERS
"""Calls that stand for their first argument: what they return calls it (``partial(f, 1)``, ``DDP(model)``)."""
EXTERNAL_ROOTS = frozenset(
    {"torch", "numpy", "math", "os", "sys", "typing", "functools", "itertools", "collections", "logging",
     "warnings", "re", "json", "time", "random", "einops", "dataclasses", "copy", "inspect", "abc", "contextlib",
     "pathlib", "enum", "operator", "triton", "builtins", "argparse", "glob", "shutil", "subprocess", "threading",
     "pickle", "datetime", "tqdm", "packaging", "importlib"}
)  # fmt: skip
"""Top-level packages whose functions never run workspace code we follow (calls of them are not recorded)."""
BUILTIN_NAMES = frozenset(dir(builtins))
MAX_DEPTH = 12
MAX_OPTIONS = 8
_SIMPLE = (ast.Constant, ast.JoinedStr, ast.BinOp, ast.UnaryOp, ast.Compare, ast.Lambda, ast.FormattedValue)
"""Expressions whose value never names a module, a function or a container of them."""

Position = tuple[int, int]


@dataclass(frozen=True, slots=True)
class _Binding:
    """One place that binds a local name of a function."""

    position: Position
    path: tuple[int, ...]
    node: ast.AST
    """The statement (``Assign``, ``For``, ``With`` ...)."""
    target: ast.expr
    """The target expression that contains the name."""


def _empty_container(value: ast.expr) -> bool:
    """``nn.ModuleList()`` or ``nn.Sequential()`` built empty (filled by ``append`` afterwards)."""
    if not isinstance(value, ast.Call) or value.args or value.keywords:
        return False
    func = value.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return name in ("ModuleList", "Sequential")


LIST_GROWERS = {"append": 1, "insert": 2, "extend": 1}
"""List methods that add what their last argument is (``extend``: its elements), with their argument count."""


class _FunctionNames:
    """The local names of one function: parameters, and every statement that binds a name."""

    def __init__(self, function: Scope, bindings: Mapping[str, list[_Binding]], guards: list[ast.If]) -> None:
        node = function.node
        assert isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        args = node.args
        positional = [a.arg for a in (*args.posonlyargs, *args.args)]
        self.params: dict[str, int] = {name: index for index, name in enumerate(positional)}
        for extra in (*args.kwonlyargs, args.vararg, args.kwarg):
            if extra is not None:
                self.params[extra.arg] = -1
        self.bindings = bindings
        self.growths: dict[str, list[tuple[NodeAt, ast.Call]]] = {}
        """Name → the calls that add to the list it holds (``layers.append(Block(i))``, ``.extend``, ``.insert``)."""
        self.declared_global: set[str] = set()
        self.declared_nonlocal: set[str] = set()
        self.isinstance_guards = _isinstance_guards(guards)


class Lowering:
    """Lowers expressions of one file; build one after the walk (``Walker.finish``)."""

    def __init__(self, ctx: FileContext) -> None:
        self.ctx = ctx
        self._functions: dict[int, _FunctionNames] | None = None
        self._def_lines: dict[tuple[int, str], list[int]] | None = None
        self._loops: dict[int, list[tuple[int, int]]] | None = None
        self._module_isinstance: IsinstanceGuards | None = None
        self._stack: list[int] = []
        self._bound: dict[tuple[int, str], Expr] = {}
        """What a binding statement assigns to a name (lowered once however often the name is read)."""

    # -- entry points --------------------------------------------------------------------------------------------
    def value(self, node: ast.AST, at: NodeAt, env: Mapping[str, Expr] | None = None) -> Expr:
        """What ``node`` (an expression of the statement or call recorded as ``at``) evaluates to."""
        return self._lower(node, at, env or {}, 0)

    def argument(self, node: ast.AST, at: NodeAt) -> Expr:
        """An argument of a call: a literal, or :data:`UNKNOWN` unless it can name something to follow."""
        if isinstance(node, ast.Constant):
            return exprs.constant(node.value)
        if isinstance(node, _SIMPLE):
            return UNKNOWN
        return self._display_item(node, at, {}, 0)

    def call_site_func(self, call: ast.Call, at: NodeAt) -> Expr | None:
        """The callee of ``call`` if the call may run code of the workspace, else None (builtins, torch, the
        standard library, methods of plain local values such as ``x.view(...)``)."""
        func = call.func
        steps = 0
        root: ast.AST = func
        while True:
            if isinstance(root, ast.Attribute | ast.Subscript):
                root = root.value
            elif (
                isinstance(root, ast.Call)
                and isinstance(root.func, ast.Attribute)
                and root.func.attr in exprs.ELEMENT_GETTERS
            ):
                root = root.func.value  # `self.modules.get("transformer")(x)`: a value of the dict is called
            else:
                break
            steps += 1
        if not isinstance(root, ast.Name):
            return None
        name = root.id
        if name in BUILTIN_NAMES and not self._is_bound(name, at):
            return None
        dotted = self.ctx.resolve(func)
        if dotted is not None and dotted.partition(".")[0] in EXTERNAL_ROOTS:
            return None
        if (
            steps == 1
            and isinstance(func, ast.Attribute)
            and func.attr not in ("forward", "__call__")
            and func.attr not in MODULE_HOOK_REGISTRATIONS  # on a submodule a helper was passed: DL401 follows it
            and not self.is_self(name, at)
            and self._is_local(name, at)
        ):
            return None  # `x.view(...)` on a local or parameter: a method of a plain value
        lowered = self._lower(func, at, {}, 0)
        return None if isinstance(lowered, exprs.Unknown) else lowered

    def module_binding(self, at: NodeAt) -> list[tuple[str, Expr]]:
        """(name, value) for each name a module-level statement binds (assignment, ``for`` target, ``with ... as``)."""
        node = at.node
        if isinstance(node, ast.Assign):
            value = self._lower(node.value, at, {}, 0)
            return [pair for target in node.targets for pair in _unpacked(target, value)]
        if isinstance(node, ast.AnnAssign) and node.value is not None:
            return _unpacked(node.target, self._lower(node.value, at, {}, 0))
        if isinstance(node, ast.For | ast.AsyncFor):
            return _unpacked(node.target, self._element(node.iter, at, {}, 0))
        if isinstance(node, ast.With | ast.AsyncWith):
            return [
                pair
                for item in node.items
                if item.optional_vars is not None
                for pair in _unpacked(item.optional_vars, self._lower(item.context_expr, at, {}, 0))
            ]
        return []

    # -- lowering ------------------------------------------------------------------------------------------------
    def _lower(self, node: ast.AST, at: NodeAt, env: Mapping[str, Expr], depth: int) -> Expr:
        if depth > MAX_DEPTH:
            return UNKNOWN
        depth += 1
        if isinstance(node, ast.Name):
            return self._name(node.id, (node.lineno, node.col_offset), at, env, depth)
        if isinstance(node, ast.Attribute):
            ref = self._ref(node, at)
            if ref is not None:
                return exprs.Named(ref)
            return exprs.Attr(self._lower(node.value, at, env, depth), node.attr)
        if isinstance(node, ast.Call):
            return self._call(node, at, env, depth)
        if isinstance(node, ast.Subscript):
            value = self._lower(node.value, at, env, depth)
            if isinstance(node.slice, ast.Slice):
                return value
            key = node.slice.value if isinstance(node.slice, ast.Constant) else None
            return exprs.Item(value, key=key) if isinstance(key, str) else exprs.Item(value)
        if isinstance(node, ast.List | ast.Tuple | ast.Set):
            return exprs.Items(tuple(self._display_item(e, at, env, depth) for e in node.elts[:MAX_OPTIONS]))
        if isinstance(node, ast.Dict):
            items = tuple(self._lower(v, at, env, depth) for v in node.values[:MAX_OPTIONS])
            keys = tuple(k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str))
            return exprs.Items(items, keys if len(keys) == len(node.keys) <= MAX_OPTIONS else ())
        if isinstance(node, ast.ListComp | ast.GeneratorExp | ast.SetComp | ast.DictComp):
            inner = dict(env)
            for generator in node.generators:
                for name, value in _unpacked(generator.target, self._element(generator.iter, at, inner, depth)):
                    inner[name] = value
            element = node.value if isinstance(node, ast.DictComp) else node.elt
            return exprs.Items((self._lower(element, at, inner, depth),))
        if isinstance(node, ast.IfExp):
            return _one_of((self._lower(node.body, at, env, depth), self._lower(node.orelse, at, env, depth)))
        if isinstance(node, ast.BoolOp):
            values = node.values if isinstance(node.op, ast.Or) else node.values[-1:]
            return _one_of(self._lower(v, at, env, depth) for v in values)
        if isinstance(node, ast.NamedExpr):
            return self._lower(node.value, at, env, depth)
        if isinstance(node, ast.Starred):
            return exprs.Item(self._lower(node.value, at, env, depth))
        if isinstance(node, ast.Constant):
            return exprs.constant(node.value)
        return UNKNOWN

    def _display_item(self, node: ast.AST, at: NodeAt, env: Mapping[str, Expr], depth: int) -> Expr:
        """An element of a display: ``*layers`` contributes the elements of ``layers``."""
        if isinstance(node, ast.Starred):
            return exprs.Item(self._lower(node.value, at, env, depth))
        return self._lower(node, at, env, depth)

    def _call(self, node: ast.Call, at: NodeAt, env: Mapping[str, Expr], depth: int) -> Expr:
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in RETURNS_RECEIVER and not self._ref(func, at):
            return self._lower(func.value, at, env, depth)
        dotted = self.ctx.resolve(func) if isinstance(func, ast.Name | ast.Attribute) else None
        if isinstance(func, ast.Name) and func.id in self.ctx.compile_partials:
            dotted = "torch.compile"
        if isinstance(func, ast.Call) and self.ctx.resolve(func.func) == "torch._dynamo.optimize":
            dotted = "torch.compile"  # torch._dynamo.optimize("eager")(f)
        if dotted == "torch.compile" and node.args:
            span = self.ctx.span(node)
            return exprs.Compiled(self._lower(node.args[0], at, env, depth), span.line, span.column)
        if dotted in TRANSPARENT_CALLS and node.args:
            return self._lower(node.args[0], at, env, depth)
        if (
            isinstance(func, ast.Name)
            and func.id in ("dict", "list", "tuple", "set")
            and not self._is_bound(func.id, at)
        ):
            # a container built by its type: its elements are the argument's, and a dict's keyword values
            if func.id == "dict" and not node.args and all(k.arg is not None for k in node.keywords):
                named = node.keywords[:MAX_OPTIONS]
                values = tuple(self._lower(k.value, at, env, depth) for k in named)
                return exprs.Items(values, tuple(str(k.arg) for k in named) if len(named) == len(node.keywords) else ())
            parts: list[Expr] = [exprs.Item(self._lower(a, at, env, depth)) for a in node.args[:1]]
            parts += [self._lower(k.value, at, env, depth) for k in node.keywords if k.arg is not None]
            return exprs.Items(tuple(parts[:MAX_OPTIONS]))
        if isinstance(func, ast.Name) and func.id == "getattr" and len(node.args) >= 2:
            name = node.args[1]
            if isinstance(name, ast.Constant) and isinstance(name.value, str):
                found = exprs.Attr(self._lower(node.args[0], at, env, depth), name.value)
                if len(node.args) > 2:
                    return _one_of((found, self._lower(node.args[2], at, env, depth)))
                return found
        callee = self._lower(func, at, env, depth)
        if not isinstance(callee, exprs.Named | exprs.Global | exprs.Attr) or (
            isinstance(callee, exprs.Attr) and not isinstance(callee.value, exprs.Named | exprs.Global)
        ):
            # a call of a method of a value, of a module instance, of a parameter: what it returns never depends on
            # what we could follow in its arguments (`x = self.norm(x)` chains stay small), only on which of its
            # returns a literal argument selects (`self.get_model(ema=True)`, passed on as `ema=ema`)
            return self._selecting_call(callee, node, at, env, depth)
        args = tuple(
            exprs.constant(a.value)
            if isinstance(a, ast.Constant)
            else UNKNOWN
            if isinstance(a, _SIMPLE)
            else self._display_item(a, at, env, depth)
            for a in node.args[:MAX_OPTIONS]
        )
        keywords = tuple(
            (
                k.arg,
                self.argument(k.value, at) if isinstance(k.value, _SIMPLE) else self._lower(k.value, at, env, depth),
            )
            for k in node.keywords
            if k.arg is not None
        )
        return exprs.Call(callee, args, keywords, _complete(node))

    def _selecting_call(
        self, callee: Expr, node: ast.Call, at: NodeAt, env: Mapping[str, Expr], depth: int
    ) -> exprs.Call:
        """A call of a value's method with only the arguments that can select a return: literals, and parameters of
        the calling function passed on by name."""

        def selecting(argument: ast.expr) -> Expr:
            if isinstance(argument, ast.Constant):
                return exprs.constant(argument.value)
            function = at.scope.function
            if isinstance(argument, ast.Name) and function is not None and argument.id in function.params:
                lowered = self._lower(argument, at, env, depth)  # a parameter, unless the function rebinds it
                if isinstance(lowered, exprs.Param):
                    return lowered
            return UNKNOWN

        args = tuple(selecting(a) for a in node.args[:MAX_OPTIONS])
        keywords = tuple((k.arg, selecting(k.value)) for k in node.keywords if k.arg is not None)
        if all(isinstance(a, exprs.Unknown) for a in args) and all(isinstance(v, exprs.Unknown) for _, v in keywords):
            # nothing selects (one evaluation serves every call); with no arguments at all, the defaults do
            return exprs.Call(callee, complete=not node.args and not node.keywords)
        return exprs.Call(callee, args, keywords, _complete(node))

    def _name(self, name: str, position: Position, at: NodeAt, env: Mapping[str, Expr], depth: int) -> Expr:
        if name in env:
            return env[name]
        function = at.scope.function
        while function is not None:
            names = self._function_names(function)
            if name in names.declared_global:
                break
            if name in names.bindings or name in names.params:
                path = at.path if function is at.scope.function else None
                local = partial(self._local, name, position, path, function, names, depth)
                lower = partial(self._lower, at=at, env=env, depth=depth + 1)
                return self._narrowed(names.isinstance_guards, name, position, local, lower) or local()
            function = function.parent.function if function.parent is not None else None
            position = (1 << 30, 0)  # a closure reads the enclosing function's value when it runs: any of them
        ref = self.ctx.ref(ast.Name(name), at.scope)
        if ref is not None:
            return exprs.Named(ref)
        if name in BUILTIN_NAMES:
            return UNKNOWN
        if at.scope.function is not None:
            return exprs.Global(name, 0)
        found = exprs.Global(name, position[0])
        lower = partial(self._lower, at=at, env=env, depth=depth + 1)
        return self._narrowed(self._module_guards(), name, position, lambda: found, lower) or found

    def _local(
        self,
        name: str,
        position: Position,
        path: tuple[int, ...] | None,
        function: Scope,
        names: _FunctionNames,
        depth: int,
    ) -> Expr:
        bindings = names.bindings.get(name, [])
        before = [b for b in bindings if b.position < position and not _in_value(b.node, position)]
        chosen: list[_Binding] = []
        dominated = False
        for binding in reversed(before):
            chosen.append(binding)
            if path is not None and path[: len(binding.path)] == binding.path:
                dominated = True
                break
        defined = self.ctx.local_defs.get(function.qualname, {}).get(name)
        if not before:
            # only bound later: what a loop around the read carries back to it (any binding, when the name has no
            # value before at all); the parameter or nested def is what the first rebinding reads
            # (`update = torch.compile(update)`)
            unbound = name not in names.params and not self._defined_before(function, name, position)
            chosen = [
                b
                for b in bindings
                if (defined is None or not _in_value(b.node, position))
                and (unbound or self._loop_carries(function, b, position))
            ]
        options: list[Expr] = []
        if not dominated and name in names.params:
            options.append(exprs.Param(function.qualname, name, names.params[name]))
        if bindings:
            options.append(exprs.Local(function.qualname, name))
        cycles = 0
        for binding in chosen:
            key = id(binding.target)
            found = self._bound.get((key, name))
            if found is None:
                if key in self._stack:
                    cycles += 1
                    continue
                self._stack.append(key)
                try:
                    found = self._bound[(key, name)] = self._bound_value(name, binding, function, depth)
                finally:
                    self._stack.pop()
            options.append(found)
        if defined is not None and (not dominated or cycles == len(chosen)):
            # `def update(...)` then `update = torch.compile(update)`: the name read there is the nested function
            options.append(exprs.Named(Ref(defined, LOCAL)))
        return _one_of(options)

    def _loop_carries(self, function: Scope, binding: _Binding, position: Position) -> bool:
        """A loop of ``function`` holds both the binding and ``position``: the next iteration reads what it bound."""
        if self._loops is None:
            self._loops = {}
            for at in self.ctx.nodes(ast.For, ast.AsyncFor, ast.While):
                if at.scope.function is not None:
                    node = at.node
                    self._loops.setdefault(id(at.scope.function.node), []).append(
                        (node.lineno, node.end_lineno or node.lineno)  # type: ignore[attr-defined]
                    )
        lines = (binding.position[0], position[0])
        return any(all(start <= line <= end for line in lines) for start, end in self._loops.get(id(function.node), ()))

    def _defined_before(self, function: Scope, name: str, position: Position) -> bool:
        """A ``def name`` directly in ``function`` comes before ``position``: what the name holds there is that
        function (``update = wrap(update)`` after ``def update``), not what later statements bind it to."""
        if self._def_lines is None:
            self._def_lines = {}
            for at in self.ctx.nodes(ast.FunctionDef, ast.AsyncFunctionDef):
                owner = at.scope.function
                if owner is not None:
                    node = at.node
                    assert isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                    self._def_lines.setdefault((id(owner.node), node.name), []).append(node.lineno)
        return any(line < position[0] for line in self._def_lines.get((id(function.node), name), ()))

    def _bound_value(self, name: str, binding: _Binding, function: Scope, depth: int) -> Expr:
        """What ``binding`` assigns to ``name``."""
        node = binding.node
        at = NodeAt(node, function, 0, 0, binding.path)
        if isinstance(node, ast.For | ast.AsyncFor):
            return dict(_unpacked(node.target, self._element(node.iter, at, {}, depth))).get(name, UNKNOWN)
        if isinstance(node, ast.With | ast.AsyncWith):
            for item in node.items:
                if item.optional_vars is binding.target:
                    return self._lower(item.context_expr, at, {}, depth)
            return UNKNOWN
        value = getattr(node, "value", None)
        if value is None or isinstance(node, ast.AugAssign):
            return UNKNOWN
        if binding.target is not None and isinstance(binding.target, ast.Name):
            if isinstance(value, ast.List):
                return self._grown_list(value, name, at, function, depth)
            lowered = self._lower(value, at, {}, depth)
            if _empty_container(value) and isinstance(lowered, exprs.Call):
                # `layers = nn.ModuleList()`, then `layers.append(Block(i))`: the container of what is appended
                appended = self._grown_list(ast.List(elts=[]), name, at, function, depth)
                return exprs.Call(lowered.func, (appended,), (), lowered.complete)
            return lowered
        lowered = self._lower(value, at, {}, depth)
        return dict(_unpacked(binding.target, lowered)).get(name, UNKNOWN)

    def _grown_list(self, display: ast.List, name: str, at: NodeAt, function: Scope, depth: int) -> Expr:
        """A list bound to ``name`` by ``display`` (``layers = []``) with what the function's ``append``,
        ``insert`` and ``extend`` calls on the name add to it (``layers.append(Block(i))`` in a loop)."""
        items = [self._display_item(e, at, {}, depth) for e in display.elts[:MAX_OPTIONS]]
        for grown_at, call in self._function_names(function).growths.get(name, ())[:MAX_OPTIONS]:
            added = self._lower(call.args[-1], grown_at, {}, depth)
            items.append(exprs.Item(added) if call.func.attr == "extend" else added)  # type: ignore[attr-defined]
        return exprs.Items(tuple(items))

    def _element(self, iterable: ast.expr, at: NodeAt, env: Mapping[str, Expr], depth: int) -> Expr:
        """One element of what a ``for`` loop or a comprehension iterates over (``enumerate``, ``zip``,
        ``reversed`` and ``named_modules()``-style pairs seen through)."""
        if isinstance(iterable, ast.Call) and iterable.args and isinstance(iterable.func, ast.Name):
            name = iterable.func.id
            if not self._is_bound(name, at):
                if name in ("reversed", "list", "tuple", "sorted", "iter", "set"):
                    return self._element(iterable.args[0], at, env, depth)
                if name == "enumerate":
                    return exprs.Items((exprs.Const("int"), self._element(iterable.args[0], at, env, depth)))
                if name == "zip":
                    return exprs.Items(tuple(self._element(a, at, env, depth) for a in iterable.args))
        if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Attribute) and not iterable.args:
            method = iterable.func.attr
            pairs = {"named_modules": "modules", "named_children": "children", "items": "values"}
            if method in pairs:
                receiver = self._lower(iterable.func.value, at, env, depth)
                values = exprs.Item(exprs.Call(exprs.Attr(receiver, pairs[method])))
                return exprs.Items((UNKNOWN, values))
        return exprs.Item(self._lower(iterable, at, env, depth))

    def _narrowed(
        self,
        guards: IsinstanceGuards,
        name: str,
        position: Position,
        base: Callable[[], Expr],
        lower: Callable[[ast.expr], Expr],
    ) -> Expr | None:
        """An instance of the classes an ``isinstance(name, ...)`` test (or a test of its class's name) around (or
        just before) the use admits, out of what ``base()`` says the name is; ``lower`` lowers the names."""
        for statement, classes, negated, names in guards.get(name, ()):
            if names is not None:
                if _inside(statement.body, position):
                    return exprs.NamedInstanceOf(lower(names), base())
                continue
            excluded = False
            if negated and _inside(statement.body, position) and _plain_isinstance(statement.test):
                excluded = True  # `if not isinstance(t, Transform): t = Wrap(t)`: here it is no Transform
            elif negated:
                # `if not isinstance(m, Block): continue` above the use, in the same loop body
                jumps = statement.body and isinstance(statement.body[-1], ast.Continue | ast.Return)
                if not jumps or not (statement.end_lineno or 0) < position[0]:
                    continue
            elif not _inside(statement.body, position):
                continue
            refs = tuple(r for r in (self.ctx.ref(c) for c in classes) if r is not None)
            if refs:
                return exprs.InstanceOf(refs, base(), excluded)
        return None

    # -- names ---------------------------------------------------------------------------------------------------
    def _ref(self, node: ast.Attribute, at: NodeAt) -> exprs.Ref | None:
        """The import or definition a dotted name refers to, unless its root is a local variable."""
        root: ast.AST = node
        while isinstance(root, ast.Attribute):
            root = root.value
        if not isinstance(root, ast.Name) or self._is_local(root.id, at):
            return None
        return self.ctx.ref(node, at.scope)

    def _is_local(self, name: str, at: NodeAt) -> bool:
        function = at.scope.function
        while function is not None:
            names = self._function_names(function)
            if name in names.declared_global:
                return False
            if name in names.bindings or name in names.params:
                return True
            function = function.parent.function if function.parent is not None else None
        return False

    def is_global(self, name: str, at: NodeAt) -> bool:
        """``name``, bound in the function of ``at``, is declared ``global`` there."""
        function = at.scope.function
        return function is not None and name in self._function_names(function).declared_global

    def _is_bound(self, name: str, at: NodeAt) -> bool:
        """``name`` is bound by the file (a builtin's name reused), in the function or at module level."""
        return self._is_local(name, at) or name in self.ctx.defined_names or name in self.ctx.aliases

    def is_self(self, name: str, at: NodeAt) -> bool:
        """``name`` is the first parameter of the method ``at`` is in."""
        function = at.scope.function
        if function is None or function.class_name is None:
            return False
        node = function.node
        assert isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        positional = [*node.args.posonlyargs, *node.args.args]
        return bool(positional) and positional[0].arg == name

    def _module_guards(self) -> IsinstanceGuards:
        """The ``isinstance`` tests of module-level code (``for m in model.modules(): if isinstance(m, Block): ...``
        in a script)."""
        if self._module_isinstance is None:
            tests = (at.node for at in self.ctx.nodes(ast.If) if at.scope.function is None)
            self._module_isinstance = _isinstance_guards(
                n for n in tests if isinstance(n, ast.If) and _tests_type(n.test)
            )
        return self._module_isinstance

    def _function_names(self, function: Scope) -> _FunctionNames:
        if self._functions is None:
            self._functions = self._index_functions()
        found = self._functions.get(id(function.node))
        if found is None:
            found = self._functions[id(function.node)] = _FunctionNames(function, {}, [])
        return found

    def _index_functions(self) -> dict[int, _FunctionNames]:
        """Every binding statement of the file, filed under its function (one pass over the recorded nodes)."""
        bindings: dict[int, dict[str, list[_Binding]]] = {}
        guards: dict[int, list[ast.If]] = {}
        scopes: dict[int, Scope] = {}
        declared: dict[int, tuple[set[str], set[str]]] = {}

        def file(at: NodeAt, targets: Iterable[ast.expr]) -> None:
            function = at.scope.function
            if function is None:
                return
            scopes[id(function.node)] = function
            table = bindings.setdefault(id(function.node), {})
            node = at.node
            position = _binds_at(node)
            for target in targets:
                for name in _target_names(target):
                    table.setdefault(name.id, []).append(_Binding(position, at.path, node, target))

        ctx = self.ctx
        for kind in (ast.Assign, ast.AnnAssign, ast.AugAssign):
            for at in ctx.nodes(kind):
                node = at.node
                file(at, node.targets if isinstance(node, ast.Assign) else [node.target])  # type: ignore[attr-defined]
        for at in ctx.nodes(ast.For, ast.AsyncFor):
            file(at, [at.node.target])  # type: ignore[attr-defined]
        for at in ctx.nodes(ast.With, ast.AsyncWith):
            file(at, [i.optional_vars for i in at.node.items if i.optional_vars is not None])  # type: ignore[attr-defined]
        for at in ctx.nodes(ast.Global, ast.Nonlocal):
            function = at.scope.function
            if function is not None:
                scopes[id(function.node)] = function
                pair = declared.setdefault(id(function.node), (set(), set()))
                pair[0 if isinstance(at.node, ast.Global) else 1].update(at.node.names)  # type: ignore[attr-defined]
        growths: dict[int, dict[str, list[tuple[NodeAt, ast.Call]]]] = {}
        for at in ctx.nodes(ast.Call):
            function = at.scope.function
            call = at.node
            assert isinstance(call, ast.Call)
            func = call.func
            if (
                function is not None
                and isinstance(func, ast.Attribute)
                and func.attr in LIST_GROWERS
                and isinstance(func.value, ast.Name)
                and len(call.args) == LIST_GROWERS[func.attr]
            ):
                scopes[id(function.node)] = function
                growths.setdefault(id(function.node), {}).setdefault(func.value.id, []).append((at, call))
        for at in ctx.nodes(ast.If):
            function = at.scope.function
            node = at.node
            assert isinstance(node, ast.If)
            if function is not None and _tests_type(node.test):
                scopes[id(function.node)] = function
                guards.setdefault(id(function.node), []).append(node)
        tables: dict[int, _FunctionNames] = {}
        for key, scope in scopes.items():
            names = _FunctionNames(scope, bindings.get(key, {}), guards.get(key, []))
            names.growths = growths.get(key, {})
            if key in declared:
                names.declared_global, names.declared_nonlocal = declared[key]
            tables[key] = names
        return tables


def _one_of(options: Iterable[Expr]) -> Expr:
    found: list[Expr] = []
    for option in options:
        for inner in option.options if isinstance(option, exprs.OneOf) else (option,):
            if inner not in found:
                found.append(inner)
    if not found:
        return UNKNOWN
    if len(found) == 1:
        return found[0]
    return exprs.OneOf(tuple(found[:MAX_OPTIONS]))


def _unpacked(target: ast.AST, value: Expr) -> list[tuple[str, Expr]]:
    """(name, value) for each name a target binds: ``a`` gets ``value``; ``a, b`` get the elements of ``value``
    (position by position for a display of the same length, else any element)."""
    if isinstance(target, ast.Name):
        return [(target.id, value)]
    if isinstance(target, ast.Starred):
        return _unpacked(target.value, value)
    if isinstance(target, ast.Tuple | ast.List):
        found: list[tuple[str, Expr]] = []
        if isinstance(value, exprs.Items) and len(value.items) == len(target.elts):
            for element, item in zip(target.elts, value.items, strict=True):
                found.extend(_unpacked(element, item))
            return found
        starred = any(isinstance(e, ast.Starred) for e in target.elts)
        for position, element in enumerate(target.elts):
            found.extend(_unpacked(element, exprs.Item(value, -1 if starred else position)))
        return found
    return []


def _complete(node: ast.Call) -> bool:
    """Every argument of ``node`` is lowered: no ``*args``, no ``**kwargs``, not cut at ``MAX_OPTIONS``."""
    return (
        len(node.args) <= MAX_OPTIONS
        and not any(isinstance(a, ast.Starred) for a in node.args)
        and all(k.arg is not None for k in node.keywords)
    )


def _binds_at(node: ast.AST) -> Position:
    """Where a statement binds its targets: after its value (``model = torch.compile(model)`` reads the old
    ``model``), after a loop's iterable, after a ``with`` statement's context expressions."""
    if isinstance(node, ast.For | ast.AsyncFor):
        node = node.iter
    elif isinstance(node, ast.With | ast.AsyncWith):
        node = node.items[-1].context_expr
    return (node.end_lineno or node.lineno, node.end_col_offset or 0)  # type: ignore[attr-defined]


def _target_names(target: ast.AST) -> list[ast.Name]:
    if isinstance(target, ast.Name):
        return [target]
    if isinstance(target, ast.Starred):
        return _target_names(target.value)
    if isinstance(target, ast.Tuple | ast.List):
        return [name for element in target.elts for name in _target_names(element)]
    return []


def _tests_type(test: ast.AST) -> bool:
    """``test`` calls ``isinstance`` or reads a class's ``__name__`` (``m.__class__.__name__ in names``)."""
    return any(
        (isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "isinstance")
        or (isinstance(n, ast.Attribute) and n.attr == "__name__")
        for n in ast.walk(test)
    )


def _class_name_tests(test: ast.AST) -> Iterator[tuple[str, ast.expr]]:
    """``(variable, names)`` for ``variable.__class__.__name__ in names`` or ``type(variable).__name__ in names`` in
    ``test``, alone or as an operand of ``and``."""
    parts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
    for part in parts:
        if not (
            isinstance(part, ast.Compare)
            and len(part.ops) == 1
            and isinstance(part.ops[0], ast.In)
            and isinstance(part.left, ast.Attribute)
            and part.left.attr == "__name__"
        ):
            continue
        owner = part.left.value
        if isinstance(owner, ast.Attribute) and owner.attr == "__class__" and isinstance(owner.value, ast.Name):
            yield owner.value.id, part.comparators[0]
        elif (
            isinstance(owner, ast.Call)
            and isinstance(owner.func, ast.Name)
            and owner.func.id == "type"
            and len(owner.args) == 1
            and isinstance(owner.args[0], ast.Name)
        ):
            yield owner.args[0].id, part.comparators[0]


def _isinstance_names(test: ast.AST) -> set[str]:
    """The variables ``isinstance(...)`` calls in ``test`` check."""
    return {
        node.args[0].id
        for node in ast.walk(test)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "isinstance"
        and node.args
        and isinstance(node.args[0], ast.Name)
    }


def _isinstance_classes(test: ast.AST, name: str) -> list[ast.expr]:
    """The class expressions of ``isinstance(name, C)`` / ``isinstance(name, (C, D))`` in ``test``, also as one
    operand of ``and``, and every one of them when all operands of an ``or`` test ``name``."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return next((found for part in test.values if (found := _isinstance_classes(part, name))), [])
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
        each = [_isinstance_classes(part, name) for part in test.values]
        return [c for found in each for c in found] if all(each) else []
    if (
        isinstance(test, ast.Call)
        and isinstance(test.func, ast.Name)
        and test.func.id == "isinstance"
        and len(test.args) == 2
        and isinstance(test.args[0], ast.Name)
        and test.args[0].id == name
    ):
        classes = test.args[1]
        found = list(classes.elts) if isinstance(classes, ast.Tuple) else [classes]
        return [c for c in found if isinstance(c, ast.Name | ast.Attribute)]
    return []


IsinstanceGuards = dict[str, list[tuple[ast.If, list[ast.expr], bool, ast.expr | None]]]
"""Per variable, the ``if`` statements of one scope that test ``isinstance(variable, ...)`` or the name of its class:
the statement, the class expressions, whether the test is negated, and the expression holding the class names (for
``variable.__class__.__name__ in names``, else None)."""


def _isinstance_guards(statements: Iterable[ast.If]) -> IsinstanceGuards:
    found: IsinstanceGuards = {}
    for statement in statements:
        test, negated = statement.test, False
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            test, negated = test.operand, True
        for tested in _isinstance_names(test):
            classes = _isinstance_classes(test, tested)
            if classes:
                found.setdefault(tested, []).append((statement, classes, negated, None))
        if not negated:
            for tested, names in _class_name_tests(test):
                found.setdefault(tested, []).append((statement, [], False, names))
    return found


def _plain_isinstance(test: ast.expr) -> bool:
    """``not isinstance(x, C)`` alone: inside the ``if`` body, ``x`` is known not to be a ``C`` (under
    ``not (isinstance(x, C) and ready)`` it may be one)."""
    return isinstance(test, ast.UnaryOp) and isinstance(test.operand, ast.Call)


def _inside(body: list[ast.stmt], position: Position) -> bool:
    if not body:
        return False
    first, last = body[0], body[-1]
    return (first.lineno, first.col_offset) <= position and position[0] <= (last.end_lineno or last.lineno)


def _in_value(statement: ast.AST, position: Position) -> bool:
    """``position`` lies in the value the assignment ``statement`` evaluates before it binds its targets: the
    ``update`` read by ``update = compile_with_warmup(update)`` is the earlier binding, not this one."""
    value = getattr(statement, "value", None) if isinstance(statement, ast.Assign | ast.AnnAssign) else None
    if value is None or value.end_lineno is None or value.end_col_offset is None:
        return False
    return (value.lineno, value.col_offset) <= position <= (value.end_lineno, value.end_col_offset)
