"""What torch does, as the messages quote it: one place for every number, name and graph-break id a finding states.

Every fact here was measured on torch 2.13.0 (CPU wheel, ``backend="eager"``) by a test that runs the fixture under
real ``torch.compile`` (``tests/static/test_torch_agreement*.py``); a message never writes one of these by hand.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

TORCH_VERSION_ASSUMED = "2.13"
"""The torch release whose behaviour the messages describe."""
TORCH = f"torch {TORCH_VERSION_ASSUMED}"
"""How messages name it."""

RECOMPILE_LIMIT = 8
"""``torch._dynamo.config.recompile_limit`` (alias ``cache_size_limit``): compiles of a frame before it runs eagerly."""
ACCUMULATED_RECOMPILE_LIMIT = 256
"""``torch._dynamo.config.accumulated_recompile_limit`` (alias ``accumulated_cache_size_limit``): a cap on all the
entries of a frame, checked before ``recompile_limit`` (``torch/_dynamo/cache_size.py``,
``exceeds_recompile_limit``), so it decides where a project raises ``recompile_limit`` past it (measured: with
``recompile_limit = 64`` and ``accumulated_recompile_limit = 5``, 5 compiles and the limit)."""

NOT_MODULES = frozenset({"Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer"})
"""Capitalised names under ``torch.nn`` that are tensors, not modules."""


def is_torch_nn_module(dotted: str) -> bool:
    """``dotted`` names a ``torch.nn`` module class (``torch.nn.Linear``), as far as its name tells: a capitalised
    last name that is not a tensor class (``torch.nn.Parameter``)."""
    last = dotted.rpartition(".")[2]
    return dotted.startswith("torch.nn.") and last[:1].isupper() and last not in NOT_MODULES


MODULE_HOOK_REGISTRATIONS = frozenset(
    {
        "register_forward_hook",
        "register_forward_pre_hook",
        "register_full_backward_hook",
        "register_full_backward_pre_hook",
        "register_backward_hook",
    }
)
"""``nn.Module`` methods that add a hook to the module's hook dicts (what ``skip_nnmodule_hook_guards`` leaves
unguarded)."""

MAY_RETURN_INPUT = frozenset(
    {"view", "view_as", "reshape", "reshape_as", "detach", "to", "type", "type_as", "t", "transpose", "permute",
     "squeeze", "unsqueeze", "expand", "expand_as", "contiguous", "flatten", "unflatten", "narrow", "select",
     "as_strided", "split", "chunk", "unbind", "movedim", "swapaxes", "float", "half", "double", "bfloat16", "int",
     "long", "bool", "cpu", "cuda", "requires_grad_", "real", "imag", "diagonal", "squeeze_", "unsqueeze_"}
)  # fmt: skip
"""Tensor methods (and ``torch`` functions of the same name) that can return a view of their input or the input
itself: such a result is an inference tensor exactly when its input is one, whatever mode it is made in. Any other
tensor computed under ``torch.inference_mode()`` is an inference tensor, and outside it a normal one."""


@dataclass(frozen=True, slots=True)
class GraphBreak:
    """An entry of the graph-break registry (``torch/_dynamo/graph_break_registry.json``) and what to do about it."""

    gb_id: str
    gb_type: str
    advice: str
    lifted_by: str = ""
    """The ``torch._dynamo.config`` flag under which Dynamo traces the call instead (measured: no break)."""
    lifted_partly: str = ""
    """The inputs the flag lifts the break for, when it does not for all (``tolist()``: integer tensors)."""
    skips_function: bool = False
    """Dynamo gives up on the function the call is in (measured: nothing compiled for it), wherever the call sits."""
    deliberate: bool = False
    """The code asks for this break (``graph_break()``, a ``compiler.disable``d callee): a cost to know, not a
    mistake, unless it sits in a loop (where Dynamo gives up on the whole frame)."""

    def installed_id(self) -> str:
        """This break's id in the registry of the torch installed here (ids are renumbered between releases: the
        same ``gb_type`` has another id on 2.14); ``""`` when no torch is installed or its registry lacks the type."""
        return (installed_gb_ids() or {}).get(self.gb_type, "")

    def quoted(self) -> str:
        """``GB0124 "Unsupported Tensor.item() call ..."``, as messages cite it, with the installed torch's id."""
        gb_id = self.installed_id()
        if gb_id:
            return f'{gb_id} "{self.gb_type}"'
        if installed_gb_ids() is None:
            return f'"{self.gb_type}"; no torch is installed here to give its graph-break id'
        return f'"{self.gb_type}"'


