"""DL208 · autograd-state-varies

## What it does
Flags a compiled callable that is called both under a grad-mode context (`torch.no_grad()`,
`torch.inference_mode()`, `torch.enable_grad()`, `torch.set_grad_enabled(...)`, as a `with` block or as a decorator
of the calling function) and outside it, anywhere in the workspace: a validation function decorated with
`@torch.no_grad()` that calls the model the training loop calls, a module whose blocks were compiled in place. The
finding sits on the call under the context that differs from the others. Also flags a call in a loop that sets
`requires_grad` of what it passes (an argument, or the compiled module's parameters) to a value that changes between
iterations.

## Why it matters
Grad mode is part of Dynamo's global-state guard. A call in another mode fails it (`GLOBAL_STATE changed:
grad_mode`) and compiles a second entry. Measured on torch 2.13 (`backend="eager"`, 12 calls alternating): 2
compiles for `no_grad`/grad, 2 for `inference_mode`/normal, 2 for inputs alternating `requires_grad=True/False`
(`TENSOR_MATCH`), and 2 when an inference tensor is passed to a function compiled for normal tensors. Each state gets
one entry that is then reused, so the cost is bounded and the finding is `info`. Only calls that run the same code
share entries: a teacher and a student of two classes, compiled by one helper, compile one `forward` each whatever
their modes (2 compiles with the teacher under `no_grad` or not); of one class, 2 against 1. A call inside `with
torch.compiler.set_stance("force_eager")` (or a function decorated with it) runs the compiled code eagerly and adds
no entry (measured: 1 compile). The failing guards carry no source line; this finding names the call whose context
differs.

## Example
```python
compiled = torch.compile(model)
for x in loader:
    loss = compiled(x).sum()        # grad enabled
with torch.no_grad():
    compiled(x_val)                 # DL208: GLOBAL_STATE guard fails, second compile
```

## Use instead
Nothing is wrong with one entry per mode. To avoid compiling evaluation at all, evaluate with the uncompiled module;
to share one entry, evaluate under the same grad mode.

## Known limitations
The grad mode of a call is the one its own function sets (a `with` block around it, a decorator of the function, or a
`@contextlib.contextmanager` method of its class that enters a grad-mode context before it yields), else the one every
caller of the function sets, followed up to four levels of callers (a test calling a scoring helper calling the model; a
closure a function returns is called through the parameter it is passed to, in its file: a benchmark's timing helper); a
helper with one caller in grad mode, or reached only deeper, counts as running with grad enabled. Calling an object runs
its `forward` (or `__call__`): a task that calls its compiled model there runs it in the mode of the task's caller. A
`forward` that picks its compiled path by `self.training` is followed down both paths, so a call in eval mode may be
said to run the training path's entry. Inputs with differing `requires_grad` are detected where a loop around the call
sets `requires_grad` (`x.requires_grad_(flag)`, `x.requires_grad = flag`, `model.requires_grad_(flag)` on the compiled
module) to a value that can change between iterations; elsewhere they are not. A helper that compiles what it is given
(`update = compile_with_warmup(update)`, `score = compile_with_warmup(scorer)`) makes one compiled object per call:
calls of two such variables of one function are not compared, nor calls of wrappers of workspace modules whose classes
take `forward` from different classes. When what a wrapper wraps is not known (a module built by another library, a
helper that takes `*args`), its calls are compared with every other call of the site. A script's `main()` called at
module level is not a call in grad mode: the calls inside it are judged each in its own mode.

## Fix safety
No fix is offered.

## References
- PyTorch, "Dealing with recompilations": https://docs.pytorch.org/docs/stable/compile/programming_model.recompilation.html
- `torch/_dynamo/guards.py`: `GLOBAL_STATE`
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from dynamo_lens.codes import Check, Rule
from dynamo_lens.model import Finding, Related, Severity, Span
from dynamo_lens.static import exprs
from dynamo_lens.static.context import FileContext
from dynamo_lens.static.semantic.contexts import GRAD, VARIES
from dynamo_lens.static.semantic.evaluate import FunctionValue, Instance, Slot, Wrapper
from dynamo_lens.static.semantic.index import WorkspaceIndex
from dynamo_lens.static.semantic.program import (
    PlacedCall,
    callers_of,
    calls,
    compiled_callees,
    reached_sites,
    reset_around,
)
from dynamo_lens.static.semantic.usage import HandleCall, Loop, UsageCandidate, judge_usage, usage
from dynamo_lens.static.summary import CompileSite
from dynamo_lens.torch_facts import TORCH

RULE = Rule(
    code="DL208",
    name="autograd-state-varies",
    summary="A compiled callable is called under different grad modes: one compile per mode",
    default_severity=Severity.INFO,
    source="static",
    docs_url="https://docs.pytorch.org/docs/stable/compile/programming_model.recompilation.html",
    confirmed_by=("DL501", "DL502"),
)


def judge_workspace(index: WorkspaceIndex) -> Iterator[Finding]:
    """Calls under a grad-mode context first (few), then the other calls of the files they are in, to find one in
    another mode. A compile site shared by several programs (a helper that compiles what each training script
    passes it) is judged file by file."""
    contexts: dict[tuple[CompileSite, str], list[PlacedCall]] = {}
    for summary in index.summaries:
        for placed in calls(summary):
            if placed.call.grad and placed.call.grad != GRAD:
                for site in reached_sites(index, placed):
                    contexts.setdefault((site, placed.path), []).append(placed)
    if not contexts:
        return
    grad_calls: dict[tuple[CompileSite, str], list[PlacedCall]] = {}
    grad_functions: dict[tuple[CompileSite, str], set[str]] = {}
    for path in sorted({path for _, path in contexts}):
        # the program around the calls: their file (validation beside the training loop), and the files that call
        # the functions making them (a generation helper called from a training recipe)
        program = {path} | {at for p in _context_calls(contexts, path) for at in _caller_files(index, p)}
        for file in sorted(program):
            found_summary = index.summary(file)
            for placed in calls(found_summary) if found_summary is not None else ():
                if placed.call.grad not in ("", GRAD) or _runs_own_entry_point(index, placed):
                    continue
                sites = [
                    site
                    for site in _reached(index, placed)
                    if (site, path) in contexts and not _other_objects(index, site, placed, contexts[(site, path)])
                ]
                if sites and (placed.call.grad == GRAD or not _inherits_mode(index, placed)):
                    for site in sites:
                        grad_calls.setdefault((site, path), []).append(placed)
                        grad_functions.setdefault((site, path), set()).add(placed.function)
    for (site, path), found in contexts.items():
        by_mode: dict[str, list[PlacedCall]] = {}
        for placed in (*found, *grad_calls.get((site, path), ())):
            by_mode.setdefault(placed.call.grad or GRAD, []).append(placed)
        for mode, same in by_mode.items():
            if mode == GRAD:
                continue
            others = [other for other_mode, calls in by_mode.items() if other_mode != mode for other in calls]
            sharing = [p for p in same if mode == VARIES or _shares_code(index, site, p, others)]
            if sharing:
                modes = {mode} | {
                    other.call.grad or GRAD for other in others if _shares_code(index, site, other, sharing)
                }
                yield _finding(
                    index, site, _representative(sharing, grad_functions.get((site, path), set())), sharing, modes
                )


def _shares_code(index: WorkspaceIndex, site: CompileSite, placed: PlacedCall, others: list[PlacedCall]) -> bool:
    """Some call of ``others`` may run the compiled code ``placed`` runs. A wrapper ``torch.compile(...)`` returned
    compiles the ``forward`` of the module it wraps: a helper that compiles both a teacher and a student makes two
    codes, each compiled once for its own grad mode (measured: 2 compiles whether the teacher runs under
    ``no_grad`` or not; 2 against 1 when both are one class). Calls whose code is not known share it."""
    code = _wrapped_code(index, site, placed)
    if not others:
        return False
    return code is None or any(
        (other_code := _wrapped_code(index, site, other)) is None or code & other_code for other in others
    )


def _wrapped_code(index: WorkspaceIndex, site: CompileSite, placed: PlacedCall) -> frozenset[object] | None:
    """What a call of the site's wrapper runs: the methods its wrapped workspace modules (or functions) define
    ``forward`` (or ``__call__``) in, or None when the call is not of the wrapper or what it wraps is not known."""

    def compute() -> frozenset[object] | None:
        values = index.evaluator.evaluate(placed.call.func, placed.path)
        if Wrapper(site.span.path, site.span.line, site.span.column) not in values:
            return None
        found: set[object] = set()
        for value in values:
            if isinstance(value, Slot | Wrapper):
                continue
            if isinstance(value, FunctionValue):
                found.add(value.key)
                continue
            if not isinstance(value, Instance):
                return None
            method = index.find_method(value.cls, "forward" if index.is_module_class(value.cls) else "__call__")
            if method is None:
                return None  # defined outside the workspace: another class may share it
            found.add((method[0], method[1].name))
        return frozenset(found) or None

    return index.memo(("DL208.code", site, placed.path, placed.call.span), compute)


def _runs_own_entry_point(index: WorkspaceIndex, placed: PlacedCall) -> bool:
    """``main()`` at the module level of the file that defines ``main``: the calls inside it are judged each in the
    mode it sets (the script's ``no_grad`` evaluation and its training step), not all at once in the mode of this
    call."""
    if placed.function or placed.call.grad or compiled_callees(index, placed):
        return False
    values = index.evaluator.evaluate(placed.call.func, placed.path)
    return bool(values) and all(isinstance(v, FunctionValue) and v.key[0] == placed.path for v in values)


def _other_objects(index: WorkspaceIndex, site: CompileSite, placed: PlacedCall, others: list[PlacedCall]) -> bool:
    """The call and every call it is compared with call the site's compiled code directly, from one function, each
    through a local variable of its own: ``adv_module(data)`` under ``no_grad`` and ``update(batch)`` hold two
    objects a helper compiled apart (torchrl's ``compile_with_warmup``, accelerate's ``prepare``), with a cache
    each. Variables of other functions may hold the same object: those are compared as one."""
    name = _local_name(index, site, placed)
    if name is None:
        return False
    for other in others:
        if other.path != placed.path or other.function != placed.function:
            return False
        if _local_name(index, site, other) in (None, name):
            return False
    return True


def _local_name(index: WorkspaceIndex, site: CompileSite, placed: PlacedCall) -> str | None:
    """The local variable a direct call of the site's compiled code reads its callee from."""
    func = placed.call.func
    options = func.options if isinstance(func, exprs.OneOf) else (func,)
    names = {o.name for o in options if isinstance(o, exprs.Local) and o.function == placed.function}
    if len(names) != 1:
        return None
    made = any(isinstance(o, exprs.Call) and _compiles(index, placed.path, o.func, site) for o in options)
    return names.pop() if made or site in compiled_callees(index, placed) else None


def _compiles(index: WorkspaceIndex, path: str, func: exprs.Expr, site: CompileSite) -> bool:
    """``func`` is the function that makes the site's compile (or encloses it): what calling it returns is a
    compiled object of its own (``update = compile_with_warmup(update)``)."""
    for value in index.evaluator.evaluate(func, path):
        if (
            isinstance(value, FunctionValue)
            and value.key[0] == site.span.path
            and (site.scope == value.key[1] or site.scope.startswith(value.key[1] + "."))
        ):
            return True
    return False


def _reached(index: WorkspaceIndex, placed: PlacedCall) -> list[CompileSite]:
    """``reached_sites``, once per call (a file is in the programs of several context files)."""
    known: dict[tuple[str, Span], list[CompileSite]] = index.memo("DL208.reached", dict)
    key = (placed.path, placed.call.span)
    if key not in known:
        known[key] = reached_sites(index, placed)
    return known[key]


def _context_calls(contexts: dict[tuple[CompileSite, str], list[PlacedCall]], path: str) -> list[PlacedCall]:
    return [p for (_, file), found in contexts.items() if file == path for p in found]


def _caller_files(index: WorkspaceIndex, placed: PlacedCall) -> set[str]:
    """The files that call the function the call is made in."""
    return {caller.path for caller in callers_of(index, placed.path, placed.function)}


def _inherits_mode(index: WorkspaceIndex, placed: PlacedCall) -> bool:
    """The call runs in a grad mode set outside its function: in a ``forward``/``__call__`` (entered by calling the
    object, whose calls are judged on their own: a teacher called under ``no_grad`` runs its compiled model under
    ``no_grad``), or in a function only ever called with grad disabled (``step()`` of an optimizer, decorated
    ``@torch.no_grad()``, calling a compiled helper), directly or through callers that inherit it."""
    owner, _, name = placed.function.rpartition(".")
    if owner and name in ("forward", "__call__") and index.files.class_summary((placed.path, owner)) is not None:
        return True
    return _disabled_in(index, placed.path, placed.function, MAX_CALLER_DEPTH)


MAX_CALLER_DEPTH = 4
"""How many levels of callers a grad mode is inherited through (a test calling a helper calling the model)."""


def _disabled_in(index: WorkspaceIndex, path: str, function: str, depth: int) -> bool:
    """Whether every call of ``function`` (in ``path``) runs with grad disabled, looking ``depth`` levels of callers
    up (the depth bounds recursive functions too)."""
    if not function or depth == 0:
        return False

    def compute() -> bool:
        modes = [
            caller.call.grad != GRAD
            if caller.call.grad
            else _disabled_in(index, caller.path, caller.function, depth - 1)
            for caller in callers_of(index, path, function)
        ]
        return bool(modes) and all(modes)

    return index.memo(("DL208.grad_disabled", path, function, depth), compute)


def _representative(same: list[PlacedCall], grad_functions: set[str]) -> PlacedCall:
    """One finding per compile site, file and mode: at a call next to calls in the other mode (the same function),
    else at the first one."""
    for placed in same:
        if placed.function in grad_functions:
            return placed
    return same[0]


def _finding(
    index: WorkspaceIndex, site: CompileSite, placed: PlacedCall, same: list[PlacedCall], modes: set[str]
) -> Finding:
    call = placed.call
    mode = call.grad
    direct = site in compiled_callees(index, placed)
    if not call.name:
        what = "the compiled callable runs" if direct else "this call runs compiled code"
    else:
        what = f"compiled `{call.name}` runs" if direct else f"`{call.name}(…)` runs compiled code"
    if mode == VARIES:
        message = (
            f"{what} under {mode}: grad mode is part of Dynamo's `GLOBAL_STATE` guard, so "
            f"{TORCH} compiles one entry per mode (2 compiles for grad on/off)"
        )
    else:
        others = sorted(m for m in modes if m != mode) or [GRAD]
        cost = "bounded: one entry per mode"
        if reset_around(index, placed.path, placed.function):
            cost = "the Dynamo reset around it drops that entry, so it compiles again every time"
        message = (
            f"{what} under `{mode}` here and with {', '.join(others)} elsewhere: grad mode is "
            f"part of Dynamo's `GLOBAL_STATE` guard, so {TORCH} compiles a second entry for this mode ({cost})"
        )
    related = [Related(call.grad_from, f"`{mode}` starts here")] if call.grad_from is not None else []
    related += [
        Related(other.call.span, f"also under `{mode}` (the same entry)") for other in same if other is not placed
    ]
    return index.finding(RULE, call.span, message, (site,), related=related[:4])


def collect(ctx: FileContext) -> Iterator[UsageCandidate]:
    """Calls in a loop that also sets ``requires_grad`` of what the call passes (an argument, or the compiled
    module's parameters through ``model.requires_grad_(...)``) to a value that changes between iterations: the
    tensor guard checks ``requires_grad``, so each setting compiles an entry of its own (measured: 2 compiles)."""
    table = usage(ctx)
    for handle_call in table.calls:
        loops = table.enclosing_loops(handle_call.at)
        if not loops or not handle_call.handle.runs_compiled:
            continue
        site = handle_call.handle.site
        call = handle_call.call
        passed = {a.id: a for a in (*call.args, *(k.value for k in call.keywords)) if isinstance(a, ast.Name)}
        modules = {h.name for h in table.handles.values() if h.site == site and h.module}
        flips = _requires_grad_flips(loops[0], set(passed) | modules)
        for name, flip in flips.items():
            yield _flip_candidate(ctx, handle_call, passed.get(name), name, flip)


def _requires_grad_flips(loop: Loop, names: set[str]) -> dict[str, ast.stmt]:
    """``name`` → the statement of ``loop`` that sets its ``requires_grad`` to a value that can differ between
    iterations: a non-constant value, or constants that differ (``x.requires_grad_(True)`` ... ``(False)``)."""
    found: dict[str, ast.stmt] = {}
    constants: dict[str, set[object]] = {}
    for statement in ast.walk(loop):
        if not isinstance(statement, ast.Expr | ast.Assign):
            continue
        target, value = _requires_grad_set(statement)
        if target is None or target not in names:
            continue
        seen = constants.setdefault(target, set())
        if isinstance(value, ast.Constant):
            seen.add(value.value)
        if not isinstance(value, ast.Constant) or len(seen) > 1:
            found.setdefault(target, statement)
    return found


def _requires_grad_set(statement: ast.Expr | ast.Assign) -> tuple[str | None, ast.expr | None]:
    """(``x``, value) for ``x.requires_grad_(value)`` (no argument: ``True``) or ``x.requires_grad = value``."""
    if isinstance(statement, ast.Expr):
        call = statement.value
        if (
            isinstance(call, ast.Call)
            and isinstance(func := call.func, ast.Attribute)
            and func.attr == "requires_grad_"
            and isinstance(func.value, ast.Name)
        ):
            value = call.args[0] if call.args else next((k.value for k in call.keywords), ast.Constant(True))
            return func.value.id, value
        return None, None
    [target] = statement.targets if len(statement.targets) == 1 else [None]
    if isinstance(target, ast.Attribute) and target.attr == "requires_grad" and isinstance(target.value, ast.Name):
        return target.value.id, statement.value
    return None, None


def _flip_candidate(
    ctx: FileContext, handle_call: HandleCall, argument: ast.Name | None, name: str, flip: ast.stmt
) -> UsageCandidate:
    what = f"`{name}` gets" if argument is not None else f"the parameters of `{name}` get"
    message = (
        f"{what} `requires_grad` set to a value that changes between iterations (line {flip.lineno}) before "
        f"this call of compiled `{handle_call.handle.name}`: {TORCH} guards `requires_grad` of every tensor input "
        "(`TENSOR_MATCH`), so each setting compiles an entry of its own (2 in all, each reused)"
    )
    return UsageCandidate(
        RULE.code,
        ctx.span(argument if argument is not None else handle_call.call),
        message,
        Severity.INFO,
        (handle_call.handle.site,),
        related=(Related(ctx.span(flip), "`requires_grad` set here"),),
    )


CHECK = Check(RULE.code, collect=collect, judge=judge_usage, judge_workspace=judge_workspace)
