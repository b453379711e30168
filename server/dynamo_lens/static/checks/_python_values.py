"""What the code inside one function does, as Dynamo sees it: which expressions are tensors, which are Python
scalars of which kind, and which statements Dynamo actually traces.

Shared by the checks about code inside compiled regions (DL204, DL205, DL301, DL302). Pure functions over ``ast``
nodes; names are resolved through a ``resolve`` callable (``FileContext.resolve``), so aliases such as
``import torch as T`` are understood.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Iterator
from typing import Literal

Resolve = Callable[[ast.AST], "str | None"]
"""``FileContext.resolve``: the absolute dotted name an expression refers to (``torch.nonzero``), or None."""

ValueKind = Literal["int", "float", "bool", "str", "none", "tensor", "list", "tuple", "unknown"]

SCOPE_NODES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
IS_COMPILING = frozenset({"torch.compiler.is_compiling", "torch._dynamo.is_compiling"})

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


def body_nodes(function: ast.FunctionDef | ast.AsyncFunctionDef, resolve: Resolve) -> Iterator[ast.AST]:
    """Every node Dynamo traces when it runs ``function``, in source order.

    Nested ``def``/``class`` bodies are separate scopes and are not entered (their decorators and defaults are).
    The branch of ``if torch.compiler.is_compiling():`` that runs only in eager mode is skipped: Dynamo evaluates
    the call to a constant while tracing."""
    for statement in function.body:
        yield from _walk(statement, resolve)


def _walk(node: ast.AST, resolve: Resolve) -> Iterator[ast.AST]:
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        if isinstance(current, SCOPE_NODES):
            children: list[ast.AST] = [*current.decorator_list]
            if not isinstance(current, ast.ClassDef):
                children += [*current.args.defaults, *(d for d in current.args.kw_defaults if d is not None)]
        elif isinstance(current, ast.If) and (eager_only := _eager_only_branch(current, resolve)) is not None:
            children = [current.test, *(current.orelse if eager_only is current.body else current.body)]
        else:
            children = list(ast.iter_child_nodes(current))
        stack.extend(reversed(children))


def _eager_only_branch(node: ast.If, resolve: Resolve) -> list[ast.stmt] | None:
    test = node.test
    negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
    if negated:
        test = test.operand  # type: ignore[attr-defined]
    if isinstance(test, ast.Call) and resolve(test.func) in IS_COMPILING:
        return node.body if negated else node.orelse
    return None


def local_names(function: ast.FunctionDef | ast.AsyncFunctionDef, nodes: Iterable[ast.AST]) -> set[str]:
    """Names local to ``function``: parameters and names it binds, minus ``global``/``nonlocal`` declarations."""
    args = function.args
    names = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
    names |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
    declared: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            declared.update(node.names)
        elif isinstance(node, SCOPE_NODES) and node is not function:
            names.add(node.name)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).partition(".")[0])
    return names - declared


class TensorInference:
    """Which expressions of one function are tensors: ``torch.*`` calls, tensor methods, arguments annotated
    ``torch.Tensor``, arithmetic/comparisons/subscripts of tensors, and local names only ever assigned tensors."""

    def __init__(self, function: ast.FunctionDef | ast.AsyncFunctionDef, nodes: list[ast.AST], resolve: Resolve):
        self.resolve = resolve
        args = function.args
        self.names: set[str] = {
            a.arg
            for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)
            if a.annotation is not None and resolve(a.annotation) == "torch.Tensor"
        }
        assigned: dict[str, list[ast.expr]] = {}
        for node in nodes:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                assigned.setdefault(node.targets[0].id, []).append(node.value)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
                assigned.setdefault(node.target.id, []).append(node.value)
            elif isinstance(node, (ast.For, ast.AsyncFor, ast.withitem, ast.NamedExpr)):
                for target in _bound_names(node):
                    assigned.setdefault(target, []).append(ast.Constant(None))  # not provably a tensor
        # Two rounds are enough for `y = torch.relu(x); z = y * 2`; more would chase rarely useful chains.
        for _ in range(2):
            self.names |= {n for n, values in assigned.items() if all(self.is_tensor(v) for v in values)}

    def is_tensor(self, expr: ast.AST) -> bool:
        if isinstance(expr, ast.Name):
            return expr.id in self.names
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


def _is_torch_tensor_function(dotted: str) -> bool:
    for namespace in TENSOR_NAMESPACES:
        name = dotted.removeprefix(namespace)
        if name != dotted and "." not in name:
            return not (name.startswith(("is_", "get_", "set_", "_")) or name in NOT_TENSOR_FUNCTIONS)
    return False


def _bound_names(node: ast.AST) -> Iterator[str]:
    target = (
        node.target
        if isinstance(node, (ast.For, ast.AsyncFor, ast.NamedExpr))
        else getattr(node, "optional_vars", None)
    )
    if target is not None:
        yield from (n.id for n in ast.walk(target) if isinstance(n, ast.Name))


def value_kind(expr: ast.AST, resolve: Resolve, known: Callable[[str], ValueKind] | None = None) -> ValueKind:
    """The kind of Python value ``expr`` evaluates to, when it is evident from the expression itself."""
    if isinstance(expr, ast.Constant):
        value = expr.value
        if value is None:
            return "none"
        if isinstance(value, bool):
            return "bool"
        if isinstance(value, int):
            return "int"
        if isinstance(value, float):
            return "float"
        return "str" if isinstance(value, str) else "unknown"
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
    the object's kind), ``unknown`` otherwise."""
    found = set(kinds) - {"unknown"}
    if len(found) > 1:
        found.discard("none")
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
