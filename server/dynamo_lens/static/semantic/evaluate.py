"""What a lowered expression (``static/exprs.py``) can be, across the whole workspace.

:class:`Evaluator` turns an expression of one file into the set of :data:`Value` it can evaluate to: instances of
workspace classes, the classes and functions themselves, methods bound to instances, torch containers of modules
(``nn.Sequential``, ``nn.ModuleList``, ``nn.ModuleDict`` and plain lists of modules), classes and instances from
outside the workspace. It follows what one file cannot:

* names across imports, module-level bindings (``model = Net()`` at the bottom of ``train.py``);
* calls: a workspace class makes an instance; a function or method returns what its ``return`` statements return,
  evaluated with its parameters bound to this call's arguments (factories, ``from_pretrained``-style
  classmethods, where ``cls`` is the class it was called on);
* attributes of instances: what any method of the class (or a base) assigns to ``self.<attr>``;
* parameters that no call binds: whatever the callers of the function pass (``decode(model, x)`` makes
  ``model`` inside ``decode`` what the callers' ``model`` is); ``self`` is an instance of the class or of one of
  its subclasses.

:data:`OPAQUE` in a result means "and possibly something else we cannot tell": checks never warn on it alone.
Every evaluation is bounded (depth, number of values, callers followed) and cycle-safe.
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TypeAlias

from dynamo_lens.static import exprs
from dynamo_lens.static.exprs import Expr
from dynamo_lens.static.semantic.classes import Hierarchy
from dynamo_lens.static.semantic.workspace import ClassKey, Files, FunctionKey, Symbol
from dynamo_lens.static.summary import LOCAL, CallSite, FunctionSummary, MethodSummary, Ref
from dynamo_lens.torch_facts import is_torch_nn_module

MAX_DEPTH = 24
MAX_VALUES = 64
"""Values one expression can hold before the rest are summed up as :data:`OPAQUE`: enough for the model classes a
shared compile-test mixin sees through its test classes (59 in diffusers)."""
MAX_CALLERS = 64
"""Calls spelled like a function's name that are looked at to find what its parameters hold."""
TORCH_CONTAINERS = frozenset({"Sequential", "ModuleList", "ModuleDict"})
SUBMODULE_METHODS = frozenset({"modules", "children", "values"})
CONTAINER_METHODS = exprs.ELEMENT_GETTERS | {
    "keys",
    "items",
    "append",
    "extend",
    "insert",
    "update",
    "clear",
    "copy",
    "count",
    "index",
    "remove",
    "popitem",
    "sort",
    "reverse",
}
"""Methods of the builtin containers and torch's module containers: reading one is no element (``self.modules.keys``
is not a module of ``self.modules``), and calling it runs no workspace code."""


@dataclass(frozen=True, slots=True)
class Instance:
    """An instance of the workspace class ``cls``."""

    cls: ClassKey


@dataclass(frozen=True, slots=True)
class ClassValue:
    cls: ClassKey


@dataclass(frozen=True, slots=True)
class FunctionValue:
    key: FunctionKey


@dataclass(frozen=True, slots=True)
class MethodValue:
    """Method ``name`` looked up on ``cls`` (through its MRO): bound to an instance, or taken from the class."""

    cls: ClassKey
    name: str
    on_class: bool = False


@dataclass(frozen=True, slots=True)
class ModuleFile:
    path: str


@dataclass(frozen=True, slots=True)
class External:
    """Something outside the workspace named ``dotted`` (``torch.nn.Linear``), or an instance of it."""

    dotted: str
    instance: bool = False


@dataclass(frozen=True, slots=True)
class Container:
    """A container of values: ``nn.Sequential`` (``sequential``: calling it calls every element in turn),
    ``nn.ModuleList``, ``nn.ModuleDict``, a list, tuple or dict display."""

    elements: frozenset[Value]
    sequential: bool = False
    positions: tuple[frozenset[Value], ...] = ()
    """For a tuple or list display: the values of each position (``return model, transform``)."""
    keys: tuple[str, ...] = ()
    """For a dict (or ``nn.ModuleDict``) with string-literal keys: the key of each position."""


@dataclass(frozen=True, slots=True)
class Wrapper:
    """What the ``torch.compile(...)`` call at ``line``:``column`` of ``path`` returned (calls of it run compiled
    code), alongside the values of what it wraps."""

    path: str
    line: int
    column: int


@dataclass(frozen=True, slots=True)
class Slot:
    """The object held by the attribute ``name`` of instances of ``owner``, by the module-level name ``name`` of the
    file ``owner[0]`` (``owner[1] == ""``), or by the local variable ``name`` of the function ``owner[1]``: an
    identity, alongside what the object is. Two expressions that read
    the same slot hold the same object (``self._model`` in ``setup`` and in ``validate``; ``teacher`` is not
    ``student`` although both are a ``Net``). Attributes get one only when their value cannot be told."""

    owner: ClassKey
    name: str


@dataclass(frozen=True, slots=True)
class Opaque:
    """Something that cannot be told."""


@dataclass(frozen=True, slots=True)
class LiteralValue:
    """A literal a call passes (or a default it leaves) for a parameter that decides which ``return`` runs
    (:class:`~dynamo_lens.static.exprs.Given`): ``text`` is its ``repr``. Never part of what a call returns."""

    text: str


OPAQUE = Opaque()
Value: TypeAlias = (
    Instance
    | ClassValue
    | FunctionValue
    | MethodValue
    | ModuleFile
    | External
    | Container
    | Wrapper
    | Slot
    | Opaque
    | LiteralValue
)
Values = frozenset[Value]
NOTHING: Values = frozenset()
UNKNOWN_VALUES: Values = frozenset({OPAQUE})
ParamKey = tuple[str, str, str]
"""(path, function qualname, parameter name)."""


