"""What the code inside one function does, as Dynamo sees it: which expressions are tensors, which are Python
scalars of which kind, and which statements Dynamo actually traces.

Shared by the checks about code inside compiled regions (DL204, DL205, DL301, DL302). Pure functions over ``ast``
nodes; names are resolved through a ``resolve`` callable (``FileContext.resolve``), so aliases such as
``import torch as T`` are understood.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Iterator, Sequence

from dynamo_lens.static.exprs import constant_kind
from dynamo_lens.static.summary import AttrKind

Resolve = Callable[[ast.AST], "str | None"]
"""``FileContext.resolve``: the absolute dotted name an expression refers to (``torch.nonzero``), or None."""

ValueKind = AttrKind
"""The kind of a value: a Python scalar, a tensor, a container, a module, or ``unknown``."""
SCALAR_KINDS: frozenset[ValueKind] = frozenset({"int", "float", "bool", "str"})
"""The Python scalars Dynamo guards by value."""


# Tensor methods whose result is again a tensor (so a branch on it is data-dependent).
TENSOR_METHODS = frozenset(
    {
        "abs", "all", "amax", "amin", "any", "argmax", "argmin", "bool", "clamp", "clip", "clone", "contiguous",
        "expand", "int", "new_empty", "new_full", "new_ones", "new_zeros", "permute", "type_as", "cumprod", "bmm",
        "chunk", "split", "unbind", "topk", "sort", "gather", "index_select", "masked_select", "where", "sin", "cos",
        "count_nonzero", "cpu", "cuda", "cumsum", "detach", "double", "eq", "exp", "flatten", "float", "ge", "gt",
        "half", "isclose", "isfinite", "isinf", "isnan", "le", "log", "logical_and", "logical_not", "logical_or",
        "long", "lt", "masked_fill", "matmul", "max", "mean", "median", "min", "mm", "nanmean", "nansum", "ne",
        "norm", "pow", "prod", "relu", "reshape", "sigmoid", "sign", "softmax", "sqrt", "squeeze", "std", "sum",
        "tanh", "to", "transpose", "unsqueeze", "var", "view",
    }
)  # fmt: skip
BOOL_RESULTS = frozenset(
    {
        "bool", "eq", "ne", "gt", "ge", "lt", "le", "isnan", "isinf", "isfinite", "isclose", "isneginf", "isposinf",
        "logical_and", "logical_or", "logical_not", "logical_xor", "isin", "signbit",
    }
)  # fmt: skip
"""Tensor methods and ``torch`` functions that return a boolean tensor."""
SAME_DTYPE_FACTORIES = frozenset({"zeros_like", "ones_like", "empty_like", "full_like"})
"""``torch`` functions that, without ``dtype=``, return a tensor of their first argument's dtype."""
SAME_DTYPE_METHODS = frozenset({"clone", "detach", "contiguous"})
"""Tensor methods that, called without arguments, return a tensor of the same dtype."""
SAME_SHAPE_FACTORIES = frozenset({*SAME_DTYPE_FACTORIES, "rand_like", "randn_like"})
"""``torch`` functions that return a tensor of their first argument's shape."""
SAME_SHAPE_METHODS = frozenset(
    {*SAME_DTYPE_METHODS, "float", "half", "bfloat16", "double", "to", "type_as", "mul", "add", "sub", "div", "neg",
     "abs", "sign", "sqrt", "square", "exp", "lerp"}
)  # fmt: skip
"""Tensor methods that return a tensor of their receiver's shape (elementwise with a scalar, casts, copies)."""
SAME_SHAPE_ATTRIBUTES = frozenset({"grad", "data"})
"""Tensor attributes that hold a tensor of the tensor's shape."""
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
    ``torch.Tensor``, arithmetic/comparisons/subscripts of tensors, and local names only ever assigned tensors or
    unpacked from one (``lo, hi = torch.aminmax(x)``; decided lazily, name by name, when a check asks)."""

    def __init__(
        self,
        function: ast.FunctionDef | ast.AsyncFunctionDef,
        statements: Sequence[ast.stmt],
        resolve: Resolve,
        passed: frozenset[str] = frozenset(),
    ) -> None:
        self.resolve = resolve
        args = function.args
        self.annotated = {
            a.arg
            for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)
            if a.annotation is not None and resolve(a.annotation) == "torch.Tensor"
        } | passed
        """Parameters annotated ``torch.Tensor``, and those every call passes a tensor (``passed``)."""
        self.statements = statements
        self._assigned: dict[str, list[ast.expr]] | None = None
        self._names: dict[str, bool] = {}
        """Memo of local names already decided."""
        self._deciding: list[str] = []
        self._deciding_bool: list[str] = []
        self._bool_names: dict[str, bool] = {}

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
            elif isinstance(node, ast.Assign) and len(node.targets) == 1 and _flat_names(node.targets[0]):
                # `lo, hi = torch.aminmax(x)`, `h, w = x.shape`: each name holds an element of the value
                for index, element in enumerate(_flat_names(node.targets[0])):
                    item = ast.Subscript(node.value, ast.Constant(index), ast.Load())
                    assigned.setdefault(element, []).append(item)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
                assigned.setdefault(node.target.id, []).append(node.value)
            else:
                for target in _other_targets(node):
                    assigned.setdefault(target, []).append(unknown)
        return assigned

    def is_tensor(self, expr: ast.AST) -> bool:
        return kind_of(expr, self.resolve, self._name_kind) == "tensor"

    def _name_kind(self, name: str) -> ValueKind:
        return "tensor" if self._name_is_tensor(name) else "unknown"

    def is_bool_tensor(self, expr: ast.AST) -> bool:
        """``expr`` is a boolean tensor: a comparison of tensors (``labels != -100``), ``~``, ``&``, ``|`` of boolean
        tensors, a predicate method or function (``t.isnan()``, ``torch.isfinite(t)``, ``t.bool()``), a factory
        called with ``dtype=torch.bool``, or a local name only ever assigned one of those."""
        if isinstance(expr, ast.Compare):
            return not any(isinstance(op, ast.Is | ast.IsNot | ast.In | ast.NotIn) for op in expr.ops) and (
                self.is_tensor(expr)
            )
        if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Invert):
            return self.is_bool_tensor(expr.operand)
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.BitAnd | ast.BitOr | ast.BitXor):
            return self.is_bool_tensor(expr.left) and self.is_bool_tensor(expr.right)
        if isinstance(expr, ast.Call):
            func = expr.func
            dotted = self.resolve(func)
            if any(k.arg == "dtype" and self.resolve(k.value) == "torch.bool" for k in expr.keywords):
                return (dotted is not None and dotted.startswith("torch.")) or (
                    isinstance(func, ast.Attribute) and self.is_tensor(func.value)
                )
            if dotted is not None:
                last = dotted.rpartition(".")[2]
                if dotted.startswith("torch.") and last in SAME_DTYPE_FACTORIES and expr.args and not expr.keywords:
                    return self.is_bool_tensor(expr.args[0])  # `torch.zeros_like(mask)` is a boolean tensor too
                return last in BOOL_RESULTS and dotted.startswith("torch.")
            if isinstance(func, ast.Attribute) and func.attr in SAME_DTYPE_METHODS and not expr.args:
                return self.is_bool_tensor(func.value)
            return isinstance(func, ast.Attribute) and func.attr in BOOL_RESULTS and self.is_tensor(func.value)
        if isinstance(expr, ast.Name) and expr.id in self._deciding_bool:
            return True  # a binding built from the name itself (`m = torch.zeros_like(m)`): its other bindings decide
        if isinstance(expr, ast.Name) and expr.id not in self.annotated:
            known = self._bool_names.get(expr.id)
            if known is not None:
                return known
            if self._assigned is None:
                self._assigned = self._collect_assignments()
            values = [v for v in self._assigned.get(expr.id) or [] if not _mentions(v, expr.id)]
            self._deciding_bool.append(expr.id)
            decided = bool(values) and all(self.is_bool_tensor(v) for v in values)
            self._deciding_bool.pop()
            if not self._deciding_bool:
                self._bool_names[expr.id] = decided  # only outermost answers: inner ones assumed a cycle away
            return decided
        return False

    def integer(self, expr: ast.AST) -> bool | None:
        """Whether the tensor ``expr`` has an integer dtype: True for ``torch.arange`` of ints, ``torch.randint``,
        index results (``argmax``), ``.long()``, ``dtype=torch.int64``; False for ``.float()``, ``torch.randn``,
        ``dtype=torch.float32``; None when the code does not say (or a local name's values disagree)."""
        if isinstance(expr, ast.Name) and expr.id not in self.annotated:
            if self._assigned is None:
                self._assigned = self._collect_assignments()
            values = [v for v in self._assigned.get(expr.id) or [] if not _mentions(v, expr.id)]
            found = {self.integer(v) for v in values}
            return found.pop() if len(found) == 1 else None
        if not isinstance(expr, ast.Call):
            return None
        dtype = next((k.value for k in expr.keywords if k.arg == "dtype"), None)
        func = expr.func
        if isinstance(func, ast.Attribute) and self.resolve(func) is None:
            if func.attr == "to" and self.is_tensor(func.value):
                dtype = dtype or (expr.args[0] if expr.args else None)
                return _integer_dtype(self.resolve(dtype)) if dtype is not None else None
            return INTEGER_METHODS.get(func.attr)  # `.long()`, `.float()`: whatever the receiver was
        dotted = self.resolve(func) or ""
        if dtype is not None:
            return _integer_dtype(self.resolve(dtype))
        if dotted == "torch.arange":
            return all(isinstance(a, ast.Constant) and type(a.value) is int for a in expr.args) or None
        return INTEGER_FUNCTIONS.get(dotted)

    def is_tensor_condition(self, expr: ast.AST) -> bool:
        """``expr`` used as a branch condition needs the truth value of a tensor."""
        if isinstance(expr, ast.BoolOp):
            return any(self.is_tensor_condition(v) for v in expr.values)
        if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Not):
            return self.is_tensor_condition(expr.operand)
        return self.is_tensor(expr)


