"""Find every compile site of one file (DL001) and say, as a reference, what it compiles.

Forms: ``torch.compile(f, ...)``, ``@torch.compile``, ``@torch.compile(...)``, ``model.compile(...)``,
``torch._dynamo.optimize(...)(f)`` (and as a decorator), a ``functools.partial(torch.compile, ...)`` alias called on
``f``, all through import aliases and ``compiler = torch.compile``. The target stays a reference (a local function,
a method, an instance of a class named by a local or imported name); ``link`` resolves it across files.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from dataclasses import replace
from functools import partial

from dynamo_lens.static import exprs
from dynamo_lens.static.context import DYNAMO_OPTIMIZE, SELF_FLAG, FileContext, NodeAt, Scope
from dynamo_lens.static.exprs import Expr
from dynamo_lens.static.semantic.lowering import Lowering
from dynamo_lens.static.summary import LOCAL, CompileForm, CompileSite, Ref

_COMPILE_NAMES = ("compile", "optimize")
_KERAS_COMPILE_KEYWORDS = frozenset({"optimizer", "loss", "metrics", "loss_weights"})


def find_compile_sites(
    ctx: FileContext,
    decorated: list[tuple[ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef, Scope]],
    lowering: Lowering,
) -> tuple[CompileSite, ...]:
    if not ctx.aliases and not ctx.compile_partials:
        return ()  # nothing in this file names torch: no compile site can be spelled
    finder = _Finder(ctx, lowering)
    sites: list[CompileSite] = []
    handled: set[int] = set()
    for definition, scope in decorated:
        for decorator in definition.decorator_list:
            form = finder.decorator_form(decorator)
            if form is None:
                continue
            handled.add(id(decorator))
            if isinstance(decorator, ast.Call):
                handled.add(id(decorator.func))
            sites.append(finder.decorator_site(decorator, form, definition, scope))
    spellings = frozenset(ctx.compile_partials) | {
        n for n, r in ctx.aliases.items() if r.dotted.endswith(_COMPILE_NAMES)
    }
    spelled = ctx.per_block("compile_calls", partial(_compile_calls, spellings), key=spellings)
    for at in (at for calls in spelled for at in calls):
        call = at.node
        if id(call) in handled or not isinstance(call, ast.Call):
            continue
        site = finder.call_site(call, at)
        if site is not None:
            sites.append(site)
    sites.sort(key=lambda s: (s.span.line, s.span.column))
    return _marked_called_once(ctx, sites)


def _marked_called_once(ctx: FileContext, sites: list[CompileSite]) -> tuple[CompileSite, ...]:
    """``sites`` with :attr:`CompileSite.called_once` set where it holds."""
    inline = {
        ctx.span(call.func)
        for at in ctx.nodes(ast.Call)
        if isinstance(call := at.node, ast.Call) and isinstance(call.func, ast.Call)
    }
    if not inline:
        return tuple(sites)
    targets: dict[tuple[str, str], int] = {}
    for site in sites:
        key = (site.scope, site.target_text)
        targets[key] = targets.get(key, 0) + 1
    return tuple(
        replace(site, called_once=True)
        if site.span in inline and targets[(site.scope, site.target_text)] == 1 and _compiles_a_local(site)
        else site
        for site in sites
    )


def _compiles_a_local(site: CompileSite) -> bool:
    """``torch.compile(<local of the function>)`` outside loops."""
    if site.form != "call" or site.in_loop or not site.scope or site.module_names:
        return False
    target = site.target
    options = target.options if isinstance(target, exprs.OneOf) else (target,)
    return any(isinstance(option, exprs.Local) and option.function == site.scope for option in options)


class _Finder:
    def __init__(self, ctx: FileContext, lowering: Lowering) -> None:
        self.ctx = ctx
        self.lowering = lowering

    # -- recognising the forms -----------------------------------------------------------------------------------
    def compiles(self, func: ast.AST) -> CompileForm | None:
        """The form of a call whose callee is ``func``, if calling it compiles its first argument."""
        ctx = self.ctx
        if isinstance(func, ast.Name) and func.id in ctx.compile_partials:
            return "partial"
        if isinstance(func, ast.Call) and ctx.resolve(func.func) in DYNAMO_OPTIMIZE:
            return "optimize"
        if isinstance(func, ast.Name | ast.Attribute) and ctx.is_torch_compile(func):
            return "call"
        return None

    def decorator_form(self, decorator: ast.expr) -> CompileForm | None:
        if isinstance(decorator, ast.Call):
            if self.ctx.resolve(decorator.func) in DYNAMO_OPTIMIZE:
                return "optimize"  # @torch._dynamo.optimize("eager")
            if not decorator.args and self.ctx.is_torch_compile(decorator.func):
                return "decorator"  # @torch.compile(mode=...)
            return None
        if isinstance(decorator, ast.Name | ast.Attribute) and self.ctx.is_torch_compile(decorator):
            return "decorator"
        if isinstance(decorator, ast.Name) and decorator.id in self.ctx.compile_partials:
            return "partial"
        return None

    # -- sites ---------------------------------------------------------------------------------------------------
    def decorator_site(
        self,
        decorator: ast.expr,
        form: CompileForm,
        definition: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef,
        scope: Scope,
    ) -> CompileSite:
        qualname = f"{scope.qualname}.{definition.name}" if scope.qualname else definition.name
        target: Expr
        if scope.kind == "class" and not isinstance(definition, ast.ClassDef):
            target = exprs.Attr(exprs.Named(Ref(scope.qualname, LOCAL)), definition.name)
        else:
            target = exprs.Named(Ref(qualname, LOCAL))
        keywords = decorator.keywords if isinstance(decorator, ast.Call) else []
        return CompileSite(
            span=self.ctx.span(decorator),
            form=form,
            target=target,
            target_text=qualname,
            scope=scope.qualname,
            names=(definition.name,),
            module_names=(definition.name,) if scope.kind == "module" else (),
            options=self._options(keywords),
            guard_filter=self._guard_filter(keywords),
            in_loop=False,
        )

    def call_site(self, call: ast.Call, at: NodeAt) -> CompileSite | None:
        ctx = self.ctx
        func = call.func
        form = self.compiles(func)
        if form is not None:
            if not call.args:
                return None  # torch.compile(mode=...) returns a decorator; the call that applies it is the site
            compiled = call.args[0]
        elif isinstance(func, ast.Attribute) and func.attr == "compile" and self._is_module_compile(call, at):
            form = "method"
            compiled = func.value
        else:
            return None
        keywords = list(call.keywords)
        if form == "optimize" and isinstance(func, ast.Call):
            keywords = [*func.keywords, *keywords]
        assigned = ctx.assigned_names.get(id(call), ())
        names = tuple(dict.fromkeys((*assigned, *self._own_names(compiled, at))))
        in_function = at.scope.function is not None
        module_names = tuple(n for n in names if self.lowering.is_global(n, at)) if in_function else names
        return CompileSite(
            span=ctx.span(call),
            form=form,
            target=self.lowering.value(compiled, at),
            target_text=ctx.source(compiled, 60),
            scope=at.scope.qualname,
            names=names,
            module_names=module_names,
            assigned=assigned,
            options=self._options(keywords),
            guard_filter=self._guard_filter(keywords),
            in_loop=at.loop_depth > 0,
            published=in_function and (bool(module_names) or self._stored_in_module(call, compiled)),
            replaces=self._stored_back(call, compiled),
            requires=tuple(r for r in at.requires if not r[0].startswith(SELF_FLAG)),
            runners=_runners(call, assigned, at.scope),
        )

    def _is_module_compile(self, call: ast.Call, at: NodeAt) -> bool:
        """``model.compile(...)`` is ``nn.Module.compile``; ``re.compile(p)``, Keras' ``compile(optimizer=...)`` not.
        Positional arguments only as the enclosing function's own ``*args`` passed on (``submod.compile(*args,
        **kwargs)`` in a helper that takes torch.compile's arguments), whose keywords the scan cannot see."""
        func = call.func
        if (call.args and not _forwards_own_varargs(call, at)) or not isinstance(func, ast.Attribute):
            return False
        if any(k.arg in _KERAS_COMPILE_KEYWORDS for k in call.keywords):
            return False
        receiver = self.ctx.ref(func.value)
        return receiver is None or receiver.is_local  # an imported module's compile() is something else

    def _stored_in_module(self, call: ast.Call, compiled: ast.expr) -> bool:
        """``mod.f = torch.compile(mod.f)`` with ``mod`` an imported module (or anything imported): the compiled
        callable replaces what every other user of ``mod.f`` calls."""
        for target in self._attributes_assigned(call, compiled):
            if isinstance(target.value, ast.Name):
                ref = self.ctx.ref(target.value)
                if ref is not None and not ref.is_local:
                    return True
        return False

    def _stored_back(self, call: ast.Call, compiled: ast.expr) -> bool:
        """``model.forward = torch.compile(model.forward)``: the result is assigned to the attribute it compiles."""
        text = ast.unparse(compiled)
        return any(ast.unparse(target) == text for target in self._attributes_assigned(call, compiled))

    def _attributes_assigned(self, call: ast.Call, compiled: ast.expr) -> Iterator[ast.Attribute]:
        """The attributes named like ``compiled``'s (``x.f`` for ``torch.compile(mod.f)``) that ``call``'s result is
        assigned to (``<target>.f = torch.compile(mod.f)``)."""
        if not isinstance(compiled, ast.Attribute):
            return
        for statement in self.ctx.attribute_bindings.get(compiled.attr, ()):
            node = statement.node
            if isinstance(node, ast.Assign) and node.value is call:
                yield from (target for target in node.targets if isinstance(target, ast.Attribute))

    def _own_names(self, compiled: ast.AST, at: NodeAt) -> tuple[str, ...]:
        """The plain name that holds the compiled thing's state: ``model`` in ``torch.compile(model)`` or
        ``model.compile()``, ``m`` in ``torch.compile(m.forward)`` (not a function's own name: it is no state)."""
        if isinstance(compiled, ast.Attribute):
            compiled = compiled.value
            if isinstance(compiled, ast.Name) and self.lowering.is_self(compiled.id, at):
                return ()  # `torch.compile(self.loss)`: the attribute's object is compiled, not `self`
        if isinstance(compiled, ast.Name) and not isinstance(self.lowering.value(compiled, at), exprs.Named):
            return (compiled.id,)
        return ()

    def _options(self, keywords: list[ast.keyword]) -> tuple[tuple[str, str], ...]:
        return tuple((k.arg, self.ctx.source(k.value)) for k in keywords if k.arg is not None)

    def _guard_filter(self, keywords: list[ast.keyword]) -> str:
        """The ``guard_filter_fn`` an ``options={...}`` display names: its dotted name, or its source text when the
        name cannot be resolved (a lambda, a local function); ``""`` without one."""
        for keyword in keywords:
            if keyword.arg == "options" and isinstance(keyword.value, ast.Dict):
                for key, value in zip(keyword.value.keys, keyword.value.values, strict=True):
                    if isinstance(key, ast.Constant) and key.value == "guard_filter_fn":
                        return self.ctx.resolve(value) or self.ctx.source(value)
        return ""


