"""How the program drives compiled code, across functions and files: which calls run compiled code and which mode
switches reach compiled modules.

A call runs compiled code when its callee can be a wrapper ``torch.compile(...)`` returned, a module compiled in
place, or a module whose submodules were compiled in place (``Reach.call_holders``); an ``.eval()``/``.train()``
switch reaches compiled code when its receiver can be anything that holds compiled state
(``Reach.state_holders``): the module itself, the wrapper, or the owner of regionally compiled blocks. Values are
those of the semantic model, so ``self._model`` in ``validate`` and in ``setup`` are the same slot, and a module
kept in a module-level name is the same wherever a function reads it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from dynamo_lens.static.semantic.evaluate import FunctionValue, MethodValue, Value
from dynamo_lens.static.semantic.index import WorkspaceIndex
from dynamo_lens.static.summary import CallSite, CompileSite, FileSummary, ModeSwitch


@dataclass(frozen=True, slots=True)
class PlacedCall:
    """A call, with its file and the function it is made in (``""`` at module level)."""

    call: CallSite
    path: str
    function: str


def calls(summary: FileSummary) -> Iterator[PlacedCall]:
    """Every recorded call of one file."""
    for call in summary.calls:
        yield PlacedCall(call, summary.path, "")
    for function in summary.functions:
        for call in function.calls:
            yield PlacedCall(call, summary.path, function.qualname)
    for cls in summary.classes:
        for method in cls.methods:
            for call in method.calls:
                yield PlacedCall(call, summary.path, f"{cls.qualname}.{method.name}")


def compiled_callees(index: WorkspaceIndex, placed: PlacedCall) -> list[CompileSite]:
    """The compile sites whose compiled code the call runs (empty: it runs none that we know of)."""
    holders = index.reach.call_holders()
    if not holders:
        return []
    found: list[CompileSite] = []
    for value in index.evaluator.evaluate(placed.call.func, placed.path):
        for site in holders.get(value, ()):
            if site not in found:
                found.append(site)
    return found


MAX_HOPS = 3
"""How many calls deep :func:`reached_sites` looks for compiled code under a grad context."""


def reached_sites(index: WorkspaceIndex, placed: PlacedCall) -> list[CompileSite]:
    """The compile sites whose compiled code the call runs, directly or through the workspace functions it calls
    (``self._loss_step(batch)``, whose own call of the compiled model sets no grad mode of its own and so runs in
    the mode of this call), up to :data:`MAX_HOPS` calls deep."""
    found = compiled_callees(index, placed)
    for value in index.evaluator.evaluate(placed.call.func, placed.path):
        for inner in _inner_compiled_calls(index, value, MAX_HOPS):
            if inner not in found:
                found.append(inner)
    return found


def _inner_compiled_calls(index: WorkspaceIndex, value: Value, hops: int) -> list[CompileSite]:
    """The sites that calls inside the function or method ``value`` run without setting a grad mode of their own."""
    if hops <= 0:
        return []
    if isinstance(value, FunctionValue):
        function = index.files.function_summary(value.key)
        inner = [PlacedCall(c, value.key[0], value.key[1]) for c in function.calls] if function is not None else []
    elif isinstance(value, MethodValue):
        method = index.find_method(value.cls, value.name)
        if method is None:
            return []
        owner, summary = method
        inner = [PlacedCall(c, owner[0], f"{owner[1]}.{summary.name}") for c in summary.calls]
    else:
        return []

    def compute() -> list[CompileSite]:
        found: list[CompileSite] = []
        for placed in inner:
            if placed.call.grad:
                continue
            found.extend(compiled_callees(index, placed))
            for callee in index.evaluator.evaluate(placed.call.func, placed.path):
                found.extend(_inner_compiled_calls(index, callee, hops - 1))
        return list(dict.fromkeys(found))

    return index.memo(("program.inner", value, hops), compute)


def switched_sites(index: WorkspaceIndex, path: str, switch: ModeSwitch) -> list[CompileSite]:
    """The compile sites whose compiled state the mode switch changes."""
    return [site for sites in switched_holders(index, path, switch).values() for site in sites]


def switched_holders(index: WorkspaceIndex, path: str, switch: ModeSwitch) -> dict[Value, list[CompileSite]]:
    """What the switch's receiver can be that holds compiled state, with the sites that compile it."""
    holders = index.reach.state_holders()
    return {value: holders[value] for value in index.evaluator.evaluate(switch.receiver, path) if value in holders}


def switches(index: WorkspaceIndex) -> Iterator[tuple[str, ModeSwitch]]:
    for summary in index.summaries:
        for switch in summary.switches:
            yield summary.path, switch