INTEGER_METHODS: dict[str, bool] = {
    **dict.fromkeys(("long", "int", "short", "byte", "char", "argmax", "argmin", "argsort", "nonzero"), True),
    **dict.fromkeys(("float", "double", "half", "bfloat16"), False),
}
"""Tensor methods whose result's dtype is known: integer (True) or floating (False)."""
INTEGER_FUNCTIONS: dict[str, bool] = {
    **dict.fromkeys(("torch.randint", "torch.argmax", "torch.argmin", "torch.argsort", "torch.nonzero"), True),
    **dict.fromkeys(("torch.randn", "torch.rand", "torch.zeros", "torch.ones", "torch.empty", "torch.linspace"), False),
}
"""``torch`` functions whose result's dtype is known without a ``dtype=`` (default float32, or int64 indices)."""
INTEGER_DTYPES = frozenset(f"torch.{n}" for n in ("int8", "int16", "int32", "int64", "uint8", "int", "long", "short"))
FLOAT_DTYPES = frozenset(f"torch.{n}" for n in ("float16", "float32", "float64", "bfloat16", "float", "double", "half"))


def _integer_dtype(dotted: str | None) -> bool | None:
    if dotted in INTEGER_DTYPES:
        return True
    return False if dotted in FLOAT_DTYPES else None


