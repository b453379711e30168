"""What torch does, as the messages quote it: one place for every number, name and graph-break id a finding states.

Every fact here was measured by a test that runs the fixture under real ``torch.compile`` (``backend="eager"``,
``tests/static/test_torch_agreement*.py`` and ``test_dl10x_torch.py``) on the pinned torch, and by
``make oracle TORCH=X`` on the others; ``benchmarks/torch_versions.py`` writes what each release did with every
fixture to ``docs/torch-versions.md``. A message never writes one of these by hand, nor the torch it names: that is
the :class:`TorchTarget` the analysis runs for (the user's torch).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

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


@dataclass(frozen=True, slots=True, order=True)
class Release:
    """A torch release as far as Dynamo's behaviour goes: major and minor (patch releases do not change it)."""

    major: int
    minor: int

    @classmethod
    def parse(cls, text: str | None) -> Release | None:
        """``"2.13.0+cpu"`` or ``"2.14"`` → ``Release(2, 13)``; None for anything unreadable."""
        parts = (text or "").strip().partition("+")[0].split(".")
        try:
            return cls(int(parts[0]), int(parts[1]))
        except (IndexError, ValueError):
            return None

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}"


PINNED = Release(2, 13)
"""The torch the project pins and its tests measure every claim on."""
NEWEST_MEASURED = Release(2, 14)
"""The newest release whose claims are checked (``make oracle TORCH=2.14.1``, part of ``make test``): where it differs
from the pinned one, the fact is keyed by release below. For a newer one the messages say they describe this."""


@dataclass(frozen=True, slots=True)
class TorchTarget:
    """The torch the messages describe: the user's release (None when no torch was found) and the directory its
    graph-break registry is read from (None when it cannot be read here, e.g. a release given on the command line)."""

    release: Release | None
    torch_dir: str | None = None

    def name(self, code: str | None = None) -> str:
        """How the messages of ``code`` name it: ``torch 2.14`` for a release the claims hold on
        (:func:`claims_hold_since` to :data:`NEWEST_MEASURED`), else the releases they hold for."""
        low = claims_hold_since(code)
        held = f"torch {low} to {PINNED}" if low < PINNED else f"torch {PINNED}"
        if self.release is None:
            return held
        if self.release < low:
            return f"{held}, unlike your {self.release}"
        if self.release > NEWEST_MEASURED:
            return f"torch {self.release}, as measured on {NEWEST_MEASURED}"
        return f"torch {self.release}"

    def gb_ids(self) -> dict[str, str] | None:
        """``gb_type`` → graph-break id in this torch's registry; None when it cannot be read here, empty when the
        release ships none (before 2.8)."""
        return _registry_ids(self.torch_dir) if self.torch_dir is not None else None


@functools.cache
def _registry_ids(torch_dir: str) -> dict[str, str]:
    from dynamo_lens.runtime.shim import load_gb_registry  # the shim's reader, loaded only when a message needs it

    return load_gb_registry(torch_dir)[0]


@functools.cache
def installed_target() -> TorchTarget:
    """The torch installed beside Dynamo Lens, read from its package metadata (torch is not imported)."""
    import importlib.metadata  # here, not at import: the language server answers `initialize` without it

    try:
        distribution = importlib.metadata.distribution("torch")
    except importlib.metadata.PackageNotFoundError:
        return TorchTarget(None)
    return TorchTarget(Release.parse(distribution.version), str(distribution.locate_file("torch")))


def target_for(release: Release | None) -> TorchTarget:
    """The torch to describe when the user names ``release`` (None: they name none): the installed one when it is
    that release (its registry gives the graph-break ids), else that release without a registry."""
    installed = installed_target()
    return installed if release is None or release == installed.release else TorchTarget(release)


_chosen: TorchTarget | None = None


def current() -> TorchTarget:
    """The torch this process analyses for: the one :func:`use` chose, else the installed one."""
    return _chosen if _chosen is not None else installed_target()


def use(target: TorchTarget | None) -> None:
    """Analyse for ``target`` from now on in this process (None: the installed torch again). The CLI calls it once;
    the language server when it has asked the selected interpreter; worker processes get it at start."""
    global _chosen
    _chosen = target


@contextlib.contextmanager
def targeting(target: TorchTarget) -> Iterator[None]:
    """Analyse for ``target`` inside the block (tests, and the oracle on another torch)."""
    before = _chosen
    use(target)
    try:
        yield
    finally:
        use(before)


_checking: contextvars.ContextVar[str | None] = contextvars.ContextVar("checking", default=None)
"""The finding code whose check is running: its messages name the releases measured for that code."""


