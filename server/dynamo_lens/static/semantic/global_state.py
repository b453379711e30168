"""Calls of one compiled code made in different parts of Dynamo's global state: a grad mode (``torch.no_grad()``
around an evaluation), autocast (``torch.autocast(...)`` around training). ``GLOBAL_STATE`` is guarded on every
call, so each state compiles an entry of its own. The checks (DL208, DL211) say which part and how it is set; this
module finds the calls, for either part, the same way.

A call's state is the one its own function sets (a ``with`` block, a decorator), else the one every caller of the
function sets (followed a few levels up), else the state Python starts in (grad enabled, no autocast).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from dynamo_lens.model import Span
from dynamo_lens.static import exprs
from dynamo_lens.static.semantic.evaluate import FunctionValue, Instance, Slot, Wrapper
from dynamo_lens.static.semantic.index import WorkspaceIndex
from dynamo_lens.static.semantic.program import PlacedCall, callers_of, calls, compiled_callees, reached_sites
from dynamo_lens.static.summary import CallSite, CompileSite


@dataclass(frozen=True, slots=True)
class StatePart:
    """One part of the global state a calling context sets."""

    name: str
    """What the memo tables are kept under (``"grad"``)."""
    default: str
    """The state a program runs in where nothing sets it (grad enabled; autocast off)."""
    of: Callable[[CallSite], str]
    """The state the call's own function sets around it, ``""`` for none (the caller's applies)."""
    each_call: frozenset[str] = frozenset()
    """States that differ from call to call by themselves (``set_grad_enabled(flag)`` with a flag the program
    flips): reported without a call in another state."""
    unknown: frozenset[str] = frozenset()
    """States the scan cannot tell (``autocast(enabled=use_amp)``, a flag fixed for a run): not compared."""
    alike: Callable[[CallSite, CallSite], bool] | None = None
    """Whether two calls agree in the rest of the global state, where only those are compared: a call that also
    differs in another part adds the one entry that part's check reports."""


@dataclass(frozen=True, slots=True)
class DifferingState:
    """Calls of a compile site's code in one state (``same``) where calls in ``states`` run the same code."""

    site: CompileSite
    shown: PlacedCall
    """The call the finding sits on."""
    same: list[PlacedCall]
    states: set[str]
    """The state of ``same`` and the other states the code runs in."""
    elsewhere: list[PlacedCall]
    """Calls of the same code in those other states."""


def differing_states(index: WorkspaceIndex, part: StatePart) -> Iterator[DifferingState]:
    """Calls under a context that sets ``part`` first (few), then the other calls of the files they are in, to find
    one in another state. A compile site shared by several programs (a helper that compiles what each training
    script passes it) is judged file by file."""
    contexts: dict[tuple[CompileSite, str], list[PlacedCall]] = {}
    for summary in index.summaries:
        for placed in calls(summary):
            state = part.of(placed.call)
            if state and state != part.default and state not in part.unknown:
                for site in reached_sites(index, placed, part.of):
                    contexts.setdefault((site, placed.path), []).append(placed)
    if not contexts:
        return
    default_calls: dict[tuple[CompileSite, str], list[PlacedCall]] = {}
    default_functions: dict[tuple[CompileSite, str], set[str]] = {}
    for path in sorted({path for _, path in contexts}):
        # the program around the calls: their file (validation beside the training loop), and the files that call
        # the functions making them (a generation helper called from a training recipe)
        program = {path} | {at for p in _context_calls(contexts, path) for at in _caller_files(index, p)}
        for file in sorted(program):
            found_summary = index.summary(file)
            for placed in calls(found_summary) if found_summary is not None else ():
                state = part.of(placed.call)
                if state not in ("", part.default) or _runs_own_entry_point(index, part, placed):
                    continue
                sites = [
                    site
                    for site in _reached(index, part, placed)
                    if (site, path) in contexts and not _other_objects(index, site, placed, contexts[(site, path)])
                ]
                if sites and (state == part.default or not _inherits_state(index, part, placed)):
                    for site in sites:
                        default_calls.setdefault((site, path), []).append(placed)
                        default_functions.setdefault((site, path), set()).add(placed.function)
    # in the sites' order, not the order sets gave them in: of two findings on one call, the first is kept
    for (site, path), found in sorted(contexts.items(), key=lambda item: (item[0][0].order, item[0][1])):
        by_state: dict[str, list[PlacedCall]] = {}
        for placed in (*found, *default_calls.get((site, path), ())):
            by_state.setdefault(part.of(placed.call) or part.default, []).append(placed)
        for state, same in by_state.items():
            if state == part.default:
                continue
            others = [other for other_state, calls in by_state.items() if other_state != state for other in calls]
            if state not in part.each_call:
                same = [p for p in same if any(_comparable(index, part, site, p, other) for other in others)]
                others = [other for other in others if any(_comparable(index, part, site, p, other) for p in same)]
            sharing = [p for p in same if state in part.each_call or _shares_code(index, site, p, others)]
            if sharing:
                elsewhere = [other for other in others if _shares_code(index, site, other, sharing)]
                states = {state} | {part.of(other.call) or part.default for other in elsewhere}
                shown = _representative(sharing, elsewhere, default_functions.get((site, path), set()))
                yield DifferingState(site, shown, sharing, states, elsewhere)