class Env:
    """What parameters hold in one evaluation (a call with its arguments, ``self`` of a class); hashable, so that
    evaluations under the same bindings are computed once."""

    __slots__ = ("bound", "key")

    def __init__(self, bound: Mapping[ParamKey, Values]) -> None:
        self.bound = dict(bound)
        self.key = frozenset(self.bound.items())

    def get(self, key: ParamKey) -> Values | None:
        return self.bound.get(key)


NO_ENV = Env({})
MAX_STEPS = 20_000
"""Evaluations one query may make (a chain of factories and callers is followed that far, then given up on)."""

_Key = tuple[int, str, frozenset[tuple[ParamKey, Values]]]
"""(id of the expression, path, env): expressions are deep trees, and live as long as the summaries that hold
them, which outlive an evaluator (hashing the trees themselves dominated the link)."""


class Evaluator:
    """``program``, when given, is the set of functions and methods (``(path, qualname)``, ``(path, "")`` for a
    file's module level) that one program runs: a parameter then holds only what callers in there pass (a
    constructor's parameters still take every caller's: objects are built wherever configuration says)."""

    def __init__(self, files: Files, classes: Hierarchy, program: frozenset[tuple[str, str]] | None = None) -> None:
        self.files = files
        self.classes = classes
        self.program = program
        self._memo: dict[_Key, Values] = {}
        self._active: set[object] = set()
        self._depth = 0
        self._steps = 0
        self._cut_short = 0
        """How many evaluations gave up for depth or steps so far (what they fed into is not memoized)."""
        self._self_envs: dict[ClassKey, Env] = {}
        self._callers: dict[str, list[tuple[CallSite, str]]] | None = None
        self._call_scopes: dict[int, str] = {}
        """id(call) → the qualname of the function or method it is made in (``""`` at module level)."""
        self._attributes: dict[tuple[ClassKey, str], Values] = {}
        self._params: dict[tuple[str, str, str], Values] = {}
        self._published_names: dict[str, frozenset[str]] = {}
        self._used: dict[int, frozenset[str]] = {}

    # -- public --------------------------------------------------------------------------------------------------
    def evaluate(self, expr: Expr, path: str, env: Env = NO_ENV) -> Values:
        """What ``expr`` (lowered in the file ``path``) can be; ``env`` binds parameters for this evaluation."""
        if isinstance(expr, exprs.Unknown):
            return UNKNOWN_VALUES
        if isinstance(expr, exprs.Const):
            return NOTHING
        key: _Key = (id(expr), path, env.key)
        found = self._memo.get(key)
        if found is not None:
            return found
        if self._depth == 0:
            self._steps = 0
        self._steps += 1
        if key in self._active:
            return NOTHING
        if self._depth > MAX_DEPTH or self._steps > MAX_STEPS:
            self._cut_short += 1
            return UNKNOWN_VALUES if self._steps > MAX_STEPS else NOTHING
        self._active.add(key)
        self._depth += 1
        cut_short = self._cut_short
        try:
            result = _capped(self._evaluate(expr, path, env))
        finally:
            self._depth -= 1
            self._active.discard(key)
        if self._cut_short == cut_short:
            # a value whose evaluation ran out of depth or steps is what this query could see, not what the
            # expression is: another query, from shallower, may see it all (link order must not matter)
            self._memo[key] = result
        return result

    def self_env(self, cls: ClassKey) -> Env:
        """Binds ``self`` (the first parameter) of every method along ``cls``'s MRO to an instance of ``cls``."""
        found = self._self_envs.get(cls)
        if found is None:
            bound: dict[ParamKey, Values] = {}
            instance: Values = frozenset({Instance(cls)})
            for owner in self.classes.mro(cls)[0]:
                summary = self.files.class_summary(owner)
                for method in summary.methods if summary is not None else ():
                    if method.params and method.kind in ("method", "property"):
                        bound[(owner[0], f"{owner[1]}.{method.name}", method.params[0])] = instance
            found = self._self_envs[cls] = Env(bound)
        return found

    def over_callers(
        self, expr: Expr, path: str, function: str, requires: tuple[tuple[str, str, bool], ...]
    ) -> Values | None:
        """What ``expr``, in the function ``function`` of ``path``, can be over the calls of that function whose
        literal arguments let ``requires`` hold (a loader called with ``enable_compile`` left at its default
        ``False`` never reaches ``if enable_compile: model = torch.compile(model)``); None when the function has no
        known caller."""
        summary = self.files.function_summary((path, function))
        if summary is None:
            return None
        target = FunctionValue((path, function))
        used = frozenset(summary.params) | {name for name, _ in summary.defaults}
        found: set[Value] = set()
        called = False
        for call, at in itertools.islice(self._program_callers(function.rpartition(".")[2], path), MAX_CALLERS):
            offset = self._offset(self.evaluate(call.func, at), target, None)
            if offset is None:
                continue
            called = True
            lowered = exprs.Call(call.func, call.args, call.keywords, call.complete)
            bound = self._bind(path, function, summary.params, offset, lowered, at, NO_ENV, used, summary.defaults)
            env = Env(bound)
            if not _ruled_out(exprs.Given(expr, requires), path, function, env):
                found |= self.evaluate(expr, path, env)
        return _capped(found) if called else None

    def attribute(self, cls: ClassKey, name: str) -> Values:
        """What ``self.<name>`` can hold on an instance of ``cls`` (assigned by any method of its MRO)."""
        key = (cls, name)
        found = self._attributes.get(key)
        if found is not None:
            return found
        self._attributes[key] = NOTHING  # cycles: an attribute built from itself
        values: set[Value] = set()
        env = self.self_env(cls)
        for owner in self.classes.mro(cls)[0]:
            summary = self.files.class_summary(owner)
            for attr, value in summary.attr_values if summary is not None else ():
                if attr == name:
                    values |= self.evaluate(value, owner[0], env)
        if not values:
            linked = self.classes.linked_owner(cls, name)
            if linked is not None:
                values.add(ClassValue(linked))
        if not values:
            values.update(self._class_value(cls, name))
        if not values:
            values.update(self._field(cls, name))
        if not values or OPAQUE in values:
            values.add(Slot(cls, name))
        result = self._attributes[key] = _capped(values)
        return result

    def _class_value(self, cls: ClassKey, name: str) -> Values:
        """What the class body nearest in ``cls``'s MRO binds to ``name`` (a subclass's ``model_class = Net``
        overrides its base's)."""
        found = self._class_binding(cls, name)
        return self.evaluate(found[1], found[0]) if found is not None else NOTHING

    def _class_binding(self, cls: ClassKey, name: str) -> tuple[str, Expr] | None:
        """The file and value of the class-body binding of ``name`` nearest in ``cls``'s MRO; None when there is none,
        or the nearest binds it to something that cannot matter (``_repeated_blocks = None``)."""
        for owner in self.classes.mro(cls)[0]:
            summary = self.files.class_summary(owner)
            for attr, value in summary.class_values if summary is not None else ():
                if attr == name:
                    return owner[0], value
            if summary is not None and name in summary.class_attrs:
                return None
        return None

    def _field(self, cls: ClassKey, name: str) -> Iterable[Value]:
        """A field of a class without an ``__init__`` of its own (a ``@dataclass``, a ``NamedTuple``): what its
        constructor calls pass for it, by keyword or by position in the class body's order. The constructions of
        its subclasses count too (a ``Decoder.Config`` may be a ``DeepSeekV3Model.Config``, whose fields start with
        the base's); a call whose callee names another class is not looked at, and those that name one of these
        classes come first."""
        summary = self.files.class_summary(cls)
        if summary is None or name not in summary.class_attrs or self.classes.find_method(cls, "__init__"):
            return NOTHING
        position = summary.class_attrs.index(name)
        classes = (cls, *self.classes.subclasses(cls))
        constructors = {ClassValue(key) for key in classes}
        spelled = {key[1] for key in classes}
        callers = list(self.callers(cls[1].rpartition(".")[2], cls[0]))
        named = [(c, at) for c, at in callers if isinstance(c.func, exprs.Named) and _names_one_of(c.func.ref, spelled)]
        calls = itertools.chain(named, ((c, at) for c, at in callers if not isinstance(c.func, exprs.Named)))
        found: set[Value] = set()
        for call, at in itertools.islice(calls, MAX_CALLERS):
            if not constructors & self.evaluate(call.func, at):
                continue
            argument = next((value for key, value in call.keywords if key == name), None)
            if argument is None and position < len(call.args):
                argument = call.args[position]
            if argument is not None and not exprs.is_trivial(argument):
                found |= self.evaluate(argument, at)
        return found

    def submodules(self, values: Iterable[Value], recursive: bool) -> Values:
        """The modules held by ``values`` (instances' module attributes, containers' elements), and theirs too when
        ``recursive`` (``model.modules()``, which also yields ``model`` itself)."""
        found: set[Value] = set()
        pending = list(values)
        seen: set[Value] = set()
        while pending and len(found) < MAX_VALUES * 4:
            value = pending.pop()
            if value in seen:
                continue
            seen.add(value)
            if isinstance(value, Container):
                inner = list(value.elements)
            elif isinstance(value, Instance):
                inner = [v for attr in self._attribute_names(value.cls) for v in self.attribute(value.cls, attr)]
            else:
                continue
            for element in inner:
                if isinstance(element, Instance | Container) or (isinstance(element, External) and element.instance):
                    if not isinstance(element, Container):
                        found.add(element)
                    if recursive or isinstance(element, Container):
                        pending.append(element)
        return frozenset(found)

    def callers(self, name: str, near: str = "") -> Iterator[tuple[CallSite, str]]:
        """Calls (and their files) whose callee is written ``name`` or is a local that may hold something named
        ``name``, then those whose callee is a module-level name of its file (which may hold the function under
        another name); each group in path order, the calls in the file ``near`` first (the likeliest callers, when a
        caller only looks at the first few)."""
        if self._callers is None:
            index: dict[str, list[tuple[CallSite, str]]] = {}
            for summary in sorted(self.files.summaries, key=lambda s: s.path):
                for scope, call in _calls_of(summary):
                    self._call_scopes[id(call)] = scope
                    index.setdefault(call.name, []).append((call, summary.path))
                    if isinstance(call.func, exprs.Global) and call.name:
                        index.setdefault("", []).append((call, summary.path))
                    elif not isinstance(call.func, exprs.Named | exprs.Attr | exprs.Param):
                        # `infer_fn(x, model)` with `infer_fn = [infer_basic, infer_mirror][level]`: a caller of each
                        for also in {ref.last for ref in exprs.refs_in(call.func)} - {call.name}:
                            index.setdefault(also, []).append((call, summary.path))
            self._callers = index
        for spelled in (name, "") if name else (name,):
            calls = self._callers.get(spelled, ())
            if near:
                yield from (c for c in calls if c[1] == near)
                yield from (c for c in calls if c[1] != near)
            else:
                yield from calls

    # -- expressions ---------------------------------------------------------------------------------------------
    def _evaluate(self, expr: Expr, path: str, env: Env) -> Iterable[Value]:
        if isinstance(expr, exprs.Named):
            symbol = self.files.resolve(path, expr.ref)
            if symbol is not None:
                return self._symbol(symbol)
            prefix, _, last = expr.ref.dotted.rpartition(".")
            owner = self.files.resolve(path, exprs.Ref(prefix, expr.ref.level)) if prefix else None
            if owner is not None and owner.kind == "class":  # `Fn.apply`: an attribute the class inherits
                return {v for value in self._symbol(owner) for v in self._attribute_of(value, last)}
            return {External(expr.ref.dotted)} if expr.ref.level == 0 else UNKNOWN_VALUES
        if isinstance(expr, exprs.Global):
            return self._global(path, expr.name, expr.line)
        if isinstance(expr, exprs.Param):
            bound = env.get((path, expr.function, expr.name))
            return bound if bound is not None else self._param(path, expr.function, expr.name, expr.index)
        if isinstance(expr, exprs.Call):
            return self._call(expr, path, env)
        if isinstance(expr, exprs.Attr):
            return {v for value in self.evaluate(expr.value, path, env) for v in self._attribute_of(value, expr.attr)}
        if isinstance(expr, exprs.Item):
            return {e for value in self.evaluate(expr.value, path, env) for e in _elements(value, expr.index, expr.key)}
        if isinstance(expr, exprs.Items):
            positions = tuple(self.evaluate(item, path, env) for item in expr.items)
            elements = frozenset(v for values in positions for v in values)
            return {Container(elements, positions=positions, keys=expr.keys)} if elements else NOTHING
        if isinstance(expr, exprs.OneOf):
            return {v for option in expr.options for v in self.evaluate(option, path, env)}
        if isinstance(expr, exprs.InstanceOf):
            return self._instances_of(path, expr, env)
        if isinstance(expr, exprs.NamedInstanceOf):
            return self._named_instances(path, expr, env)
        if isinstance(expr, exprs.Local):
            return {Slot((path, expr.function), expr.name)}
        if isinstance(expr, exprs.Compiled):
            return {*self.evaluate(expr.value, path, env), Wrapper(path, expr.line, expr.column)}
        if isinstance(expr, exprs.Given):
            return self.evaluate(expr.value, path, env)
        return UNKNOWN_VALUES

    def _symbol(self, symbol: Symbol) -> Iterable[Value]:
        if symbol.kind == "class":
            return {ClassValue((symbol.path, symbol.qualname))}
        if symbol.kind == "function":
            function = FunctionValue((symbol.path, symbol.qualname))
            if symbol.qualname in self._published(symbol.path):
                # `global step; step = torch.compile(step)` in a set-up function: the name's later readers call
                # whatever the name holds then, so they get the name's identity besides the def
                return {function, Slot((symbol.path, ""), symbol.qualname)}
            return {function}
        if symbol.kind == "method":
            owner, _, name = symbol.qualname.rpartition(".")
            return {MethodValue((symbol.path, owner), name, on_class=True)}
        if symbol.kind == "binding":
            return self._global(symbol.path, symbol.qualname, 0)
        return {ModuleFile(symbol.path)}

    def _published(self, path: str) -> frozenset[str]:
        """The module-level names of ``path`` that a function rebinds to a compiled callable (``global``)."""
        found = self._published_names.get(path)
        if found is None:
            summary = self.files.summary(path)
            sites = summary.compile_sites if summary is not None else ()
            found = self._published_names[path] = frozenset(n for s in sites if s.published for n in s.module_names)
        return found

    def _global(self, path: str, name: str, line: int) -> Iterable[Value]:
        bindings = self.files.bindings(path, name)
        if line:
            before = [b for b in bindings if b.line < line]
            bindings = before[-1:] or bindings
        found = {v for binding in bindings for v in self.evaluate(binding.value, path)}
        if not found:
            found.add(OPAQUE)
        found.add(Slot((path, ""), name))  # which object it is: the one this name holds
        return found

    def _instances_of(self, path: str, expr: exprs.InstanceOf, env: Env) -> Iterable[Value]:
        """What an ``isinstance`` test leaves of the narrowed value: its known instances of the tested classes (or
        of their subclasses); when it has none, an instance of a tested class itself, not of every subclass, whose
        overrides would all be taken to run (a ``Transform`` parameter narrowed by ``isinstance(t, Transform)``).
        Under ``excluded``, what it is known to be except instances of those classes."""
        admitted: set[ClassKey] = set()
        tested: set[Value] = set()
        for ref in expr.classes:
            key = self.files.resolve_class(path, ref)
            if key is not None:
                admitted.add(key)
                admitted.update(self.classes.subclasses(key))
                tested.add(Instance(key))
            elif ref.level == 0:
                tested.add(External(ref.dotted, instance=True))
        if expr.excluded:
            values = self.evaluate(expr.value, path, env)
            return {v for v in values if not (isinstance(v, Instance) and v.cls in admitted) and v not in tested}
        if not admitted:
            return tested
        known = {v for v in self.evaluate(expr.value, path, env) if isinstance(v, Instance) and v.cls in admitted}
        return known or tested

    def _named_instances(self, path: str, expr: exprs.NamedInstanceOf, env: Env) -> Iterable[Value]:
        """What a test of its class's name (``m.__class__.__name__ in names``) leaves of the narrowed value: its known
        instances of the named workspace classes, else an instance of each. A name counts as the class it resolves
        to in the file that lists it; unknown when no name resolves to a workspace class."""
        named: set[ClassKey] = set()
        for where, name in self._class_names(path, expr.names, env):
            symbol = self.files.resolve(where, Ref(name, LOCAL))
            if symbol is not None and symbol.kind == "class":
                named.add((symbol.path, symbol.qualname))
        if not named:
            return UNKNOWN_VALUES
        known = {v for v in self.evaluate(expr.value, path, env) if isinstance(v, Instance) and v.cls in named}
        return known or {Instance(key) for key in named}

    def _class_names(self, path: str, names: Expr, env: Env) -> Iterator[tuple[str, str]]:
        """``(file, name)`` for each string ``names`` can hold: literals (``["Block"]``), or a class attribute read
        through the method's own ``self`` (``getattr(self, "_repeated_blocks", None)``), as the class body of each
        class ``self`` can be binds it (its known instances' classes; else the method's class and every subclass,
        since the scan cannot tell which one the method runs on)."""
        pending = [(path, names)]
        while pending:
            where, expr = pending.pop()
            expr = exprs.without_identity(expr)
            if isinstance(expr, exprs.OneOf):
                pending.extend((where, option) for option in expr.options)
            elif isinstance(expr, exprs.Items):
                pending.extend((where, item) for item in expr.items)
            elif isinstance(expr, exprs.Const) and expr.kind == "str" and expr.value:
                yield where, ast.literal_eval(expr.value)
            elif isinstance(expr, exprs.Attr) and isinstance(expr.value, exprs.Param) and expr.value.index == 0:
                owner = (where, expr.value.function.rpartition(".")[0])
                if self.files.class_summary(owner) is None:
                    continue
                selves = self.evaluate(expr.value, where, env)
                classes = {v.cls for v in selves if isinstance(v, Instance)}
                if not selves or len(classes) < len(selves):  # some caller's object is unknown: any subclass
                    classes = {owner, *self.classes.subclasses(owner)}
                bindings = (self._class_binding(cls, expr.attr) for cls in classes)
                pending.extend(binding for binding in bindings if binding is not None)

    def _attribute_of(self, value: Value, name: str) -> Iterable[Value]:
        if isinstance(value, Instance):
            found = self.classes.find_method(value.cls, name)
            if found is not None:
                if found[1].kind == "property":
                    return self._returns(found[0], found[1], self.self_env(value.cls))
                return {MethodValue(value.cls, name)}
            return self.attribute(value.cls, name) or UNKNOWN_VALUES
        if isinstance(value, ClassValue):
            if self.classes.find_method(value.cls, name) is not None:
                return {MethodValue(value.cls, name, on_class=True)}
            if name == "apply" and self.classes.is_autograd_function(value.cls):
                return {MethodValue(value.cls, "forward", on_class=True)}  # Function.apply runs the forward
            return UNKNOWN_VALUES
        if isinstance(value, ModuleFile):
            symbol = self.files.resolve_in_module(value.path, name)
            return self._symbol(symbol) if symbol is not None else UNKNOWN_VALUES
        if isinstance(value, External) and not value.instance:
            return {External(f"{value.dotted}.{name}")}
        if isinstance(value, Container) and name in CONTAINER_METHODS:
            return UNKNOWN_VALUES
        if isinstance(value, Container) and value.keys:
            # `self.transformer.blocks` of an `nn.ModuleDict(dict(wte=...))` updated with `{"blocks": ...}`: what
            # the key holds, in each keyed part of the dict that has it
            return value.positions[value.keys.index(name)] if name in value.keys else NOTHING
        if isinstance(value, Container):
            return {*value.elements, OPAQUE}  # `self.transformer.h` of an `nn.ModuleDict(...)`: some element
        return UNKNOWN_VALUES

    # -- calls ---------------------------------------------------------------------------------------------------
    def _call(self, expr: exprs.Call, path: str, env: Env) -> Iterable[Value]:
        func = expr.func
        if isinstance(func, exprs.Attr) and func.attr in SUBMODULE_METHODS and not expr.args:
            receivers = self.evaluate(func.value, path, env)
            if any(isinstance(v, Instance | Container) for v in receivers):
                found = set(self.submodules(receivers, recursive=func.attr == "modules"))
                if func.attr == "modules":
                    found.update(v for v in receivers if isinstance(v, Instance))
                return {Container(frozenset(found))}
        result: set[Value] = set()
        if isinstance(func, exprs.Attr) and func.attr in exprs.ELEMENT_GETTERS and expr.args:
            # `self.modules.get("transformer")`: the value under that key (any value when the key cannot be told)
            for receiver in self.evaluate(func.value, path, env):
                if isinstance(receiver, Container):
                    result.update(_element_at(receiver, expr.args[0]))
                else:
                    for callee in self._attribute_of(receiver, func.attr):
                        result.update(self._call_value(callee, expr, path, env))
            return result
        callees = self.evaluate(func, path, env)
        known = any(not isinstance(c, Slot | Opaque) for c in callees)
        for callee in callees:
            if isinstance(callee, Slot) and known:
                continue  # the variable's identity: calling it calls what it holds, listed beside it
            result.update(self._call_value(callee, expr, path, env))
        return result

    def _call_value(self, callee: Value, call: exprs.Call, path: str, env: Env) -> Iterable[Value]:
        if isinstance(callee, ClassValue):
            return {Instance(callee.cls)}
        if isinstance(callee, External) and not callee.instance:
            last = callee.dotted.rpartition(".")[2]
            if callee.dotted.startswith("torch.nn.") and last == "ModuleDict" and len(call.args) == 1:
                keyed = self.evaluate(call.args[0], path, env)
                if keyed and all(isinstance(v, Container) and v.keys for v in keyed):
                    return keyed  # `nn.ModuleDict(dict(wte=...))`: its attributes are the keys
            if callee.dotted.startswith("torch.nn.") and last in TORCH_CONTAINERS:
                elements = frozenset(
                    e
                    for argument in call.args
                    for value in self.evaluate(argument, path, env)
                    for e in (value.elements if isinstance(value, Container) else (value,))
                )
                return {Container(elements, sequential=last == "Sequential")}
            if is_torch_nn_module(callee.dotted):
                return {External(callee.dotted, instance=True)}
            return UNKNOWN_VALUES
        if isinstance(callee, FunctionValue):
            function = self.files.function_summary(callee.key)
            if function is None:
                return UNKNOWN_VALUES
            bound = NO_ENV
            used = self._params_used(function.returns)
            if used:
                bound = Env(
                    self._bind(
                        callee.key[0], callee.key[1], function.params, 0, call, path, env, used, function.defaults
                    )
                )
            returned = self._returned(callee.key[0], callee.key[1], function.returns, bound)
            return _fresh(returned, callee.key) or UNKNOWN_VALUES
        if isinstance(callee, MethodValue):
            found = self.classes.find_method(callee.cls, callee.name)
            if found is None:
                return UNKNOWN_VALUES
            owner, method = found
            qualname = f"{owner[1]}.{method.name}"
            binding: dict[ParamKey, Values] = {}
            offset = 0
            if method.kind == "classmethod" and method.params:
                binding[(owner[0], qualname, method.params[0])] = frozenset({ClassValue(callee.cls)})
                offset = 1
            elif method.kind != "staticmethod" and not callee.on_class and method.params:
                binding.update(self.self_env(callee.cls).bound)
                offset = 1
            used = self._params_used(method.returns)
            if used:
                binding.update(
                    self._bind(owner[0], qualname, method.params, offset, call, path, env, used, method.defaults)
                )
            produced = self._returns(owner, method, Env(binding) if used else NO_ENV)
            if method.kind in ("classmethod", "staticmethod") or not _on_own_instance(call):
                produced = frozenset(_fresh(produced, (owner[0], qualname)))
            return produced or UNKNOWN_VALUES
        return UNKNOWN_VALUES

    def _params_used(self, returns: tuple[Expr, ...]) -> frozenset[str]:
        """The parameters a function's return values depend on: a call's other arguments cannot change what it
        returns, and need not be evaluated (when none, one evaluation serves every call). Kept by the ``id`` of the
        summary's tuple, which lives as long as this evaluator (a table shared by evaluators handed a later
        workspace the answer for a dead tuple whose ``id`` a new one had taken: a literal argument stopped deciding
        which ``return`` a getter takes)."""
        key = id(returns)
        found = self._used.get(key)
        if found is None:
            found = self._used[key] = frozenset(name for r in returns for name in _param_names(r))
        return found

    def _returns(self, owner: ClassKey, method: MethodSummary, env: Env) -> Values:
        return frozenset(self._returned(owner[0], f"{owner[1]}.{method.name}", method.returns, env))

    def _returned(self, path: str, qualname: str, returns: tuple[Expr, ...], env: Env) -> set[Value]:
        """What the ``returns`` of the function ``qualname`` give under ``env``, without those a literal argument
        rules out (``get_model(ema=True)`` does not take the ``ema=False`` return)."""
        found: set[Value] = set()
        for returned in returns:
            if isinstance(returned, exprs.Given) and _ruled_out(returned, path, qualname, env):
                continue
            found.update(v for v in self.evaluate(returned, path, env) if not isinstance(v, LiteralValue))
        return found

    def _bind(
        self,
        path: str,
        qualname: str,
        params: tuple[str, ...],
        offset: int,
        call: exprs.Call,
        at: str,
        env: Env,
        used: frozenset[str],
        defaults: tuple[tuple[str, str], ...] = (),
    ) -> dict[ParamKey, Values]:
        """The parameters ``used`` of the function ``qualname`` of ``path`` bound to the arguments of ``call`` (made
        in ``at``); one this call passes no followable value for holds nothing, except a literal (passed, or the
        literal default when nothing is passed), which a parameter that decides a ``return`` holds."""
        bound: dict[ParamKey, Values] = {
            (path, qualname, p): NOTHING for p in list(params[offset:]) + [name for name, _ in defaults] if p in used
        }
        for name, default in defaults if call.complete else ():
            if name in used:
                bound[(path, qualname, name)] = frozenset({LiteralValue(default)})
        passed = [(params[index + offset], a) for index, a in enumerate(call.args) if index + offset < len(params)]
        for name, argument in [*passed, *call.keywords]:
            if name not in used:
                continue
            if isinstance(argument, exprs.Const):
                bound[(path, qualname, name)] = frozenset({LiteralValue(argument.value)}) if argument.value else NOTHING
            elif not exprs.is_trivial(argument):
                bound[(path, qualname, name)] = self.evaluate(argument, at, env)
            else:
                bound[(path, qualname, name)] = NOTHING
        return bound

    # -- parameters ----------------------------------------------------------------------------------------------
    def _param(self, path: str, function: str, name: str, index: int) -> Values:
        """What parameter ``name`` of ``function`` (in ``path``) holds when nothing binds it: ``self`` and ``cls``
        of a method, else what the function's callers pass."""
        key = (path, function, name)
        found = self._params.get(key)
        if found is not None:
            return found
        self._params[key] = NOTHING  # recursion through a caller that forwards its own parameter
        owner, _, method_name = function.rpartition(".")
        summary = self.files.class_summary((path, owner)) if owner else None
        method = summary.method(method_name) if summary is not None else None
        result: Values
        if method is not None and index == 0 and method.kind in ("method", "property", "classmethod"):
            # the class and the subclasses that inherit this method (one that overrides it runs its own)
            keys = [(path, owner)]
            for sub in self.classes.subclasses((path, owner)):
                inherited = self.classes.find_method(sub, method_name)
                if inherited is not None and inherited[0] == (path, owner):
                    keys.append(sub)
            kind = ClassValue if method.kind == "classmethod" else Instance
            result = _capped(kind(k) for k in keys)
        else:
            result = _capped(
                {*self._passed(path, function, name, index, method), *self._annotated(path, function, name)}
            )
        self._params[key] = result
        return result

    def _annotated(self, path: str, function: str, name: str) -> Iterable[Value]:
        """Instances of the workspace class a parameter is annotated with."""
        owner, _, last = function.rpartition(".")
        summary = self.files.class_summary((path, owner)) if owner else None
        method = summary.method(last) if summary is not None else None
        found = method if method is not None else self.files.function_summary((path, function))
        for param, ref in found.annotations if found is not None else ():
            if param == name:
                key = self.files.resolve_class(path, ref)
                if key is not None:
                    yield Instance(key)  # a subclass instance is known when a caller passes one

    def _passed(self, path: str, function: str, name: str, index: int, method: MethodSummary | None) -> Iterable[Value]:
        summary = self.files.function_summary((path, function)) if method is None else None
        if summary is not None and summary.vararg == name:
            return self._varargs(path, function, summary)
        owner, _, last = function.rpartition(".")
        if method is not None and last == "__init__":
            target: Value = ClassValue((path, owner))
            spelled = owner.rpartition(".")[2]
        elif method is not None:
            target, spelled = MethodValue((path, owner), last), last
        else:
            target, spelled = FunctionValue((path, function)), last
        found: set[Value] = set()
        callers = self.callers(spelled, path) if last == "__init__" else self._program_callers(spelled, path)
        for call, at in itertools.islice(callers, MAX_CALLERS):
            keyword = next((value for key, value in call.keywords if key == name), None)
            positional = [call.args[i] for i in (index, index - 1) if 0 <= i < len(call.args)]
            if all(exprs.is_trivial(a) for a in (*positional, keyword) if a is not None):
                continue  # passes nothing to follow in that place (checked before evaluating the callee)
            offset = self._offset(self.evaluate(call.func, at), target, method)
            if offset is None:
                continue
            argument: Expr | None = keyword
            if index >= offset and index - offset < len(call.args):
                argument = call.args[index - offset]
            if argument is not None and not exprs.is_trivial(argument):
                found |= self.evaluate(argument, at)
        return found

    def _program_callers(self, name: str, near: str) -> Iterator[tuple[CallSite, str]]:
        """:meth:`callers`, without those :attr:`program` does not make (all of them when there is no program)."""
        callers = self.callers(name, near)
        return callers if self.program is None else (c for c in callers if self._in_program(c))

    def _in_program(self, caller: tuple[CallSite, str]) -> bool:
        """The call is made by code of :attr:`program`."""
        assert self.program is not None
        call, path = caller
        return runs_in(self.program, path, self._call_scopes.get(id(call), ""))

    def _varargs(self, path: str, function: str, summary: FunctionSummary) -> Iterable[Value]:
        """What the ``*args`` of a function holds: a tuple of what each caller passes after the named positional
        parameters (``compile_with_warmup(update, mode=...)`` with ``model = args[0]``)."""
        target = FunctionValue((path, function))
        start = len(summary.params)
        found: set[Value] = set()
        for call, at in itertools.islice(self._program_callers(function.rpartition(".")[2], path), MAX_CALLERS):
            extra = call.args[start:]
            if all(exprs.is_trivial(a) for a in extra) or self._offset(self.evaluate(call.func, at), target, None) != 0:
                continue
            env = self._caller_self(call, at)
            positions = tuple(NOTHING if exprs.is_trivial(a) else self.evaluate(a, at, env) for a in extra)
            found.add(Container(frozenset(v for values in positions for v in values), positions=positions))
        return found

    def _caller_self(self, call: CallSite, path: str) -> Env:
        """For a call made in a method: ``self`` bound to an instance of the method's class, not of every subclass
        (``compile_with_warmup(self._step_and_maybe_reset)`` in a base class compiles what the instance it runs on
        has, which the call alone does not tell)."""
        owner = self._call_scopes.get(id(call), "").rpartition(".")[0]
        return self.self_env((path, owner)) if owner and self.files.class_summary((path, owner)) else NO_ENV

    def _offset(self, callees: Values, target: Value, method: MethodSummary | None) -> int | None:
        """How many leading parameters a call of one of ``callees`` fills before its arguments, if it calls
        ``target``; None if it calls something else."""
        for callee in callees:
            if callee == target:
                if isinstance(target, ClassValue):
                    return 1
                if isinstance(target, MethodValue) and method is not None and method.kind != "staticmethod":
                    return 1
                return 0
            if isinstance(target, MethodValue) and isinstance(callee, MethodValue) and callee.name == target.name:
                found = self.classes.find_method(callee.cls, callee.name)
                if found is not None and found[0] == target.cls and method is not None:
                    explicit_self = callee.on_class and method.kind == "method"
                    return 0 if explicit_self or method.kind == "staticmethod" else 1
            if isinstance(target, ClassValue) and isinstance(callee, ClassValue) and callee.cls != target.cls:
                found = self.classes.find_method(callee.cls, "__init__")
                if found is not None and found[0] == target.cls:
                    return 1  # a subclass that inherits __init__
        return None

    def _attribute_names(self, cls: ClassKey) -> list[str]:
        names: list[str] = []
        for owner in self.classes.mro(cls)[0]:
            summary = self.files.class_summary(owner)
            for attr, _ in summary.attr_values if summary is not None else ():
                if attr not in names:
                    names.append(attr)
        return names