def _forwards_own_varargs(call: ast.Call, at: NodeAt) -> bool:
    """Every positional argument of ``call`` is ``*name`` with ``name`` the enclosing function's ``*args``, and every
    ``**`` argument its ``**kwargs``."""
    function = at.scope.function
    node = function.node if function is not None else None
    if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return False
    varargs = node.args.vararg.arg if node.args.vararg is not None else None
    kwargs = node.args.kwarg.arg if node.args.kwarg is not None else None
    return all(
        isinstance(a, ast.Starred) and isinstance(a.value, ast.Name) and a.value.id == varargs for a in call.args
    ) and all(isinstance(k.value, ast.Name) and k.value.id == kwargs for k in call.keywords if k.arg is None)


def _runners(call: ast.Call, assigned: tuple[str, ...], scope: Scope) -> tuple[str, ...]:
    """The methods of the class of method ``scope`` that read back the attribute of ``self`` the compiled callable
    of ``call`` is stored in (see ``CompileSite.runners``)."""
    method, owner = scope.node, scope.parent
    if scope.class_name is None or owner is None or not isinstance(method, ast.FunctionDef | ast.AsyncFunctionDef):
        return ()
    if not method.args.args:
        return ()
    this = method.args.args[0].arg
    keys = {
        key
        for node in ast.walk(method)
        if isinstance(node, ast.Assign)
        and (node.value is call or (isinstance(node.value, ast.Name) and node.value.id in assigned))
        for target in node.targets
        if (key := _self_key(target, this)) is not None
    }
    if not keys or not isinstance(owner.node, ast.ClassDef):
        return ()
    methods = {n.name for n in owner.node.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    if keys & (methods | {"forward", "__call__"}):
        return ()  # `self.forward = torch.compile(self.forward)`: whatever calls the method runs it
    return tuple(
        other.name
        for other in owner.node.body
        if isinstance(other, ast.FunctionDef | ast.AsyncFunctionDef)
        and other is not method
        and other.args.args
        and any(_self_key(node, other.args.args[0].arg) in keys for node in ast.walk(other) if _loads(node))
    )


def _self_key(node: ast.AST, this: str) -> str | None:
    """The attribute of ``this`` that ``node`` names: ``self.x``, ``self.__dict__["x"]``, ``self.__dict__.get("x")``,
    ``getattr(self, "x")``."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == this:
        return node.attr if node.attr != "__dict__" else None
    if isinstance(node, ast.Subscript) and _is_self_dict(node.value, this):
        return _literal(node.slice)
    if isinstance(node, ast.Call) and node.args:
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "get" and _is_self_dict(func.value, this):
            return _literal(node.args[0])
        if isinstance(func, ast.Name) and func.id == "getattr" and len(node.args) >= 2:
            first = node.args[0]
            return _literal(node.args[1]) if isinstance(first, ast.Name) and first.id == this else None
    return None


def _is_self_dict(node: ast.expr, this: str) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and node.attr == "__dict__"
        and isinstance(node.value, ast.Name)
        and node.value.id == this
    )


def _literal(node: ast.expr) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _loads(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) or isinstance(getattr(node, "ctx", None), ast.Load)


def _compile_calls(spellings: frozenset[str], nodes: Mapping[type[ast.AST], list[NodeAt]]) -> list[NodeAt]:
    """The calls of one block that are spelled like a compile (in source order)."""
    return [at for at in nodes.get(ast.Call, ()) if _may_compile(at.node.func, spellings)]  # type: ignore[attr-defined]


def _may_compile(func: ast.expr, spellings: frozenset[str]) -> bool:
    """Cheap syntactic test before resolving names: ``x.compile``, ``x.optimize(...)``, or a name that is an alias
    of ``torch.compile``/``optimize`` or a compile partial."""
    if isinstance(func, ast.Attribute):
        return func.attr in _COMPILE_NAMES
    if isinstance(func, ast.Name):
        return func.id in spellings
    return isinstance(func, ast.Call) and _may_compile(func.func, spellings)