@functools.cache
def installed_gb_ids() -> dict[str, str] | None:
    """``gb_type`` → graph-break id, read from ``torch/_dynamo/graph_break_registry.json`` of the torch installed
    beside Dynamo Lens (torch is not imported); None when there is none, or it ships no registry (before 2.8)."""
    import importlib.metadata  # here, not at import: the language server answers `initialize` without it

    try:
        torch_dir = importlib.metadata.distribution("torch").locate_file("torch")
    except importlib.metadata.PackageNotFoundError:
        return None
    from dynamo_lens.runtime.shim import load_gb_registry  # the shim's reader, loaded only when a message needs it

    by_type, _ = load_gb_registry(str(torch_dir))
    return by_type or None


PRINT = GraphBreak(
    "GB0059",
    "Failed to trace builtin operator",
    "move it out of the compiled code, or list it in `torch._dynamo.config.reorderable_logging_functions`",
)
RANGE_OF_TENSOR = GraphBreak(
    "GB0059",
    "Failed to trace builtin operator",
    "pass the count as a Python int, or replace the loop with tensor operations",
)
ITEM = GraphBreak(
    "GB0124",
    "Unsupported Tensor.item() call with capture_scalar_outputs=False",
    "keep the value as a tensor, or set `torch._dynamo.config.capture_scalar_outputs = True`",
    lifted_by="capture_scalar_outputs",
)
TOLIST = GraphBreak(
    "GB0109",
    "Tensor.tolist() with non-integer tensor",
    "keep the values as a tensor (GB0033 'Data dependent operator' for integer tensors)",
    lifted_by="capture_scalar_outputs",
    lifted_partly="integer tensors",
)
TOLIST_INTEGER = GraphBreak(
    "GB0033",
    "Data dependent operator",
    "keep the values as a tensor, or set `torch._dynamo.config.capture_scalar_outputs = True`",
    lifted_by="capture_scalar_outputs",
)
TOLIST_FLOAT = GraphBreak("GB0109", "Tensor.tolist() with non-integer tensor", "keep the values as a tensor")
LOGGER = GraphBreak(
    "GB0291",
    "logging.Logger method not supported for non-export cases",
    "log outside the compiled code, or add the method to `torch._dynamo.config.ignore_logging_functions` "
    "(it then does not run when compiled)",
)
LOGGING = GraphBreak(
    "GB4841", "Unsupported python_type() call", "log outside the compiled code (`logging` functions are not traced)"
)
SKIPPED = GraphBreak("GB0007", "Attempted to call function marked as skipped", "call it outside the compiled code")
DEEPCOPY = GraphBreak("GB4198", "Attempted to copy.deepcopy a tensor", "use `t.clone()`")
NONZERO = GraphBreak(
    "GB0036",
    "Dynamic shape operator",
    "use a fixed-shape form such as `torch.where(mask, x, 0)`, or set "
    "`torch._dynamo.config.capture_dynamic_output_shape_ops = True`",
    lifted_by="capture_dynamic_output_shape_ops",
)
IS_INFERENCE = GraphBreak(
    "GB0045",
    "Encountered tensor.is_inference() during tracing",
    "decide it outside the compiled code and pass the answer in (Dynamo cannot trace this test)",
)
AUTOGRAD_GRAD = GraphBreak(
    "GB9186",
    "using `torch.autograd.grad` with `torch._dynamo.config.trace_autograd_ops=False`",
    "take the gradient outside the compiled code, or set `torch._dynamo.config.trace_autograd_ops = True`",
    lifted_by="trace_autograd_ops",
)
RNN = GraphBreak(
    "GB0014",
    "Attempted to wrap RNN, GRU, or LSTM",
    "Dynamo does not trace these modules and runs the whole function eagerly: compile the layers around the "
    "recurrent module instead, or set `torch._dynamo.config.allow_rnn = True`",
    lifted_by="allow_rnn",
    skips_function=True,
)
DATA_SIZED = GraphBreak(
    "GB0036",
    "Dynamic shape operator",
    "its output size depends on the data: keep it out of the compiled code or use a fixed-shape form "
    "(`torch.where(mask, t, 0)`), or set `torch._dynamo.config.capture_dynamic_output_shape_ops = True`",
    lifted_by="capture_dynamic_output_shape_ops",
)
REPEATS_BY_TENSOR = GraphBreak(
    "GB0036",
    "Dynamic shape operator",
    "its output size is the sum of the repeats: pass it as `output_size=` when it is known, or set "
    "`torch._dynamo.config.capture_dynamic_output_shape_ops = True`",
    lifted_by="capture_dynamic_output_shape_ops",
)
USER_GRAPH_BREAK = GraphBreak(
    "GB0025",
    "Call to `torch._dynamo.graph_break()`",
    "it splits the graph on purpose: remove it when the split is no longer needed",
    deliberate=True,
)
DISABLED_CALL = GraphBreak(
    "GB0098",
    "Skip calling `torch.compiler.disable()`d function",
    "Dynamo runs the disabled function in Python between two graphs on every call; call it before or after the "
    "compiled code to keep one graph",
    deliberate=True,
)
DISABLED_METHOD = GraphBreak(
    "GB0099",
    "Skip inlining `torch.compiler.disable()`d function",
    "Dynamo runs the disabled method in Python between two graphs on every call; call it before or after the "
    "compiled code to keep one graph",
    deliberate=True,
)
SHALLOW_COPY = GraphBreak("GB0208", "torch.* op returned non-Tensor", "use `t.clone()` (or `t.detach()`)")
REQUIRES_GRAD_SET = GraphBreak(
    "GB0206",
    "setattr() on Tensor.requires_grad",
    "set `requires_grad` on the inputs before the compiled call, or outside the compiled code",
)
MASK_INDEX = GraphBreak(
    "GB0036",
    "Dynamic shape operator",
    "keep the shape fixed (`t.masked_fill(~mask, 0)`, `torch.where(mask, t, 0)`, a masked sum), or set "
    "`torch._dynamo.config.capture_dynamic_output_shape_ops = True`",
    lifted_by="capture_dynamic_output_shape_ops",
)
DATA_DEPENDENT = GraphBreak(
    "GB0033", "Data dependent operator", "compare as tensors (`(a == b).all()` feeding `torch.where`)"
)
REPR = GraphBreak("GB0569", "repr() on tensor", "format the tensor outside the compiled code")
BACKWARD = GraphBreak(
    "GB0123", "Unsupported Tensor.backward() call", "call `backward()` on the compiled function's output, outside it"
)
ASYNC_COLLECTIVE = GraphBreak(
    "GB0172",
    "async_op=True for distributed collectives",
    "use the synchronous collective (`async_op=False`) inside compiled code, or launch it outside",
)
P2P = GraphBreak(
    "GB1750",
    "P2P compilation disabled for P2POp construction",
    "build the point-to-point ops outside the compiled code, or use a collective Dynamo traces (`all_gather`)",
)
BRANCH = GraphBreak("GB0170", "Data-dependent branching", "use `torch.where(...)` or `torch.cond(...)`")
DEVICE_CONTEXT = GraphBreak(
    "GB0142",
    "Unsupported context manager",
    "pass `device=` to the tensor factories instead of entering `torch.device(...)` in compiled code (the rest of "
    "the function runs eagerly: Dynamo cannot resume inside the `with`)",
    skips_function=True,
)
LOCK_CONTEXT = GraphBreak(
    "GB0142",
    "Unsupported context manager",
    "take the lock around the call of the compiled function instead (Dynamo cannot resume inside the `with`: it "
    "gives up on the function, which runs eagerly)",
    skips_function=True,
)
HOOK_HANDLE_GLOBAL = GraphBreak(
    "GB0100",
    "Storing Tensor hook handle in globals",
    "register the hook outside the compiled code, or keep the handle in a local (Dynamo gives up on the function, "
    "which runs eagerly)",
    skips_function=True,
)
LOCK_METHOD = GraphBreak(
    "GB0156",
    "Unsupported method call",
    "take the lock around the call of the compiled function instead",
)

FULLGRAPH_LIFTS = frozenset({"capture_scalar_outputs", "capture_dynamic_output_shape_ops"})
"""The flags ``fullgraph=True`` implies (``tx.one_graph`` in ``variables/tensor.py`` and ``output_graph.py``):
measured, ``.item()``, integer ``.tolist()``, ``nonzero``, ``unique``, ``masked_select``, ``repeat_interleave`` and
boolean-mask indexing compile in one graph under ``fullgraph=True`` with both flags off."""


def raised_under_fullgraph(subject: str, found: GraphBreak) -> str:
    """The message for a graph break that every compile reaching it makes with ``fullgraph=True``: torch raises."""
    return (
        f"{subject}, which Dynamo cannot trace ({TORCH}: {found.quoted()}), and the code is compiled with "
        "`fullgraph=True`: torch raises `torch._dynamo.exc.Unsupported` on the first call that reaches it instead of "
        f"breaking the graph; {found.advice}"
    )


BREAK_IN_LOOP = (
    f"; it sits in a loop, so Dynamo gives up on the whole function, which then runs eagerly "
    f"({TORCH} compiled nothing for it)"
)
"""Appended to a graph-break message when the break is inside a ``for``/``while`` body (measured: no frame compiled)."""