@contextlib.contextmanager
def checking(code: str) -> Iterator[None]:
    """Run the check of ``code`` inside the block (the analysis does, around each check's collect and judge)."""
    token = _checking.set(code)
    try:
        yield
    finally:
        _checking.reset(token)


def torch_name() -> str:
    """``torch 2.14``: the torch the running check's messages describe, as they name it."""
    return current().name(_checking.get())


@functools.cache
def _measured() -> dict[str, Any]:
    """``torch_releases.json``, written by ``benchmarks/torch_versions.py`` from real runs on every release."""
    import json  # here, not at import: the language server answers `initialize` without them
    from importlib import resources

    text = resources.files("dynamo_lens").joinpath("torch_releases.json").read_text(encoding="utf-8")
    measured: dict[str, Any] = json.loads(text)
    return measured


def claims_hold_since(code: str | None) -> Release:
    """The oldest measured release from which the claims of ``code`` hold on every measured release up to the
    newest (its oracle tests pass there); the pinned release for a code, or a message, not measured per code."""
    found = Release.parse(_measured()["claims_hold_since"].get(code or "", ""))
    return found if found is not None else PINNED


# Facts that differ between releases, each with what was measured on both sides; a check asks describes_since().
GLOBAL_INCREMENT_UNGUARDED_SINCE = Release(2, 14)
"""Measured: a global int that compiled code only reads in its own ``COUNT += 1`` (or ``COUNT = COUNT + 1``,
``STEP[0] = STEP[0] + 1``) compiled 8 times (limit) on 2.13 and once on 2.14.1; read again after the update it still
compiles 8 times on 2.14.1, with the failing guard blamed on that later read."""
UNSPEC_INT_FLAG_SINCE = Release(2, 7)
"""Measured: ``torch._dynamo.config.allow_unspec_int_on_nn_module`` exists from 2.7.1 on and not on 2.6.0, where
setting it raises ``AttributeError``. An int counter on a module compiled 4 times on 2.4.1 (then went dynamic;
``self.torchdynamo_force_dynamic = True`` changed nothing), twice on 2.5.1, 2.6.0 and 2.7.1 (with the setting too, on
2.7.1), and 8 times with the limit on 2.8.0, 2.13 and 2.14.1, twice there with the setting. A tensor buffer
compiles once on every release."""
BREAK_BEFORE_TENSOR_WORK_SKIPS_SINCE = Release(2, 13)
"""Measured: a compiled function that breaks on a builtin (``bytes(s, "utf8")``) before any tensor work, called with
"a" then "b": its frame is skipped and compiles once on 2.13 and 2.14.1; on 2.5.1 to 2.12.1 it compiled twice (the
string was guarded, and the second call recompiled), on 2.4.1 twice as well. DL203 stays silent there: a miss of one
bounded recompile on those releases."""
COMPILE_LIMIT_KEYWORD_SINCE = Release(2, 12)
"""Measured: ``torch.compile(model, recompile_limit=3)`` with a counter in ``forward`` compiled 3 times on 2.12.1, 2.13
and 2.14.1; on 2.11.0 the keyword raises ``TypeError`` (``unexpected keyword argument``)."""
MAYBE_MARK_GUARDED_SINCE = Release(2, 13)
"""Measured: ``maybe_mark_dynamic(t, 0)`` after a compiled function ran with ``t``, then 11 more calls with it:
1 compile on every release from 2.4.1 to 2.12.1 (the mark waits for a recompile), 2 on 2.13 and 2.14.1 (the
marked tensor fails the entry's guards once). ``mark_dynamic`` compiles twice on all of them."""
TORCH_NN_METHOD_COMPILE_SINCE = Release(2, 14)
"""Measured: ``nn.Sequential(...).compile()`` compiled nothing on 2.13 (Dynamo skips the frames of ``torch.nn``
modules) and compiles them on 2.14.1 (through the wrapper ``compile()`` installs: 1 graph, and a second entry under
``torch.no_grad()``); ``torch.compile(nn.Sequential(...))`` compiles on both."""