def runs_in(program: frozenset[tuple[str, str]], path: str, scope: str) -> bool:
    """Code of ``scope`` (a qualname in ``path``, ``""`` for the module level) is part of ``program``: the scope
    itself or a function it is nested in is (the module level counts only for code at the module level)."""
    while True:
        if (path, scope) in program:
            return True
        scope = scope.rpartition(".")[0]
        if not scope:
            return False


def _ruled_out(returned: exprs.Given, path: str, qualname: str, env: Env) -> bool:
    """Whether the literals ``env`` binds contradict what ``returned`` requires of its function's parameters."""
    for param, kind, expected in returned.requires:
        bound = env.get((path, qualname, param))
        if bound and all(isinstance(v, LiteralValue) and exprs.holds(v.text, kind) != expected for v in bound):
            return True
    return False


def _param_names(expr: Expr) -> Iterator[str]:
    pending = [expr]
    while pending:
        node = pending.pop()
        if isinstance(node, exprs.Given):
            yield from (param for param, _, _ in node.requires)
            pending.append(node.value)
        elif isinstance(node, exprs.Param):
            yield node.name
        elif isinstance(node, exprs.Call):
            pending.append(node.func)
            pending.extend(node.args)
            pending.extend(v for _, v in node.keywords)
        elif isinstance(node, exprs.Attr | exprs.Item | exprs.Compiled | exprs.InstanceOf | exprs.NamedInstanceOf):
            pending.append(node.value)
        elif isinstance(node, exprs.Items):
            pending.extend(node.items)
        elif isinstance(node, exprs.OneOf):
            pending.extend(node.options)