def _mentions(expr: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(expr))


def _is_torch_tensor_function(dotted: str) -> bool:
    for namespace in TENSOR_NAMESPACES:
        name = dotted.removeprefix(namespace)
        if name != dotted and "." not in name:
            return not (name.startswith(("is_", "get_", "set_", "_")) or name in NOT_TENSOR_FUNCTIONS)
    return False


def _flat_names(target: ast.expr) -> list[str]:
    """The names of ``a, b = ...`` (a flat tuple or list of plain names), else nothing."""
    if not isinstance(target, ast.Tuple | ast.List) or not all(isinstance(e, ast.Name) for e in target.elts):
        return []
    return [e.id for e in target.elts if isinstance(e, ast.Name)]


def _other_targets(node: ast.stmt) -> Iterator[str]:
    """Names bound by loops, ``with ... as``, tuple unpacking and augmented assignment."""
    targets: list[ast.AST] = []
    if isinstance(node, (ast.For, ast.AsyncFor, ast.AugAssign)):
        targets = [node.target]
    elif isinstance(node, (ast.With, ast.AsyncWith)):
        targets = [item.optional_vars for item in node.items if item.optional_vars is not None]
    elif isinstance(node, ast.Assign) and (len(node.targets) > 1 or not isinstance(node.targets[0], ast.Name)):
        if len(node.targets) == 1 and _flat_names(node.targets[0]):
            return  # each name holds an element of the value (`_collect_assignments`)
        targets = list(node.targets)
    for target in targets:
        yield from _bound(target)


def _bound(target: ast.AST) -> Iterator[str]:
    """The names a target binds: ``a, (b, *c)``; ``y.attr = ...`` and ``y[i] = ...`` bind none (``y`` keeps its
    value)."""
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, ast.Tuple | ast.List):
        for element in target.elts:
            yield from _bound(element)
    elif isinstance(target, ast.Starred):
        yield from _bound(target.value)


