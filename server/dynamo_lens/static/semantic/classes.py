"""The class hierarchy of the workspace: which classes are ``nn.Module`` subclasses, their MRO, which method an
instance runs for a name, where ``__init__`` sets an attribute, and which classes derive from a class."""

from __future__ import annotations

import ast
from collections import deque

from dynamo_lens.static import exprs
from dynamo_lens.static.context import SELF_FLAG
from dynamo_lens.static.semantic.workspace import ClassKey, Files
from dynamo_lens.static.summary import AttrInit, MethodSummary, Ref

TORCH_MODULE_BASES = frozenset({"torch.nn.Module", "torch.nn.modules.module.Module"})
"""Bases after which a class's own ``__init__`` is all there is (no attributes defined elsewhere)."""
AUTOGRAD_FUNCTIONS = frozenset({"torch.autograd.Function", "torch.autograd.function.Function"})
_EXTERNAL_MODULE_BASES = frozenset({"PreTrainedModel", "ModelMixin", "LightningModule"})


class Hierarchy:
    def __init__(self, files: Files) -> None:
        self.files = files
        self._methods: dict[ClassKey, dict[str, MethodSummary]] = {}
        self._found_methods: dict[tuple[ClassKey, str, ClassKey | None], tuple[ClassKey, MethodSummary] | None] = {}
        self._mros: dict[ClassKey, tuple[tuple[ClassKey, ...], bool]] = {}
        self._is_module: dict[ClassKey, bool] = {}
        self._subclasses: dict[ClassKey, list[ClassKey]] | None = None
        self._all_subclasses: dict[ClassKey, tuple[ClassKey, ...]] = {}

    def is_module_class(self, key: ClassKey) -> bool:
        """``key`` derives from ``torch.nn.Module`` (through workspace classes, imports, or a known torch class)."""
        known = self._is_module.get(key)
        if known is not None:
            return known
        self._is_module[key] = False  # cycles
        summary = self.files.class_summary(key)
        result = False
        if summary is not None:
            for base in summary.bases:
                if base is None:
                    continue
                base_key = self.files.resolve_class(key[0], base)
                if base_key is not None:
                    result = self.is_module_class(base_key)
                elif base.level == 0:
                    result = _is_external_module_base(base.dotted)
                if result:
                    break
        self._is_module[key] = result
        return result

    def mro(self, key: ClassKey) -> tuple[tuple[ClassKey, ...], bool]:
        """The workspace classes of ``key``'s MRO (depth-first, left to right, duplicates dropped), and whether
        every base is known (workspace classes, ``object``, ``torch.nn.Module``): if not, attributes may come from
        code we cannot see."""

        def compute() -> tuple[tuple[ClassKey, ...], bool]:
            order: list[ClassKey] = []
            complete = True
            stack = [key]
            while stack:
                current = stack.pop()
                if current in order:
                    continue
                order.append(current)
                summary = self.files.class_summary(current)
                if summary is None:
                    continue
                bases: list[ClassKey] = []
                for base in summary.bases:
                    base_key = self.files.resolve_class(current[0], base)
                    if base_key is not None:
                        bases.append(base_key)
                    elif not _is_plain_base(base):
                        complete = False
                stack.extend(reversed(bases))
            return tuple(order), complete

        known = self._mros.get(key)
        if known is None:
            known = self._mros[key] = compute()
        return known

    def linked_owner(self, key: ClassKey, attr: str | None = None) -> ClassKey | None:
        """The class ``attr`` (any attribute, when None) of ``key`` holds through an ``__init_subclass__`` link
        (:func:`owner_links`): for the nearest class of ``key``'s MRO nested in a class ``E`` under a name a strict
        base of ``E`` links, ``E`` (``Block.Config._owner`` is ``Block``; a config subclassing ``Block.Config``
        inherits it)."""
        for config in self.mro(key)[0]:
            enclosing, _, nested = config[1].rpartition(".")
            if not enclosing or self.files.class_summary((config[0], enclosing)) is None:
                continue
            for base in self.mro((config[0], enclosing))[0][1:]:
                summary = self.files.class_summary(base)
                if summary is not None and any(
                    name == nested and attr in (None, linked) for name, linked in summary.owner_links
                ):
                    return config[0], enclosing
        return None

    def find_method(
        self, key: ClassKey, name: str, after: ClassKey | None = None
    ) -> tuple[ClassKey, MethodSummary] | None:
        """The method ``name`` as ``key``'s instances see it (``after``: start past that class, for ``super()``)."""
        memo_key = (key, name, after)
        if memo_key in self._found_methods:
            return self._found_methods[memo_key]
        order, _ = self.mro(key)
        if after is not None and after in order:
            order = order[order.index(after) + 1 :]
        found: tuple[ClassKey, MethodSummary] | None = None
        for current in order:
            method = self._method_table(current).get(name)
            if method is not None:
                found = current, method
                break
        self._found_methods[memo_key] = found
        return found

    def _method_table(self, key: ClassKey) -> dict[str, MethodSummary]:
        table = self._methods.get(key)
        if table is None:
            summary = self.files.class_summary(key)
            table = self._methods[key] = (
                {} if summary is None else {m.name: m for m in reversed(summary.methods) if m.kind != "setter"}
            )
        return table

    def init_attr(self, key: ClassKey, name: str) -> tuple[ClassKey, AttrInit] | None:
        """The ``__init__`` assignment of ``self.<name>`` that instances of ``key`` run (first in MRO order)."""
        for current in self.mro(key)[0]:
            summary = self.files.class_summary(current)
            attr = summary.init_attr(name) if summary is not None else None
            if attr is not None:
                return current, attr
        return None

    def starts_passing(self, key: ClassKey, tests: tuple[tuple[str, str, bool], ...]) -> bool:
        """Instances of ``key`` leave ``__init__`` passing every ``self.<attr>`` test of ``tests`` (``NodeAt.requires``
        form) by a literal value: code guarded by those self-resetting tests runs on the first call."""
        for name, kind, expected in tests:
            found = self.init_attr(key, name.removeprefix(SELF_FLAG))
            literal = exprs.plain_literal(found[1].value_text) if found is not None else None
            if literal is None or exprs.holds(literal, kind) != expected:
                return False
        return bool(tests)

    def is_autograd_function(self, key: ClassKey) -> bool:
        """``key`` derives from ``torch.autograd.Function`` (its ``apply`` runs its static ``forward``)."""
        for owner in self.mro(key)[0]:
            summary = self.files.class_summary(owner)
            for base in summary.bases if summary is not None else ():
                if base is not None and base.level == 0 and base.dotted in AUTOGRAD_FUNCTIONS:
                    return True
        return False

    def subclasses(self, key: ClassKey) -> tuple[ClassKey, ...]:
        """The workspace classes that derive from ``key`` (directly or not), in file order."""
        if self._subclasses is None:
            direct: dict[ClassKey, list[ClassKey]] = {}
            for sub, summary in self.files.classes():
                for base in summary.bases:
                    base_key = self.files.resolve_class(sub[0], base)
                    if base_key is not None and base_key != sub:
                        direct.setdefault(base_key, []).append(sub)
            self._subclasses = direct
        found = self._all_subclasses.get(key)
        if found is None:
            seen: dict[ClassKey, None] = {}  # ordered: breadth first from the direct subclasses
            pending = deque(self._subclasses.get(key, ()))
            while pending:
                current = pending.popleft()
                if current not in seen and current != key:
                    seen[current] = None
                    pending.extend(self._subclasses.get(current, ()))
            found = self._all_subclasses[key] = tuple(seen)
        return found


