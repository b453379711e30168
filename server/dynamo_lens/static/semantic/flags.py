"""Which values an instance's configuration flag takes: ``self.cache_labels`` set in ``__init__`` from a constructor
argument and never changed afterwards.

Code under ``if self.cache_labels:`` runs only in the instances built with a true value. The scan knows the values
that the class's default and the workspace's constructions pass as literals; a requirement none of those known
values meets is *undecided*: whether the code runs depends on arguments the scan cannot read (a config field, a
helper's result), so the checks that report it say so at hint level.

The same holds of code under a test of a constructor parameter in ``__init__`` itself (``if compile_config is not
None:``) for one object: :func:`built_to_meet` tells whether the constructions that built it (a ``Trainer(...)``,
returned by the helpers that made it) can pass the test.
"""

from __future__ import annotations

from dynamo_lens.static import exprs
from dynamo_lens.static.context import HASATTR, SELF_FLAG
from dynamo_lens.static.semantic.evaluate import ClassValue, FunctionValue, Instance, MethodValue
from dynamo_lens.static.semantic.index import ClassKey, WorkspaceIndex
from dynamo_lens.static.summary import CallSite, CompileSite, MethodSummary

UNREAD = None
"""A value of the flag the scan cannot read."""
UNDECIDED = (
    " (a hint: this runs only when `self.{flag}` is {wanted}, and no construction of the class the scan can read "
    "makes it so)"
)
"""Appended to a finding whose code runs only under a flag no known instance sets."""


def undecided_flag(index: WorkspaceIndex, cls: ClassKey, requires: tuple[tuple[str, str, bool], ...]) -> str | None:
    """:data:`UNDECIDED` filled in for the first ``self.<flag>`` requirement of ``requires`` that no value known for
    instances of ``cls`` meets, or None when each can hold (or is not a configuration flag)."""
    for name, kind, expected in requires:
        if not name.startswith(SELF_FLAG) or kind == HASATTR:
            continue
        flag = name.removeprefix(SELF_FLAG)
        values = flag_values(index, cls, flag)
        if values is None:
            continue  # not a configuration flag: another check decides
        if not any(value is not UNREAD and exprs.holds(value, kind) == expected for value in values):
            wanted = {("truth", True): "true", ("truth", False): "false", ("none", True): "None"}
            return UNDECIDED.format(flag=flag, wanted=wanted.get((kind, expected), "not None"))
    return None


def flag_values(index: WorkspaceIndex, cls: ClassKey, flag: str) -> frozenset[str | None] | None:
    """The literal values (``repr``) instances of ``cls`` can hold in ``flag``, with :data:`UNREAD` for a value the
    scan cannot read; None when ``flag`` is not a configuration flag: set in ``__init__`` from a literal or from a
    constructor parameter, and assigned nowhere else in the class."""
    return index.memo(("flags.flag_values", cls, flag), lambda: _flag_values(index, cls, flag))


def _flag_values(index: WorkspaceIndex, cls: ClassKey, flag: str) -> frozenset[str | None] | None:
    found = index.init_attr(cls, flag)
    if found is None:
        return None
    owner, init = found
    summary = index.class_summary(owner)
    if summary is None or _assigned_after_init(summary.methods, flag):
        return None
    literal = exprs.plain_literal(init.value_text)
    if literal is not None:
        return frozenset({literal})
    constructor = summary.method("__init__")
    if constructor is None or init.value_text not in constructor.params[1:] + tuple(n for n, _ in constructor.defaults):
        return None
    param = init.value_text
    values: set[str | None] = set()
    default = dict(constructor.defaults).get(param)
    constructions = list(_constructions(index, cls))
    if not constructions or index.classes.subclasses(cls) or owner != cls:
        values.add(UNREAD)  # built where the scan does not see it (a registry, a config, a subclass's super call)
    for call in constructions:
        values.add(_passed(call, constructor.params, param, default))
    return frozenset(values)


def _assigned_after_init(methods: tuple[MethodSummary, ...], flag: str) -> bool:
    return any(
        method.name != "__init__"
        and any(e.attr == flag and e.kind in ("write", "aug", "setattr") for e in method.events)
        for method in methods
    )