INT_METHODS = frozenset({"size", "dim", "numel", "ndimension", "nelement", "__len__"})
"""Methods of a tensor that return a Python int (``x.size(1)``; ``x.size()`` is a ``torch.Size``)."""
RECEIVER_METHODS = frozenset({"to", "cuda", "cpu", "float", "half", "double", "bfloat16", "type"})
"""Methods that return something of their receiver's kind (a tensor's or a module's ``.to()``)."""
CONTAINER_CALLS: dict[str, ValueKind] = {
    "dict": "dict", "set": "set", "collections.deque": "list", "collections.OrderedDict": "dict",
    "collections.defaultdict": "dict", "collections.Counter": "dict",
}  # fmt: skip
PARAMETER_CALLS = frozenset({"torch.nn.Parameter", "torch.nn.parameter.Parameter"})


def kind_of(expr: ast.AST | None, resolve: Resolve, known: Callable[[str], ValueKind] | None = None) -> ValueKind:
    """What kind of value ``expr`` evaluates to, as far as the expression says: the one classifier every check
    uses. ``known`` gives the kind of a plain name (a local, a parameter), when the caller knows it."""
    if expr is None:
        return "unknown"
    if isinstance(expr, ast.Constant):
        return constant_kind(expr.value)
    if isinstance(expr, ast.JoinedStr):
        return "str"
    if isinstance(expr, ast.Name):
        return known(expr.id) if known is not None else "unknown"
    if isinstance(expr, ast.UnaryOp):
        return "bool" if isinstance(expr.op, ast.Not) else kind_of(expr.operand, resolve, known)
    if isinstance(expr, ast.BoolOp):
        return _merge(kind_of(v, resolve, known) for v in expr.values)
    if isinstance(expr, ast.Compare):
        if any(isinstance(op, ast.Is | ast.IsNot | ast.In | ast.NotIn) for op in expr.ops):
            return "bool"
        operands = (expr.left, *expr.comparators)
        return "tensor" if any(kind_of(o, resolve, known) == "tensor" for o in operands) else "bool"
    if isinstance(expr, ast.IfExp):
        return _merge((kind_of(expr.body, resolve, known), kind_of(expr.orelse, resolve, known)))
    if isinstance(expr, ast.BinOp):
        return _arithmetic(expr, kind_of(expr.left, resolve, known), kind_of(expr.right, resolve, known))
    if isinstance(expr, ast.List | ast.ListComp):
        return "list"
    if isinstance(expr, ast.Dict | ast.DictComp):
        return "dict"
    if isinstance(expr, ast.Set | ast.SetComp):
        return "set"
    if isinstance(expr, ast.Tuple):
        return "tuple"
    if isinstance(expr, ast.Subscript):
        if isinstance(expr.value, ast.Attribute) and expr.value.attr == "shape":
            return "int"
        return "tensor" if kind_of(expr.value, resolve, known) == "tensor" else "unknown"
    if isinstance(expr, ast.Call):
        return _call_kind(expr, resolve, known)
    return "unknown"


def _arithmetic(expr: ast.BinOp, left: ValueKind, right: ValueKind) -> ValueKind:
    if "tensor" in (left, right):
        return "tensor"
    numbers = {"int", "float", "bool"}
    if left in numbers and right in numbers:
        return "float" if "float" in (left, right) or isinstance(expr.op, ast.Div) else "int"
    return left if left == right and left in ("str", "list", "tuple") else "unknown"


def _call_kind(expr: ast.Call, resolve: Resolve, known: Callable[[str], ValueKind] | None) -> ValueKind:
    func = expr.func
    if isinstance(func, ast.Name) and func.id in PYTHON_CONVERSIONS:
        return PYTHON_CONVERSIONS[func.id]
    dotted = resolve(func) or (func.id if isinstance(func, ast.Name) else None)
    if dotted is not None:
        if dotted in CONTAINER_CALLS:
            return CONTAINER_CALLS[dotted]
        if dotted in PARAMETER_CALLS:
            return "parameter"
        if is_module_class(dotted):
            return "submodule"
        if _is_torch_tensor_function(dotted):
            return "tensor"
    if isinstance(func, ast.Attribute) and resolve(func) is None:
        if func.attr in INT_METHODS and (func.attr != "size" or expr.args):
            return "int"
        if func.attr in RECEIVER_METHODS:
            receiver = kind_of(func.value, resolve, known)
            return receiver if receiver in ("submodule", "parameter", "buffer") else "tensor"
        if func.attr in TENSOR_METHODS:
            return "tensor"
    return "unknown"


def is_module_class(dotted: str) -> bool:
    """``torch.nn.Linear`` and friends: a capitalised class under ``torch.nn`` other than ``Parameter``."""
    if not dotted.startswith("torch.nn.") or dotted in PARAMETER_CALLS:
        return False
    last = dotted.rpartition(".")[2]
    return last[:1].isupper() and ".functional." not in dotted and ".init." not in dotted


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
