"""DL211 · autocast-state-varies

## What it does
Flags a compiled callable that is called both inside an autocast context (`torch.autocast(...)`,
`torch.amp.autocast(...)`, `torch.cuda.amp.autocast()`, as a `with` block or as a decorator of the calling
function) and outside one, anywhere in the workspace: a training step under mixed precision and an evaluation or a
generation loop that calls the same compiled model in full precision. The finding sits on the call under autocast.

## Why it matters
Whether autocast is enabled, and its dtype, is part of Dynamo's global-state guard. A call in the other state fails
it (`GLOBAL_STATE changed: autocast(cpu)_enabled`) and compiles a second entry. Measured on torch 2.13
(`backend="eager"`, CPU autocast, calls alternating): 2 compiles for autocast on and off, 2 for `enabled=False`
against on, 2 for `bfloat16` against `float16`, 2 for `no_grad` with autocast against neither; 1 when every call
runs under autocast. Each state gets one entry that is then reused, so the cost is bounded and the finding is `info`.

## Example
```python
compiled = torch.compile(model)
for x in loader:
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = compiled(x).sum()    # DL211: a second entry, for autocast
compiled(x_val)                     # full precision
```

## Use instead
Nothing is wrong with one entry per state. To share one entry, run every call under the same autocast context (the
evaluation too), or evaluate with the uncompiled module.

## Known limitations
The autocast state of a call is the one its own function sets (a `with` block around it, a decorator), else the one
every caller of the function sets, followed up to four levels of callers, as for grad modes (DL208). A context held in
a variable (`ctx = torch.autocast(...)` then `with ctx:`, or a `nullcontext()` on CPU) is not followed, and a call
under `autocast(enabled=flag)` is compared with nothing: the flag is usually fixed for a run. Two autocast contexts
with different dtypes are taken for one state. `torch.autocast("cuda")` is disabled (with a warning) where CUDA is
not available, and then adds no entry.

## Fix safety
No fix is offered.

## References
- PyTorch, "Dealing with recompilations": https://docs.pytorch.org/docs/stable/compile/programming_model.recompilation.html
- PyTorch, "Automatic Mixed Precision": https://docs.pytorch.org/docs/stable/amp.html
"""

from __future__ import annotations

from collections.abc import Iterator

from dynamo_lens.codes import Check, Rule
from dynamo_lens.model import Finding, Related, Severity
from dynamo_lens.static.semantic.contexts import AUTOCAST, AUTOCAST_UNKNOWN, GRAD, NO_AUTOCAST
from dynamo_lens.static.semantic.global_state import DifferingState, StatePart, differing_states
from dynamo_lens.static.semantic.index import WorkspaceIndex
from dynamo_lens.static.semantic.program import compiled_callees
from dynamo_lens.torch_facts import torch_name

RULE = Rule(
    code="DL211",
    name="autocast-state-varies",
    summary="A compiled callable is called inside and outside autocast: one compile per state",
    default_severity=Severity.INFO,
    source="static",
    docs_url="https://docs.pytorch.org/docs/stable/compile/programming_model.recompilation.html",
    confirmed_by=("DL501", "DL502"),
)

AUTOCAST_STATE = StatePart(
    "autocast",
    NO_AUTOCAST,
    of=lambda call: call.autocast,
    unknown=frozenset({AUTOCAST_UNKNOWN}),
    alike=lambda call, other: (call.grad or GRAD) == (other.grad or GRAD),
)
"""Autocast as a part of the global state: off where nothing enables it. Calls are compared within one grad mode:
training under autocast and a ``no_grad`` evaluation without it make two states, the one extra entry DL208
reports (measured: 2 compiles)."""


def judge_workspace(index: WorkspaceIndex) -> Iterator[Finding]:
    for found in differing_states(index, AUTOCAST_STATE):
        yield _finding(index, found)


def _finding(index: WorkspaceIndex, found: DifferingState) -> Finding:
    placed = found.shown
    call = placed.call
    direct = found.site in compiled_callees(index, placed)
    if not call.name:
        what = "the compiled callable runs" if direct else "this call runs compiled code"
    else:
        what = f"compiled `{call.name}` runs" if direct else f"`{call.name}(…)` runs compiled code"
    message = (
        f"{what} under `{AUTOCAST}` here and without it elsewhere: the autocast state is part of Dynamo's "
        f"`GLOBAL_STATE` guard, so {torch_name()} compiles a second entry for it (bounded: one entry per state)"
    )
    related = [Related(call.autocast_from, "autocast starts here")] if call.autocast_from is not None else []
    related += [Related(other.call.span, "without autocast here") for other in found.elsewhere[:1]]
    related += [
        Related(other.call.span, "also under autocast (the same entry)") for other in found.same if other is not placed
    ]
    return index.finding(RULE, call.span, message, (found.site,), related=related[:4])


CHECK = Check(RULE.code, judge_workspace=judge_workspace)
