"""Find every compile site of one file (DL001) and say, as a reference, what it compiles.

Forms: ``torch.compile(f, ...)``, ``@torch.compile``, ``@torch.compile(...)``, ``model.compile(...)``,
``torch._dynamo.optimize(...)(f)`` (and as a decorator), a ``functools.partial(torch.compile, ...)`` alias called on
``f``, all through import aliases and ``compiler = torch.compile``. The target stays a reference (a local function,
a method, an instance of a class named by a local or imported name); ``link`` resolves it across files.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from functools import partial

from dynamo_lens.static.context import DYNAMO_OPTIMIZE, FileContext, NodeAt, Scope
from dynamo_lens.static.summary import LOCAL, CompileForm, CompileSite, CompileTarget, InstanceBinding, Ref

_COMPILE_NAMES = ("compile", "optimize")
_KERAS_COMPILE_KEYWORDS = frozenset({"optimizer", "loss", "metrics", "loss_weights"})


def find_compile_sites(
    ctx: FileContext,
    decorated: list[tuple[ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef, Scope]],
    instances: tuple[InstanceBinding, ...],
) -> tuple[CompileSite, ...]:
    if not ctx.aliases and not ctx.compile_partials:
        return ()  # nothing in this file names torch: no compile site can be spelled
    finder = _Finder(ctx, instances)
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
    return tuple(sites)


class _Finder:
    def __init__(self, ctx: FileContext, instances: tuple[InstanceBinding, ...]) -> None:
        self.ctx = ctx
        self.instances: dict[tuple[str, str], list[InstanceBinding]] = {}
        for binding in instances:
            self.instances.setdefault((binding.scope, binding.name), []).append(binding)

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
        if isinstance(definition, ast.ClassDef):
            target = CompileTarget("class", Ref(qualname, LOCAL))
        elif scope.kind == "class":
            target = CompileTarget("method", Ref(scope.qualname, LOCAL), definition.name)
        else:
            target = CompileTarget("function", Ref(qualname, LOCAL))
        keywords = decorator.keywords if isinstance(decorator, ast.Call) else []
        return CompileSite(
            span=self.ctx.span(decorator),
            form=form,
            target=target,
            scope=scope.qualname,
            names=(definition.name,),
            options=self._options(keywords),
            in_loop=False,
        )

    def call_site(self, call: ast.Call, at: NodeAt) -> CompileSite | None:
        ctx = self.ctx
        func = call.func
        form = self.compiles(func)
        if form is not None:
            if not call.args:
                return None  # torch.compile(mode=...) returns a decorator; the call that applies it is the site
            target, names = self.target(call.args[0], at.scope)
        elif isinstance(func, ast.Attribute) and func.attr == "compile" and self._is_module_compile(call):
            form = "method"
            target, names = self.target(func.value, at.scope)
        else:
            return None
        keywords = list(call.keywords)
        if form == "optimize" and isinstance(func, ast.Call):
            keywords = [*func.keywords, *keywords]
        assigned = ctx.assigned_names.get(id(call), ())
        return CompileSite(
            span=ctx.span(call),
            form=form,
            target=target,
            scope=at.scope.qualname,
            names=tuple(dict.fromkeys((*assigned, *names))),
            options=self._options(keywords),
            in_loop=at.loop_depth > 0,
        )

    def _is_module_compile(self, call: ast.Call) -> bool:
        """``model.compile(...)`` is ``nn.Module.compile``; ``re.compile(p)``, Keras' ``compile(optimizer=...)`` not."""
        func = call.func
        if call.args or not isinstance(func, ast.Attribute):
            return False
        if any(k.arg in _KERAS_COMPILE_KEYWORDS for k in call.keywords):
            return False
        receiver = self.ctx.ref(func.value)
        return receiver is None or receiver.is_local  # an imported module's compile() is something else

    def target(self, expr: ast.AST, scope: Scope) -> tuple[CompileTarget, tuple[str, ...]]:
        """What ``expr`` (the compiled argument, or the receiver of ``.compile()``) refers to, and its plain name."""
        ctx = self.ctx
        if isinstance(expr, ast.Name):
            binding = self._instance(scope, expr)
            if binding is not None:
                return CompileTarget("instance", binding.callee), (expr.id,)
            ref = ctx.ref(expr, scope)
            if ref is None:  # a parameter or a name bound by something we do not follow
                return CompileTarget("unknown", None, text=expr.id), (expr.id,)
            if ref.is_local:
                return CompileTarget("function", ref), ()
            return CompileTarget("name", ref), ()
        if isinstance(expr, ast.Call):
            ref = ctx.ref(expr.func, scope) if isinstance(expr.func, ast.Name | ast.Attribute) else None
            if ref is not None:
                return CompileTarget("instance", ref), ()
            return CompileTarget("unknown", None, text=ctx.source(expr)), ()
        if isinstance(expr, ast.Attribute):
            owner = expr.value
            class_name = scope.function.class_name if scope.function is not None else None
            if isinstance(owner, ast.Name) and class_name is not None and owner.id == _self_name(scope):
                return CompileTarget("self_attr", Ref(class_name, LOCAL), expr.attr), ()
            if isinstance(owner, ast.Name):
                binding = self._instance(scope, owner)
                if binding is not None:
                    return CompileTarget("method", binding.callee, expr.attr), (owner.id,)
            ref = ctx.ref(expr, scope)
            if ref is not None:
                return CompileTarget("name", ref), ()
        return CompileTarget("unknown", None, text=ctx.source(expr)), ()

    def _instance(self, scope: Scope, name: ast.Name) -> InstanceBinding | None:
        """The latest ``name = Callee(...)`` before ``name`` in its function scope, else at module level."""
        line = name.lineno
        function = scope.function
        for key in ((function.qualname if function is not None else ""), ""):
            bindings = self.instances.get((key, name.id))
            if bindings:
                before = [b for b in bindings if b.span.line <= line]
                return (before or bindings)[-1]
        return None

    def _options(self, keywords: list[ast.keyword]) -> tuple[tuple[str, str], ...]:
        return tuple((k.arg, self.ctx.source(k.value)) for k in keywords if k.arg is not None)


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


def _self_name(scope: Scope) -> str | None:
    function = scope.function
    if function is None or not isinstance(function.node, ast.FunctionDef | ast.AsyncFunctionDef):
        return None
    args = [*function.node.args.posonlyargs, *function.node.args.args]
    return args[0].arg if args else None