def _fresh(values: Iterable[Value], function: FunctionKey) -> set[Value]:
    """What a factory returns, without the identity of its own local variables: each call makes a new object
    (``GPT.from_pretrained()`` in two scripts makes two models). Instance methods keep them: ``self._setup_model()``
    builds the one model of its object."""
    found: set[Value] = set()
    for value in values:
        if isinstance(value, Slot) and value.owner == function:
            continue
        if isinstance(value, Container):  # `return model, transform`
            value = Container(
                frozenset(_fresh(value.elements, function)),
                value.sequential,
                tuple(frozenset(_fresh(position, function)) for position in value.positions),
                value.keys,
            )
        found.add(value)
    return found


def _on_own_instance(call: exprs.Call) -> bool:
    """The call is ``self.<method>(...)`` (what it builds is its object's own: ``self._setup_model()``), not a
    method of another object (``config.build()``, a factory: each call builds a new object)."""
    func = call.func
    return isinstance(func, exprs.Attr) and isinstance(func.value, exprs.Param) and func.value.index == 0


def _names_one_of(ref: Ref, qualnames: set[str]) -> bool:
    """``ref`` may name a class with one of ``qualnames`` (``model.DeepSeekV3Model.Config`` for
    ``DeepSeekV3Model.Config``; a plain ``Config`` imported under that name)."""
    return any(ref.dotted == q or ref.dotted.endswith(f".{q}") or q.endswith(f".{ref.dotted}") for q in qualnames)