INT_MODULE_ATTR_STATIC_SINCE = Release(2, 8)
"""Measured: an int counter on a module whose code the frame runs compiled 8 times with the limit on 2.8.0, 2.13 and
2.14.1. On 2.5.1, 2.6.0 and 2.7.1 it compiled twice (one recompile, then a symbolic int) where the module is an input
of the frame (its ``self``, an argument, or a submodule held in an attribute of one: ``self.sub.calls``), and 8
times with the limit where the frame reaches it through a module container (``self.blocks[0].calls``, iterating an
``nn.ModuleList``) or a module-level global. 2.4.1 compiled 4 times, or up to the limit, depending on more (modules
were guarded by identity there): not keyed."""
INT_MODULE_ATTR_DYNAMIC_SINCE = Release(2, 5)
"""The oldest release :data:`INT_MODULE_ATTR_STATIC_SINCE` describes the earlier behaviour for."""
GUARD_FILTER_SINCE = Release(2, 8)
"""``torch.compile(..., options={"guard_filter_fn": ...})`` and the filters ``torch.compiler`` ships for it
(``skip_guard_on_*_unsafe``, ``keep_tensor_guards_unsafe``): added in 2.8 (absent from 2.7.1's
``torch/compiler/__init__.py``)."""
GRAD_MODE_FILTERED_SINCE = Release(2, 10)
"""``keep_tensor_guards_unsafe`` drops the grad-mode guard too from 2.10: measured, train then evaluate under
``torch.no_grad()`` compiled 2 entries on 2.8.0 and 2.9.1 (right results) and 1 on 2.10.0 to 2.14.1 (stale)."""
MODULE_STATE, TORCH_NN_STATE, OBJECT_STATE = "module state", "torch.nn module state", "object state"
GLOBALS, GRAD_MODE = "globals", "grad mode"
"""Families of guards a shipped ``guard_filter_fn`` drops: attributes of ``nn.Module`` instances (a counter, a layer
index, a flag), those of ``torch.nn``'s own layers only (a ``Dropout``'s ``training``), attributes of other objects,
every guard whose source starts at a global of the compiled code, and the grad mode (``GLOBAL_STATE``)."""
GUARD_FILTERS: dict[str, frozenset[str]] = {
    "torch.compiler.skip_guard_on_inbuilt_nn_modules_unsafe": frozenset({TORCH_NN_STATE}),
    "torch.compiler.skip_guard_on_all_nn_modules_unsafe": frozenset({MODULE_STATE, TORCH_NN_STATE}),
    "torch.compiler.skip_guard_on_globals_unsafe": frozenset({GLOBALS}),
    "torch.compiler.keep_tensor_guards_unsafe": frozenset(
        {MODULE_STATE, TORCH_NN_STATE, OBJECT_STATE, GLOBALS, GRAD_MODE}
    ),
}
"""What each shipped filter drops (``torch/compiler/__init__.py``, 2.8 to 2.14): guards whose source
``is_unspecialized_builtin_nn_module()``, or ``is_unspecialized_nn_module()``, guards with ``is_global``, every guard
but ``TENSOR_MATCH``. Measured on 2.13 (``backend="eager"``): an int counter of a module bumped in ``forward``, an int
attribute set between calls and a layer index read by blocks compiled one by one compiled once under
``skip_guard_on_all_nn_modules_unsafe`` and ``keep_tensor_guards_unsafe``, and returned results computed with the first
value; a float global changed between calls compiled once under ``skip_guard_on_globals_unsafe`` (stale results as
well). ``skip_guard_on_inbuilt_nn_modules_unsafe`` left a user module's int and its own ``self.training`` guarded
(one compile per value) and dropped a ``Dropout``'s ``training`` (``.eval()`` compiled nothing, the layer kept
dropping). After ``torch._dynamo.reset()``, a process that compiled with a filter before keeps the guards of the next
compile with one (5 compiles for 5 values on 2.13): each measurement runs in a fresh process."""
FLOAT_DYNAMIC_SINCE = Release(2, 6)
"""Measured: a float attribute that changes on every call compiled 8 times with the limit on 2.4.1 and 2.5.1 (floats
were specialised, ``specialize_float`` on by default), whatever ``dynamic=`` said, and twice from 2.6.0."""
FLOAT_POLICY_SINCE = Release(2, 8)
"""Measured: on 2.6.0 and 2.7.1 a changing float attribute compiled twice under ``dynamic=False``, under
``automatic_dynamic_shapes = False`` and under ``dynamic=True`` alike; from 2.8.0 the first two keep it static (8
and the limit) and ``dynamic=True`` makes it symbolic from the first call (1 compile)."""
SET_STANCE_SINCE = Release(2, 6)
"""``torch.compiler.set_stance`` exists from 2.6.0 (2.5.1 raises ``AttributeError``, measured)."""
RECOMPILE_LIMIT_NAME_SINCE = Release(2, 7)
"""``torch._dynamo.config.recompile_limit`` (and ``accumulated_recompile_limit``) from 2.7.1; 2.4.1 to 2.6.0 call them
``cache_size_limit`` and ``accumulated_cache_size_limit`` (setting the new names raises there, measured)."""


