"""Which values an instance's configuration flag takes: ``self.cache_labels`` set in ``__init__`` from a constructor
argument and never changed afterwards.

Code under ``if self.cache_labels:`` runs only in the instances built with a true value. The scan knows the values
that the class's default and the workspace's constructions pass as literals; a requirement none of those known
values meets is *undecided*: whether the code runs depends on arguments the scan cannot read (a config field, a
helper's result), so the checks that report it say so at hint level.
"""

from __future__ import annotations

from dynamo_lens.static import exprs
from dynamo_lens.static.context import HASATTR, SELF_FLAG
from dynamo_lens.static.semantic.evaluate import ClassValue
from dynamo_lens.static.semantic.index import ClassKey, WorkspaceIndex
from dynamo_lens.static.summary import CallSite, MethodSummary

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


def _passed(call: CallSite, params: tuple[str, ...], param: str, default: str | None) -> str | None:
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
