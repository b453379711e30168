"""Values as one file can describe them: the small expression language of the semantic layer.

``summarize`` lowers the expressions that decide what code is compiled and what it calls (compile targets, callees
and their arguments, what functions return, what ``self.<attr>`` is set to, what module-level names are bound to)
into these plain, picklable nodes. Everything one file knows is already applied: a local variable is replaced by
what was assigned to it (``model = Net().to(device)`` then ``torch.compile(model)`` lowers to a call of ``Net``),
``torch.compile(f)`` and ``functools.partial(f, ...)`` stand for ``f``, methods that return their receiver
(``.to()``, ``.eval()``, ``.cuda()`` ...) vanish. What only the workspace knows stays symbolic: an imported or
defined name (:class:`Named`), a module-level name (:class:`Global`, bound later in the file or read by a function),
a parameter (:class:`Param`, bound by whoever calls the function). ``link`` evaluates them
(``static/semantic/evaluate.py``) into the classes, functions and instances they can be.

:data:`UNKNOWN` is an answer, not a failure: an expression the file cannot describe, about which checks stay silent.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

LOCAL = -1
"""``Ref.level`` of a name defined in the file itself (not imported)."""


ELEMENT_GETTERS = frozenset({"get", "pop", "setdefault"})
"""Methods of a dict (or ``nn.ModuleDict``) whose call returns one of its values."""


@dataclass(frozen=True, slots=True)
class Ref:
    """A name as one file sees it, after import aliases are applied.

    ``level == LOCAL``: ``dotted`` is a qualified name defined in this file (``Model``, ``Outer.Inner``).
    ``level == 0``: an absolute dotted path (``torch.nn.Module``, ``pkg.model.Model``).
    ``level > 0``: relative to the file's package, as in ``from ..model import Model`` (``dotted='model.Model'``).
    """

    dotted: str
    level: int = 0

    @property
    def is_local(self) -> bool:
        return self.level == LOCAL

    @property
    def last(self) -> str:
        return self.dotted.rpartition(".")[2]


@dataclass(frozen=True, slots=True)
class Expr:
    """Base of every node."""


@dataclass(frozen=True, slots=True)
class Unknown(Expr):
    """Something the file cannot describe (a builtin's result, an arithmetic expression, a lambda ...)."""


UNKNOWN = Unknown()


@dataclass(frozen=True, slots=True)
class Const(Expr):
    """A literal (``0``, ``"a"``, ``None``); ``value`` is its ``repr`` (empty when it is long)."""

    kind: ConstantKind
    value: str = ""


@dataclass(frozen=True, slots=True)
class Named(Expr):
    """A class, function or module named through an import or a definition of this file."""

    ref: Ref


@dataclass(frozen=True, slots=True)
class Global(Expr):
    """A module-level name of this file that is not a definition or an import: its bindings (``FileSummary.bindings``)
    decide. ``line``: the latest binding above this line counts (a use at module level); 0: any binding (a use inside
    a function, which runs later)."""

    name: str
    line: int = 0


@dataclass(frozen=True, slots=True)
class Param(Expr):
    """Parameter ``name`` (position ``index``, -1 for keyword-only and ``*args``) of the function or method
    ``function`` (qualified name in this file): whatever its callers pass."""

    function: str
    name: str
    index: int


@dataclass(frozen=True, slots=True)
class Call(Expr):
    """What calling ``func`` returns. Arguments that cannot matter (literals, arithmetic) are :data:`UNKNOWN`."""

    func: Expr
    args: tuple[Expr, ...] = ()
    keywords: tuple[tuple[str, Expr], ...] = ()
    complete: bool = False
    """Every argument the call passes is in ``args`` and ``keywords`` (no ``*args``/``**kwargs``, none left out): a
    parameter it does not name keeps its default."""


@dataclass(frozen=True, slots=True)
class Attr(Expr):
    """``value.attr``."""

    value: Expr
    attr: str


@dataclass(frozen=True, slots=True)
class Item(Expr):
    """An element of ``value``: a subscript (``layers[0]``), a loop variable (``for block in layers``), one name of
    a tuple assignment (``model, transform = build()``: ``index`` 0 and 1; -1 when the position is not known)."""

    value: Expr
    index: int = -1
    key: str = ""
    """For a subscript by a string literal (``setup["ddp"]``): the key, which picks one value of a dict whose keys
    are known."""


@dataclass(frozen=True, slots=True)
class Items(Expr):
    """A list, tuple or dict display, or a comprehension (one item per element expression; dicts: the values)."""

    items: tuple[Expr, ...]
    keys: tuple[str, ...] = ()
    """For a dict whose keys are all string literals (``{"blocks": ...}``, ``dict(wte=...)``): the key of each item."""


@dataclass(frozen=True, slots=True)
class OneOf(Expr):
    """One of several values: the arms of a conditional, the assignments that can reach a use."""

    options: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class InstanceOf(Expr):
    """``value``, known from an ``isinstance`` test that guards the use to be an instance of one of ``classes``
    (``excluded``: known not to be one, in the body of ``if not isinstance(...)``)."""

    classes: tuple[Ref, ...]
    value: Expr
    excluded: bool = False


@dataclass(frozen=True, slots=True)
class NamedInstanceOf(Expr):
    """``value``, known from a test of its class's name that guards the use (``m.__class__.__name__ in names``) to be
    an instance of a workspace class whose name is one of the strings ``names`` holds (a literal list, or a class
    attribute read through ``self``: diffusers' ``_repeated_blocks``)."""

    names: Expr
    value: Expr


@dataclass(frozen=True, slots=True)
class Local(Expr):
    """Which object a local variable holds: the identity of the variable ``name`` of the function ``function``,
    next to what was assigned to it (in a :class:`OneOf`). Two uses of one variable hold the same object even when
    what it is cannot be told (``model = config.instantiate(...)``; ``compile_model(model)``; ``return model``)."""

    function: str
    name: str


@dataclass(frozen=True, slots=True)
class Compiled(Expr):
    """What ``torch.compile(value)`` returns (at ``line``:``column`` of this file): ``value``, wrapped so that calls
    of it run compiled code (calls of ``value`` itself do not)."""

    value: Expr
    line: int
    column: int


Requirement = tuple[str, str, bool]
"""``(param, "truth" | "none", expected)``: a parameter is truthy / None (``expected``) or not (``NodeAt.requires``)."""


@dataclass(frozen=True, slots=True)
class Given(Expr):
    """``value``, returned only when the function's parameters meet ``requires`` (``if ema: return self.ema`` is
    ``Given(self.ema, (("ema", "truth", True),))``): a call that passes a literal contradicting them skips it."""

    value: Expr
    requires: tuple[Requirement, ...]


def plain_literal(text: str) -> str | None:
    """``text`` when it is the ``repr`` of ``True``, ``False``, ``None`` or an int, else None."""
    return text if text in ("True", "False", "None") or text.lstrip("-").isdigit() else None


def holds(literal: str, kind: str) -> bool:
    """Whether the literal ``literal`` (a ``repr``) is truthy (``kind == "truth"``) or is None (``kind == "none"``)."""
    value = ast.literal_eval(literal)
    return value is None if kind == "none" else bool(value)


def refs_in(expr: Expr) -> Iterator[Ref]:
    """Every :class:`Ref` an expression names (what linking may resolve, for change tracking)."""
    pending = [expr]
    while pending:
        node = pending.pop()
        if isinstance(node, Named):
            yield node.ref
        elif isinstance(node, InstanceOf):
            yield from node.classes
            pending.append(node.value)
        elif isinstance(node, NamedInstanceOf):
            pending.extend((node.names, node.value))
        elif isinstance(node, Compiled | Given):
            pending.append(node.value)
        elif isinstance(node, Call):
            pending.append(node.func)
            pending.extend(node.args)
            pending.extend(value for _, value in node.keywords)
        elif isinstance(node, Attr | Item):
            pending.append(node.value)
        elif isinstance(node, Items):
            pending.extend(node.items)
        elif isinstance(node, OneOf):
            pending.extend(node.options)


def without_identity(expr: Expr) -> Expr:
    """``expr`` without the :class:`Local` identity lowering adds to a variable's value (for checks that look at
    what was assigned: ``nn.Sequential(...)``, an element of a container)."""
    if isinstance(expr, OneOf):
        options = [o for o in expr.options if not isinstance(o, Local)]
        if len(options) == 1:
            return options[0]
        if len(options) < len(expr.options):
            return OneOf(tuple(options)) if options else UNKNOWN
    return expr


def is_trivial(expr: Expr) -> bool:
    """Nothing to follow: a literal or :data:`UNKNOWN` (calls record such arguments as :data:`UNKNOWN`)."""
    return isinstance(expr, Unknown | Const)


ConstantKind = Literal["none", "bool", "int", "float", "str", "unknown"]


def constant_kind(value: object) -> ConstantKind:
    """The kind of a literal's value (``None``, a bool, an int, a float, a string), ``unknown`` for the rest."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    return "str" if isinstance(value, str) else "unknown"


MAX_CONSTANT = 40


def constant(value: object) -> Const:
    """The :class:`Const` of a literal value (its text kept when short)."""
    text = repr(value)
    return Const(constant_kind(value), text if len(text) <= MAX_CONSTANT else "")