def limit_setting(accumulated: bool = False) -> str:
    """The name the described torch gives the recompile limit (or the accumulated cap)."""
    new = describes_since(RECOMPILE_LIMIT_NAME_SINCE)
    if accumulated:
        return "accumulated_recompile_limit" if new else "accumulated_cache_size_limit"
    return "recompile_limit" if new else "cache_size_limit"


def describes_since(release: Release) -> bool:
    """Whether the torch the messages describe is ``release`` or newer (an unknown torch counts as pinned)."""
    return (current().release or PINNED) >= release


@dataclass(frozen=True, slots=True)
class GraphBreak:
    """An entry of the graph-break registry (``torch/_dynamo/graph_break_registry.json``) and what to do about it."""

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
        """This break's id in the registry of the torch analysed for (ids are renumbered between releases: the
        same ``gb_type`` has another id on 2.14); ``""`` when that registry is not readable or lacks the type."""
        return (current().gb_ids() or {}).get(self.gb_type, "")

    def quoted(self) -> str:
        """``GB0124 "Unsupported Tensor.item() call ..."``, as messages cite it, with the analysed torch's id."""
        gb_id = self.installed_id()
        if gb_id:
            return f'{gb_id} "{self.gb_type}"'
        if current().gb_ids() is None:
            return f'"{self.gb_type}"; no registry of that torch is readable here to give its graph-break id'
        return f'"{self.gb_type}"'