def _element_at(container: Container, key: Expr) -> Iterable[Value]:
    """What ``container.get(key)`` returns: the value under a literal string key the container is known to have, else
    any of its values."""
    if isinstance(key, exprs.Const) and container.keys:
        text = key.value.strip("'\"")
        if text in container.keys:
            return container.positions[container.keys.index(text)]
    return container.elements


def _elements(value: Value, index: int = -1, key: str = "") -> Iterable[Value]:
    """The elements of ``value`` at ``index`` (a position of a display), under ``key`` (a dict's string key), else
    all of them."""
    if isinstance(value, Container):
        if 0 <= index < len(value.positions):
            return value.positions[index]
        if key and key in value.keys:
            return value.positions[value.keys.index(key)]
        return value.elements
    return UNKNOWN_VALUES


def _capped(values: Iterable[Value]) -> Values:
    found = frozenset(values)
    if len(found) <= MAX_VALUES:
        return found
    return frozenset(sorted(found, key=repr)[:MAX_VALUES]) | UNKNOWN_VALUES


def _calls_of(summary: object) -> Iterable[tuple[str, CallSite]]:
    """Every call of a file, with the qualname of the function or method that makes it (``""``: module level)."""
    from dynamo_lens.static.summary import FileSummary

    assert isinstance(summary, FileSummary)
    yield from (("", call) for call in summary.calls)
    for function in summary.functions:
        yield from ((function.qualname, call) for call in function.calls)
    for cls in summary.classes:
        for method in cls.methods:
            yield from ((f"{cls.qualname}.{method.name}", call) for call in method.calls)
