"""Which statements of a method Dynamo may run eagerly because a call it may not trace sits in a loop.

A graph break inside a ``for``/``while`` body makes Dynamo give up on the whole frame it is tracing: that function,
or the resume function after an earlier break, runs eagerly and guards nothing (measured on 2.13: a counter bumped in
a loop beside a call that breaks compiled nothing and never recompiled; read before a break outside the loop, the
same counter compiled 8 times). The scan cannot see whether a method of an object from outside torch and the
workspace breaks: a simulator's ``scene.step()``, a thread pool's ``submit``, a queue's ``qsize`` (C code, locks) do.
Taking each such *opaque call* as a break, a statement of a method runs eagerly when an opaque call in a loop comes
before it (Dynamo skipped the frame piece holding that loop, and a skipped frame makes no resume functions: the rest
of the method runs as plain Python), or when the first opaque call of its frame piece (from the method's start, or
from the last opaque call outside loops before the statement) sits in a loop. Calls on the method's own attributes
are the ones judged (``self.<attr>.<method>(...)``); what an attribute holds comes from the evaluator.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import get_args

from dynamo_lens.model import Span
from dynamo_lens.static import exprs
from dynamo_lens.static.semantic.evaluate import External, Opaque, Slot
from dynamo_lens.static.semantic.index import ClassKey, WorkspaceIndex
from dynamo_lens.static.summary import AttrKind, CallSite, MethodSummary

TRACED_PACKAGES = frozenset(
    {"torch", "builtins", "collections", "math", "operator", "itertools", "functools", "numpy", "einops",
     "tensordict", "typing", "dataclasses", "enum", "copy", "random"}
)  # fmt: skip
"""Packages whose objects Dynamo traces (or models): their methods are not opaque calls."""
TRACED_KINDS = frozenset(get_args(AttrKind)) - {"unknown"}
"""Attribute kinds (``AttrInit.kind``) Dynamo traces methods of: every kind the scan can tell."""


@dataclass(frozen=True, slots=True)
class OpaqueCall:
    """``self.<attr>.<name>(...)`` on an object from outside torch and the workspace."""

    call: CallSite
    attr: str

    @property
    def text(self) -> str:
        return f"self.{self.attr}.{self.call.name}()"


def eager_if_breaks(index: WorkspaceIndex, cls: ClassKey, method: MethodSummary, at: Span) -> OpaqueCall | None:
    """The opaque call in a loop that makes Dynamo run the statement at ``at`` of ``method`` (on an instance of
    ``cls``) eagerly, if that call breaks the graph; None when the statement is traced whatever those calls do."""
    calls = opaque_calls(index, cls, method)
    position = (at.line, at.column)
    earlier = next((c for c in calls if c.call.in_loop and _at(c) < position), None)
    if earlier is not None:  # the frame piece with that loop was skipped: no resume function follows it
        return earlier
    start = max((_at(c) for c in calls if not c.call.in_loop and _at(c) < position), default=None)
    first = next((c for c in calls if start is None or _at(c) > start), None)
    return first if first is not None and first.call.in_loop else None


def opaque_calls(index: WorkspaceIndex, cls: ClassKey, method: MethodSummary) -> list[OpaqueCall]:
    """The opaque calls of ``method`` on an instance of ``cls``, in source order."""

    def compute() -> list[OpaqueCall]:
        own = method.params[0] if method.params and method.kind in ("method", "property", "setter") else None
        found = []
        for call in method.calls:
            receiver = call.func.value if isinstance(call.func, exprs.Attr) else None
            if (
                isinstance(receiver, exprs.Attr)
                and isinstance(receiver.value, exprs.Param)
                and receiver.value.name == own
                and _opaque(index, cls, receiver.attr)
            ):
                found.append(OpaqueCall(call, receiver.attr))
        return sorted(found, key=_at)

    return index.memo(("loop_breaks.opaque_calls", cls, method.span), compute)


def _opaque(index: WorkspaceIndex, cls: ClassKey, attr: str) -> bool:
    """``self.<attr>`` holds an object from outside torch and the workspace, or one the scan cannot tell."""
    init = index.init_attr(cls, attr)
    if init is not None and init[1].kind in TRACED_KINDS:
        return False
    return all(
        isinstance(value, Opaque | Slot)
        or (isinstance(value, External) and value.instance and value.dotted.partition(".")[0] not in TRACED_PACKAGES)
        for value in index.attribute(cls, attr)
    )


def _at(call: OpaqueCall) -> tuple[int, int]:
    return call.call.span.line, call.call.span.column