def _constructions(index: WorkspaceIndex, cls: ClassKey) -> list[CallSite]:
    """The calls of the workspace that build ``cls`` by its name."""
    target = ClassValue(cls)
    return [
        call
        for call, path in index.evaluator.callers(cls[1].rpartition(".")[2])
        if call.name and target in index.evaluator.evaluate(call.func, path)
    ]


MAX_HOPS = 4
"""How many helpers' returns :func:`built_to_meet` follows back to the construction of an object."""


def built_to_meet(index: WorkspaceIndex, site: CompileSite, expr: exprs.Expr, path: str) -> bool:
    """Whether the object ``expr`` (of ``path``) holds can be one that ``site``, made in a constructor under tests of
    its parameters (``site.requires``), compiled. Not when an object it reads an attribute of (``trainer`` in
    ``trainer.state.model``) is an instance of the constructor's class whose every construction is a call of the
    workspace that passes (or leaves at its default) a literal failing a test (``Trainer(model=...)`` never runs
    ``if compile_config is not None:``), nor when it reads the attributes the site's target reads of the instance
    (``state.model`` for ``self.state.model``) from an object other constructions built (a test's own
    ``State(...)``, not the one ``Trainer.__init__`` builds). True when the scan cannot tell."""
    cls = (site.span.path, site.scope.rpartition(".")[0])
    found = _instance_of(index, cls, expr, path)
    if found is None:
        return not _built_apart(index, site, expr, path)
    calls = _constructions_of(index, found, path, MAX_HOPS)
    return calls is None or any(_may_meet(index, cls, site.requires, call, at) for call, at in calls)


def built_here(index: WorkspaceIndex, expr: exprs.Expr, path: str) -> bool:
    """Every object ``expr`` (of ``path``) can hold is one a construction of a class makes right there, or that the
    helpers it calls construct and return: a fresh object, not one received or shared."""
    return _constructions_of(index, expr, path, MAX_HOPS) is not None


def _built_apart(index: WorkspaceIndex, site: CompileSite, expr: exprs.Expr, path: str) -> bool:
    """``expr`` (of ``path``) reads the last attributes ``site``'s target reads, and on the way an object that other
    constructions built than those of the target's object at that place."""
    target = site.target
    while True:
        target, expr = exprs.without_identity(target), exprs.without_identity(expr)
        if not (isinstance(target, exprs.Attr) and isinstance(expr, exprs.Attr) and target.attr == expr.attr):
            return False
        target, expr = target.value, expr.value
        ours = _constructions_of(index, target, site.span.path, MAX_HOPS)
        theirs = _constructions_of(index, expr, path, MAX_HOPS)
        if ours is not None and theirs is not None and not set(ours) & set(theirs):
            return True


def _instance_of(index: WorkspaceIndex, cls: ClassKey, expr: exprs.Expr, path: str) -> exprs.Expr | None:
    """``expr``, or the first object whose attribute it reads, that can be an instance of ``cls`` (or a subclass)."""
    classes = {cls, *index.classes.subclasses(cls)}
    while True:
        if any(isinstance(v, Instance) and v.cls in classes for v in index.evaluator.evaluate(expr, path)):
            return expr
        inner = exprs.without_identity(expr)
        if not isinstance(inner, exprs.Attr):
            return None
        expr = inner.value


def _constructions_of(
    index: WorkspaceIndex, expr: exprs.Expr, path: str, hops: int
) -> list[tuple[exprs.Call, str]] | None:
    """The calls of classes that build the object ``expr`` (of ``path``) holds, with their files: a construction
    itself, or those a function returns (``trainer, loader = make_trainer(...)``); None when it may come from
    anything else (a parameter, an attribute, a call the scan cannot follow)."""
    expr = exprs.without_identity(expr)
    if isinstance(expr, exprs.OneOf):
        return _all_of([_constructions_of(index, option, path, hops) for option in expr.options])
    if isinstance(expr, exprs.Call):
        callees = index.evaluator.evaluate(expr.func, path)
        if callees and all(isinstance(c, ClassValue) for c in callees):
            return [(expr, path)]
        return _through_returns(index, expr, path, hops, -1)
    if isinstance(expr, exprs.Global):
        bindings = index.files.bindings(path, expr.name)
        return _all_of([_constructions_of(index, b.value, path, hops - 1) for b in bindings]) if hops > 0 else None
    if isinstance(expr, exprs.Attr) and isinstance(expr.value, exprs.Param) and expr.value.index == 0:
        owner = (path, expr.value.function.rpartition(".")[0])
        return _assigned(index, owner, expr.attr, hops) if index.class_summary(owner) is not None else None
    inner = exprs.without_identity(expr.value) if isinstance(expr, exprs.Item) else None
    if isinstance(inner, exprs.Call) and isinstance(expr, exprs.Item) and expr.index >= 0:
        return _through_returns(index, inner, path, hops, expr.index)
    return None