def owner_links(node: ast.ClassDef) -> tuple[tuple[str, str], ...]:
    """What :attr:`ClassSummary.owner_links` records: in ``__init_subclass__(cls)``, ``<nested>.<attr> = cls`` where
    ``<nested>`` is the subclass's own nested class, read as ``cls.__dict__["N"]``, ``vars(cls)["N"]``,
    ``getattr(cls, "N")`` or ``cls.N`` (directly or through a local name)."""
    hook = next(
        (s for s in node.body if isinstance(s, ast.FunctionDef) and s.name == "__init_subclass__" and s.args.args),
        None,
    )
    if hook is None:
        return ()
    cls = hook.args.args[0].arg
    nested: dict[str, str] = {}  # local name -> the nested class it holds
    links: list[tuple[str, str]] = []
    for statement in ast.walk(hook):
        if not isinstance(statement, ast.Assign) or len(statement.targets) != 1:
            continue
        target = statement.targets[0]
        if isinstance(target, ast.Name):
            name = _nested_read(statement.value, cls)
            if name is not None:
                nested[target.id] = name
        elif isinstance(target, ast.Attribute) and isinstance(statement.value, ast.Name) and statement.value.id == cls:
            holder = target.value
            name = nested.get(holder.id) if isinstance(holder, ast.Name) else _nested_read(holder, cls)
            if name is not None:
                links.append((name, target.attr))
    return tuple(links)


def _nested_read(expr: ast.expr, cls: str) -> str | None:
    """``N`` for ``cls.__dict__["N"]``, ``vars(cls)["N"]``, ``getattr(cls, "N")`` or ``cls.N``."""
    if isinstance(expr, ast.Subscript) and isinstance(key := expr.slice, ast.Constant) and isinstance(key.value, str):
        mapping = expr.value
        if isinstance(mapping, ast.Attribute) and mapping.attr == "__dict__" and _is_name(mapping.value, cls):
            return key.value
        if isinstance(mapping, ast.Call) and _is_name(mapping.func, "vars") and len(mapping.args) == 1:
            return key.value if _is_name(mapping.args[0], cls) else None
    if isinstance(expr, ast.Call) and _is_name(expr.func, "getattr") and len(expr.args) == 2:
        owner, key = expr.args
        if _is_name(owner, cls) and isinstance(key, ast.Constant) and isinstance(key.value, str):
            return key.value
    if isinstance(expr, ast.Attribute) and _is_name(expr.value, cls) and expr.attr[:1].isupper():
        return expr.attr
    return None


def _is_name(expr: ast.expr, name: str) -> bool:
    return isinstance(expr, ast.Name) and expr.id == name


def _is_plain_base(base: Ref | None) -> bool:
    """A base that defines no instance attributes a subclass could rely on."""
    if base is None or base.level != 0:
        return False
    dotted = base.dotted
    return dotted in TORCH_MODULE_BASES or dotted in ("object", "abc.ABC") or dotted.startswith("typing.")


def _is_external_module_base(dotted: str) -> bool:
    """A base outside the workspace that is an ``nn.Module``: ``torch.nn.Module``, ``torch.nn.Linear``,
    ``pl.LightningModule``, ``transformers.PreTrainedModel``."""
    last = dotted.rpartition(".")[2]
    if dotted.startswith("torch.nn."):
        return last[:1].isupper() and last != "Parameter"
    return last in _EXTERNAL_MODULE_BASES or (last.endswith("Module") and last != "ModuleType")
