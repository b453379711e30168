"""What the code inside one function does, as Dynamo sees it: which expressions are tensors, which are Python
scalars of which kind, and which statements Dynamo actually traces.

Shared by the checks about code inside compiled regions (DL204, DL205, DL301, DL302). Pure functions over ``ast``
nodes; names are resolved through a ``resolve`` callable (``FileContext.resolve``), so aliases such as
``import torch as T`` are understood.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Literal

from dynamo_lens.static.exprs import constant_kind

Resolve = Callable[[ast.AST], "str | None"]
"""``FileContext.resolve``: the absolute dotted name an expression refers to (``torch.nonzero``), or None."""

ValueKind = Literal["int", "float", "bool", "str", "none", "tensor", "list", "tuple", "unknown"]


# Tensor methods whose result is again a tensor (so a branch on it is data-dependent).
TENSOR_METHODS = frozenset(
    {
        "abs", "all", "amax", "amin", "any", "argmax", "argmin", "bool", "clamp", "clip", "clone", "contiguous",
        "count_nonzero", "cpu", "cuda", "cumsum", "detach", "double", "eq", "exp", "flatten", "float", "ge", "gt",
        "half", "isclose", "isfinite", "isinf", "isnan", "le", "log", "logical_and", "logical_not", "logical_or",
        "long", "lt", "masked_fill", "matmul", "max", "mean", "median", "min", "mm", "nanmean", "nansum", "ne",
        "norm", "pow", "prod", "relu", "reshape", "sigmoid", "sign", "softmax", "sqrt", "squeeze", "std", "sum",
        "tanh", "to", "transpose", "unsqueeze", "var", "view",
    }
)  # fmt: skip
# Functions under these torch namespaces return tensors, except the predicates and helpers listed below.
TENSOR_NAMESPACES = ("torch.", "torch.nn.functional.", "torch.linalg.", "torch.special.", "torch.fft.")
NOT_TENSOR_FUNCTIONS = frozenset(
    {
        "allclose", "are_deterministic_algorithms_enabled", "can_cast", "compile", "cond", "device", "dtype",
        "enable_grad", "equal", "finfo", "iinfo", "inference_mode", "manual_seed", "no_grad", "numel",
        "promote_types", "result_type", "seed", "set_grad_enabled", "typename", "use_deterministic_algorithms",
        "while_loop", "Size", "Generator",
    }
)  # fmt: skip
PYTHON_CONVERSIONS: dict[str, ValueKind] = {
    "int": "int",
    "len": "int",
    "round": "int",
    "float": "float",
    "str": "str",
    "repr": "str",
    "bool": "bool",
    "list": "list",
    "tuple": "tuple",
}


class TensorInference:
    """Which expressions of one function are tensors: ``torch.*`` calls, tensor methods, arguments annotated
    ``torch.Tensor``, arithmetic/comparisons/subscripts of tensors, and local names only ever assigned tensors
    (decided lazily, name by name, when a check asks)."""

    def __init__(
        self, function: ast.FunctionDef | ast.AsyncFunctionDef, statements: Sequence[ast.stmt], resolve: Resolve
    ) -> None:
        self.resolve = resolve
        args = function.args
        self.annotated = {
            a.arg
            for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)
            if a.annotation is not None and resolve(a.annotation) == "torch.Tensor"
        }
        self.statements = statements
        self._assigned: dict[str, list[ast.expr]] | None = None
        self._names: dict[str, bool] = {}
        """Memo of local names already decided."""
        self._deciding: list[str] = []

    def _name_is_tensor(self, name: str) -> bool:
        if name in self.annotated:
            return True
        if name in self._names:
            return self._names[name]
        if name in self._deciding:
            # `y = y + 1` while deciding `y`: assume the name itself is a tensor (its other values decide); a name
            # further out in the chain counts as not proven, so nothing undecided is ever cached as a tensor.
            return name == self._deciding[-1]
        if self._assigned is None:
            self._assigned = self._collect_assignments()
        values = self._assigned.get(name) or []
        self._deciding.append(name)
        # Every value is a tensor, and at least one without help from the name itself (`x = x // 2` on an
        # argument proves nothing).
        decided = all(self.is_tensor(v) for v in values) and any(
            self.is_tensor(v) for v in values if not _mentions(v, name)
        )
        self._deciding.pop()
        self._names[name] = decided
        return decided

    def _collect_assignments(self) -> dict[str, list[ast.expr]]:
        assigned: dict[str, list[ast.expr]] = {}
        unknown = ast.Constant(None)  # a value that is not provably a tensor
        for node in self.statements:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                assigned.setdefault(node.targets[0].id, []).append(node.value)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
                assigned.setdefault(node.target.id, []).append(node.value)
            else:
                for target in _other_targets(node):
                    assigned.setdefault(target, []).append(unknown)
        return assigned

    def is_tensor(self, expr: ast.AST) -> bool:
        if isinstance(expr, ast.Name):
            return self._name_is_tensor(expr.id)
        if isinstance(expr, ast.Call):
            func = expr.func
            if isinstance(func, ast.Attribute) and func.attr in TENSOR_METHODS and self.resolve(func) is None:
                return True
            dotted = self.resolve(func)
            return dotted is not None and _is_torch_tensor_function(dotted)
        if isinstance(expr, ast.BinOp):
            return self.is_tensor(expr.left) or self.is_tensor(expr.right)
        if isinstance(expr, ast.UnaryOp):
            return not isinstance(expr.op, ast.Not) and self.is_tensor(expr.operand)
        if isinstance(expr, ast.Compare):
            if any(isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in expr.ops):
                return False
            return any(self.is_tensor(e) for e in (expr.left, *expr.comparators))
        if isinstance(expr, ast.Subscript):
            return self.is_tensor(expr.value)
        return False

    def is_tensor_condition(self, expr: ast.AST) -> bool:
        """``expr`` used as a branch condition needs the truth value of a tensor."""
        if isinstance(expr, ast.BoolOp):
            return any(self.is_tensor_condition(v) for v in expr.values)
        if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Not):
            return self.is_tensor_condition(expr.operand)
        return self.is_tensor(expr)


def _mentions(expr: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(expr))


def _is_torch_tensor_function(dotted: str) -> bool:
    for namespace in TENSOR_NAMESPACES:
        name = dotted.removeprefix(namespace)
        if name != dotted and "." not in name:
            return not (name.startswith(("is_", "get_", "set_", "_")) or name in NOT_TENSOR_FUNCTIONS)
    return False


def _other_targets(node: ast.stmt) -> Iterator[str]:
    """Names bound by loops, ``with ... as``, tuple unpacking and augmented assignment."""
    targets: list[ast.AST] = []
    if isinstance(node, (ast.For, ast.AsyncFor, ast.AugAssign)):
        targets = [node.target]
    elif isinstance(node, (ast.With, ast.AsyncWith)):
        targets = [item.optional_vars for item in node.items if item.optional_vars is not None]
    elif isinstance(node, ast.Assign) and (len(node.targets) > 1 or not isinstance(node.targets[0], ast.Name)):
        targets = list(node.targets)
    for target in targets:
        yield from (n.id for n in ast.walk(target) if isinstance(n, ast.Name))


def value_kind(expr: ast.AST, resolve: Resolve, known: Callable[[str], ValueKind] | None = None) -> ValueKind:
    """The kind of Python value ``expr`` evaluates to, when it is evident from the expression itself."""
    if isinstance(expr, ast.Constant):
        return constant_kind(expr.value)
    if isinstance(expr, ast.JoinedStr):
        return "str"
    if isinstance(expr, ast.Compare) or (isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Not)):
        return "bool"
    if isinstance(expr, ast.BoolOp):
        return _merge(value_kind(v, resolve, known) for v in expr.values)
    if isinstance(expr, ast.UnaryOp):
        return value_kind(expr.operand, resolve, known)
    if isinstance(expr, ast.BinOp):
        left, right = value_kind(expr.left, resolve, known), value_kind(expr.right, resolve, known)
        if "tensor" in (left, right) or "unknown" in (left, right):
            return "tensor" if "tensor" in (left, right) else "unknown"
        if isinstance(expr.op, ast.Div) and {left, right} <= {"int", "float", "bool"}:
            return "float"
        if left == right:
            return left
        return "float" if {left, right} <= {"int", "float", "bool"} else "unknown"
    if isinstance(expr, (ast.List, ast.ListComp)):
        return "list"
    if isinstance(expr, ast.Tuple):
        return "tuple"
    if isinstance(expr, ast.Name) and known is not None:
        return known(expr.id)
    if isinstance(expr, ast.Call):
        if isinstance(expr.func, ast.Name) and expr.func.id in PYTHON_CONVERSIONS:
            return PYTHON_CONVERSIONS[expr.func.id]
        dotted = resolve(expr.func)
        if dotted is not None and _is_torch_tensor_function(dotted):
            return "tensor"
    return "unknown"


def _merge(kinds: Iterable[ValueKind]) -> ValueKind:
    found = set(kinds)
    return found.pop() if len(found) == 1 else "unknown"


def merge_kinds(kinds: Iterable[ValueKind]) -> ValueKind:
    """One kind for a name bound several times: the known kinds if they agree (``none`` then an object counts as
    the object's kind, ints mixed with floats as ``float``), ``unknown`` otherwise."""
    found = set(kinds) - {"unknown"}
    if len(found) > 1:
        found.discard("none")
    if found == {"int", "float"}:
        return "float"  # `LR = 0` then floats: a float that started as an int
    return found.pop() if len(found) == 1 else "unknown"


def range_loop_names(nodes: Iterable[ast.AST]) -> set[str]:
    """Loop variables of ``for name in range(...)`` (ints)."""
    return {
        node.target.id
        for node in nodes
        if isinstance(node, ast.For)
        and isinstance(node.target, ast.Name)
        and isinstance(node.iter, ast.Call)
        and isinstance(node.iter.func, ast.Name)
        and node.iter.func.id == "range"
    }