def _all_of(found: list[list[tuple[exprs.Call, str]] | None]) -> list[tuple[exprs.Call, str]] | None:
    """The constructions of every one of several ways to an object, or None when one of them is not known."""
    if not found or any(calls is None for calls in found):
        return None
    return [call for calls in found if calls is not None for call in calls]


def _assigned(index: WorkspaceIndex, cls: ClassKey, name: str, hops: int) -> list[tuple[exprs.Call, str]] | None:
    """:func:`_constructions_of` what the methods of ``cls``, its bases and its subclasses assign to ``self.<name>``
    (None when a base is unknown or nothing is assigned)."""
    bases, known = index.mro(cls)
    if not known or hops <= 0:
        return None
    summaries = [(owner, index.class_summary(owner)) for owner in (*bases, *index.classes.subclasses(cls))]
    return _all_of(
        [
            _constructions_of(index, value, owner[0], hops - 1)
            for owner, summary in summaries
            for attr, value in (summary.attr_values if summary is not None else ())
            if attr == name
        ]
    )


def _through_returns(
    index: WorkspaceIndex, call: exprs.Call, path: str, hops: int, position: int
) -> list[tuple[exprs.Call, str]] | None:
    """:func:`_constructions_of` what the one function or method ``call`` runs returns (the item at ``position`` of
    a returned tuple, unless -1)."""
    callees = index.evaluator.evaluate(call.func, path)
    callee = next(iter(callees)) if len(callees) == 1 and hops > 0 else None
    if isinstance(callee, FunctionValue) and (function := index.files.function_summary(callee.key)) is not None:
        returns, at = function.returns, callee.key[0]
    elif isinstance(callee, MethodValue) and (method := index.find_method(callee.cls, callee.name)) is not None:
        returns, at = method[1].returns, method[0][0]
    else:
        return None
    found: list[list[tuple[exprs.Call, str]] | None] = []
    for returned in returns:
        value = returned.value if isinstance(returned, exprs.Given) else returned
        if position >= 0:
            value = exprs.without_identity(value)
            if not isinstance(value, exprs.Items) or position >= len(value.items):
                return None
            value = value.items[position]
        found.append(_constructions_of(index, value, at, hops - 1))
    return _all_of(found)


def _may_meet(
    index: WorkspaceIndex, cls: ClassKey, requires: tuple[exprs.Requirement, ...], call: exprs.Call, path: str
) -> bool:
    """The construction ``call`` (of ``path``) may pass arguments that meet ``requires`` of ``cls``'s
    ``__init__``: it builds a class whose ``__init__`` is another, passes ``**kwargs``, or passes for each a literal
    that meets it or a value the scan cannot read."""
    if not call.complete:
        return True
    for built in index.evaluator.evaluate(call.func, path):
        found = index.find_method(built.cls, "__init__") if isinstance(built, ClassValue) else None
        if found is None or found[0] != cls:
            return True
        constructor = found[1]
        defaults = dict(constructor.defaults)
        for param, kind, expected in requires:
            value = _passed(call, constructor.params, param, defaults.get(param))
            if value is not UNREAD and exprs.holds(value, kind) != expected:
                break
        else:
            return True
    return False


def _passed(call: CallSite | exprs.Call, params: tuple[str, ...], param: str, default: str | None) -> str | None:
    """The literal ``call`` passes for ``param`` (the default when it passes none), :data:`UNREAD` otherwise."""
    keywords = dict(call.keywords)
    if param in keywords:
        argument = keywords[param]
    else:
        position = params.index(param) - 1 if param in params else -1
        if not 0 <= position < len(call.args):
            return default if default is not None else UNREAD
        argument = call.args[position]
    return argument.value if isinstance(argument, exprs.Const) and argument.value else UNREAD