PRINT = GraphBreak(
    "Failed to trace builtin operator",
    "move it out of the compiled code, or list it in `torch._dynamo.config.reorderable_logging_functions`",
)
RANGE_OF_TENSOR = GraphBreak(
    "Failed to trace builtin operator",
    "pass the count as a Python int, or replace the loop with tensor operations",
)
RANGE_OF_TENSOR_ITEM_SINCE = Release(2, 14)
"""Measured: ``range(t)`` on a tensor breaks as "Failed to trace builtin operator" on 2.13 and reads the count with
``Tensor.item()`` on 2.14.1 (the ``.item()`` break, lifted by ``capture_scalar_outputs`` there)."""
RANGE_OF_TENSOR_ITEM = GraphBreak(
    "Unsupported Tensor.item() call with capture_scalar_outputs=False",
    "pass the count as a Python int, or replace the loop with tensor operations",
)
ITEM = GraphBreak(
    "Unsupported Tensor.item() call with capture_scalar_outputs=False",
    "keep the value as a tensor, or set `torch._dynamo.config.capture_scalar_outputs = True`",
    lifted_by="capture_scalar_outputs",
)
TOLIST = GraphBreak(
    "Tensor.tolist() with non-integer tensor",
    "keep the values as a tensor (integer tensors break as 'Data dependent operator')",
    lifted_by="capture_scalar_outputs",
    lifted_partly="integer tensors",
)
TOLIST_INTEGER = GraphBreak(
    "Data dependent operator",
    "keep the values as a tensor, or set `torch._dynamo.config.capture_scalar_outputs = True`",
    lifted_by="capture_scalar_outputs",
)
TOLIST_FLOAT = GraphBreak("Tensor.tolist() with non-integer tensor", "keep the values as a tensor")
LOGGER = GraphBreak(
    "logging.Logger method not supported for non-export cases",
    "log outside the compiled code, or add the method to `torch._dynamo.config.ignore_logging_functions` "
    "(it then does not run when compiled)",
)
LOGGING = GraphBreak(
    "Unsupported python_type() call", "log outside the compiled code (`logging` functions are not traced)"
)
SKIPPED = GraphBreak("Attempted to call function marked as skipped", "call it outside the compiled code")
DEEPCOPY = GraphBreak("Attempted to copy.deepcopy a tensor", "use `t.clone()`")
NONZERO = GraphBreak(
    "Dynamic shape operator",
    "use a fixed-shape form such as `torch.where(mask, x, 0)`, or set "
    "`torch._dynamo.config.capture_dynamic_output_shape_ops = True`",
    lifted_by="capture_dynamic_output_shape_ops",
)
IS_INFERENCE = GraphBreak(
    "Encountered tensor.is_inference() during tracing",
    "decide it outside the compiled code and pass the answer in (Dynamo cannot trace this test)",
)
AUTOGRAD_GRAD = GraphBreak(
    "using `torch.autograd.grad` with `torch._dynamo.config.trace_autograd_ops=False`",
    "take the gradient outside the compiled code, or set `torch._dynamo.config.trace_autograd_ops = True`",
    lifted_by="trace_autograd_ops",
)
RNN = GraphBreak(
    "Attempted to wrap RNN, GRU, or LSTM",
    "Dynamo does not trace these modules and runs the whole function eagerly: compile the layers around the "
    "recurrent module instead, or set `torch._dynamo.config.allow_rnn = True`",
    lifted_by="allow_rnn",
    skips_function=True,
)
DATA_SIZED = GraphBreak(
    "Dynamic shape operator",
    "its output size depends on the data: keep it out of the compiled code or use a fixed-shape form "
    "(`torch.where(mask, t, 0)`), or set `torch._dynamo.config.capture_dynamic_output_shape_ops = True`",
    lifted_by="capture_dynamic_output_shape_ops",
)
REPEATS_BY_TENSOR = GraphBreak(
    "Dynamic shape operator",
    "its output size is the sum of the repeats: pass it as `output_size=` when it is known, or set "
    "`torch._dynamo.config.capture_dynamic_output_shape_ops = True`",
    lifted_by="capture_dynamic_output_shape_ops",
)
USER_GRAPH_BREAK = GraphBreak(
    "Call to `torch._dynamo.graph_break()`",
    "it splits the graph on purpose: remove it when the split is no longer needed",
    deliberate=True,
)
DISABLED_CALL = GraphBreak(
    "Skip calling `torch.compiler.disable()`d function",
    "Dynamo runs the disabled function in Python between two graphs on every call; call it before or after the "
    "compiled code to keep one graph",
    deliberate=True,
)
DISABLED_METHOD = GraphBreak(
    "Skip inlining `torch.compiler.disable()`d function",
    "Dynamo runs the disabled method in Python between two graphs on every call; call it before or after the "
    "compiled code to keep one graph",
    deliberate=True,
)
SHALLOW_COPY = GraphBreak("torch.* op returned non-Tensor", "use `t.clone()` (or `t.detach()`)")
REQUIRES_GRAD_SET = GraphBreak(
    "setattr() on Tensor.requires_grad",
    "set `requires_grad` on the inputs before the compiled call, or outside the compiled code",
)
MASK_INDEX = GraphBreak(
    "Dynamic shape operator",
    "keep the shape fixed (`t.masked_fill(~mask, 0)`, `torch.where(mask, t, 0)`, a masked sum), or set "
    "`torch._dynamo.config.capture_dynamic_output_shape_ops = True`",
    lifted_by="capture_dynamic_output_shape_ops",
)
DATA_DEPENDENT = GraphBreak("Data dependent operator", "compare as tensors (`(a == b).all()` feeding `torch.where`)")
REPR = GraphBreak("repr() on tensor", "format the tensor outside the compiled code")
BACKWARD = GraphBreak(
    "Unsupported Tensor.backward() call", "call `backward()` on the compiled function's output, outside it"
)
ASYNC_COLLECTIVE = GraphBreak(
    "async_op=True for distributed collectives",
    "use the synchronous collective (`async_op=False`) inside compiled code, or launch it outside",
)
P2P = GraphBreak(
    "P2P compilation disabled for P2POp construction",
    "build the point-to-point ops outside the compiled code, or use a collective Dynamo traces (`all_gather`)",
)
BRANCH = GraphBreak("Data-dependent branching", "use `torch.where(...)` or `torch.cond(...)`")
DEVICE_CONTEXT = GraphBreak(
    "Unsupported context manager",
    "pass `device=` to the tensor factories instead of entering `torch.device(...)` in compiled code (the rest of "
    "the function runs eagerly: Dynamo cannot resume inside the `with`)",
    skips_function=True,
)
LOCK_CONTEXT = GraphBreak(
    "Unsupported context manager",
    "take the lock around the call of the compiled function instead (Dynamo cannot resume inside the `with`: it "
    "gives up on the function, which runs eagerly)",
    skips_function=True,
)
HOOK_HANDLE_GLOBAL = GraphBreak(
    "Storing Tensor hook handle in globals",
    "register the hook outside the compiled code, or keep the handle in a local (Dynamo gives up on the function, "
    "which runs eagerly)",
    skips_function=True,
)
LOCK_METHOD = GraphBreak(
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
        f"{subject}, which Dynamo cannot trace ({torch_name()}: {found.quoted()}), and the code is compiled with "
        "`fullgraph=True`: torch raises `torch._dynamo.exc.Unsupported` on the first call that reaches it instead of "
        f"breaking the graph; {found.advice}"
    )


def break_in_loop() -> str:
    """Appended to a graph-break message when the break is inside a ``for``/``while`` body (measured: no frame
    compiled)."""
    return (
        "; it sits in a loop, so Dynamo gives up on the whole function, which then runs eagerly "
        f"({torch_name()} compiled nothing for it)"
    )