def _comparable(
    index: WorkspaceIndex, part: StatePart, site: CompileSite, placed: PlacedCall, other: PlacedCall
) -> bool:
    """The two calls can run on one object in one program: they agree in the rest of the state (``part.alike``), and
    neither runs only on instances the other never runs on (a subclass's own training step against the base class's
    version, or against the base class's loop that calls ``self.training_step()``, which on the subclass runs the
    subclass's version)."""
    if part.alike is not None and not part.alike(placed.call, other.call):
        return False
    return not (_apart(index, part, site, placed, other) or _apart(index, part, site, other, placed))


def _apart(index: WorkspaceIndex, part: StatePart, site: CompileSite, placed: PlacedCall, other: PlacedCall) -> bool:
    """``placed`` is made in a method of a class ``C``, ``other`` in a method of a base class of ``C`` (or of ``C``),
    and on an instance of ``C`` ``other`` never reaches the site in its own state: its method is overridden, or the
    methods it calls on ``self`` are."""
    owner, _, name = placed.function.rpartition(".")
    other_owner, _, other_name = other.function.rpartition(".")
    cls, base = (placed.path, owner), (other.path, other_owner)
    if not owner or not other_owner or index.class_summary(cls) is None or index.class_summary(base) is None:
        return False
    mro = index.mro(cls)[0]
    if base not in mro:
        return False
    if base != cls and name == other_name:
        return True  # `other`'s method is the one `cls` overrides
    found = index.find_method(cls, other_name)
    if found is None:
        return False
    if found[0] != base:
        return True  # `cls` overrides it further down
    env = index.evaluator.self_env(cls)
    return site not in reached_sites(index, other, part.of, env)


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

    return index.memo(("global_state.code", site, placed.path, placed.call.span), compute)


def _runs_own_entry_point(index: WorkspaceIndex, part: StatePart, placed: PlacedCall) -> bool:
    """``main()`` at the module level of the file that defines ``main``: the calls inside it are judged each in the
    mode it sets (the script's ``no_grad`` evaluation and its training step), not all at once in the mode of this
    call."""
    if placed.function or part.of(placed.call) or compiled_callees(index, placed):
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


def _reached(index: WorkspaceIndex, part: StatePart, placed: PlacedCall) -> list[CompileSite]:
    """``reached_sites``, once per call and part (a file is in the programs of several context files)."""
    known: dict[tuple[str, Span], list[CompileSite]] = index.memo(("global_state.reached", part.name), dict)
    key = (placed.path, placed.call.span)
    if key not in known:
        known[key] = reached_sites(index, placed, part.of)
    return known[key]


def _context_calls(contexts: dict[tuple[CompileSite, str], list[PlacedCall]], path: str) -> list[PlacedCall]:
    return [p for (_, file), found in contexts.items() if file == path for p in found]


def _caller_files(index: WorkspaceIndex, placed: PlacedCall) -> set[str]:
    """The files that call the function the call is made in."""
    return {caller.path for caller in callers_of(index, placed.path, placed.function)}


def _inherits_state(index: WorkspaceIndex, part: StatePart, placed: PlacedCall) -> bool:
    """The call runs in a state set outside its function: in a ``forward``/``__call__`` (entered by calling the
    object, whose calls are judged on their own: a teacher called under ``no_grad`` runs its compiled model under
    ``no_grad``), or in a function only ever called in another state than the default (``step()`` of an optimizer,
    decorated ``@torch.no_grad()``, calling a compiled helper), directly or through callers that inherit it."""
    owner, _, name = placed.function.rpartition(".")
    if owner and name in ("forward", "__call__") and index.files.class_summary((placed.path, owner)) is not None:
        return True
    return _set_around(index, part, placed.path, placed.function, MAX_CALLER_DEPTH)


MAX_CALLER_DEPTH = 4
"""How many levels of callers a state is inherited through (a test calling a helper calling the model)."""


def _set_around(index: WorkspaceIndex, part: StatePart, path: str, function: str, depth: int) -> bool:
    """Whether every call of ``function`` (in ``path``) runs in another state than the default, looking ``depth``
    levels of callers up (the depth bounds recursive functions too)."""
    if not function or depth == 0:
        return False

    def compute() -> bool:
        modes = [
            part.of(caller.call) != part.default
            if part.of(caller.call)
            else _set_around(index, part, caller.path, caller.function, depth - 1)
            for caller in callers_of(index, path, function)
        ]
        return bool(modes) and all(modes)

    return index.memo(("global_state.set_around", part.name, path, function, depth), compute)


def _representative(same: list[PlacedCall], elsewhere: list[PlacedCall], default_functions: set[str]) -> PlacedCall:
    """One finding per compile site, file and mode: at a call through a variable that also runs in another mode
    (``model`` under ``no_grad`` after ``model(batch)`` trained), else at a call next to calls in the default mode
    (the same function), else at the first one."""
    holders = {holder for other in elsewhere for holder in _holders(other)}
    for placed in same:
        if holders & _holders(placed):
            return placed
    for placed in same:
        if placed.function in default_functions:
            return placed
    return same[0]


def _holders(placed: PlacedCall) -> set[tuple[str, str, str]]:
    """The variables a call reads its callee from (``model`` of ``model(batch)``): a function's local, or a
    module-level name of the call's file."""
    func = placed.call.func
    options = func.options if isinstance(func, exprs.OneOf) else (func,)
    found: set[tuple[str, str, str]] = set()
    for option in options:
        if isinstance(option, exprs.Local):
            found.add((placed.path, option.function, option.name))
        elif isinstance(option, exprs.Global):
            found.add((placed.path, "", option.name))
    return found
