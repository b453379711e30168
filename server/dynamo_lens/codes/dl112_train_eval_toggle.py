"""DL112 · train-eval-toggle

## What it does
Flags `.train()`, `.train(False)` and `.eval()` on a compiled module (or on its compiled wrapper) in a program that
calls the compiled module, so that the module runs in both modes.

## Why it matters
`nn.Module.training` is a Python bool. Submodules whose `forward` reads it (`Dropout`, `BatchNorm`, any
`if self.training:`) make Dynamo guard it by value (`TRUE_MATCH self._modules['drop'].training == True`). Measured on
torch 2.13 (`backend="eager"`, 12 calls alternating `.train()`/`.eval()`): 2 compiles in all, one per mode, and both
entries are reused afterwards. A module whose code never reads `training` (e.g. only `Linear` layers) compiled once.
The cost is bounded, so this is an `info` finding: it explains the second compile you see in a log, nothing more.
Calling evaluation under `torch.no_grad()` adds a grad-mode guard as well (see DL208), still one entry per mode.

## Example
```python
compiled = torch.compile(model)
for epoch in range(10):
    model.train()                   # DL112: one compile for training mode ...
    train_one_epoch(compiled)
    model.eval()                    # ... and one for eval mode (2 in all)
    evaluate(compiled)
```

A `guard_filter_fn` in the site's `options=` (torch 2.8+) can drop the mode's guard (measured on 2.13, a model whose
only `training` reader is a `Dropout`): `skip_guard_on_inbuilt_nn_modules_unsafe` and
`skip_guard_on_all_nn_modules_unsafe` drop the guards on torch.nn's own layers (the latter also a model's own
`self.training`), but keep grad mode's: evaluation with grad enabled reuses the training entry and keeps dropping (1
compile, wrong results), evaluation under `torch.no_grad()` compiles its own entry in eval mode (2 compiles, right
results). Which a program does is its business: the finding is a hint that says both. `keep_tensor_guards_unsafe`
also drops grad mode's guard from torch 2.10 (measured: 1 compile and stale results under `no_grad` on 2.10 to 2.14,
2 compiles on 2.8 and 2.9): there the finding is a *warning* about a silent wrong result.

## Use instead
Nothing needs to change: two compiled entries are the expected price of two modes. To avoid compiling the
evaluation mode at all, run evaluation on the uncompiled module (`model(x)` instead of `compiled(x)`).

## Known limitations
Only a switch *to* eval mode (or to a mode computed at run time) is reported, on anything that holds compiled state
(the compiled module, its wrapper, the module whose blocks were compiled in place, across functions and files), and
only where the program also runs it in training mode: it switches it back with `.train()` somewhere, or called the
compiled code earlier in the same function. A switch to eval that the same function undoes (`.train()`,
`.train(mode=saved)`) with no call of the compiled code in between, directly or through the workspace functions it
calls, is not reported, nor the switch that undoes it. The compiled code must read `training`: a workspace class
that reads `self.training` (itself or in a submodule), or a `torch.nn` layer that does (`Dropout`, `BatchNorm`,
`InstanceNorm`, RNN and attention layers). Modules whose classes cannot be told are not reported. Switches in a
constructor or in a module's `train()`/`eval()` override (setting a frozen teacher up in eval mode) are not toggles
and are not reported, nor a switch in a script that shares no file with the program that compiles the module.
A module compiled in a constructor only under a test of its parameters (`if compile_config is not None:`) is not
compiled in the objects the workspace builds with literals (or defaults) that fail the test: switching those is not
reported.

## Fix safety
No fix is offered.

## References
- PyTorch, "Dealing with recompilations": https://docs.pytorch.org/docs/stable/compile/programming_model.recompilation.html
- `torch.nn.Module.train`: https://docs.pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.train
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from functools import partial

from dynamo_lens.codes import Check, Rule
from dynamo_lens.model import Finding, Related, Severity, Span
from dynamo_lens.static.semantic import settings
from dynamo_lens.static.semantic.evaluate import External, Instance, Value
from dynamo_lens.static.semantic.index import ClassKey, WorkspaceIndex
from dynamo_lens.static.semantic.program import (
    calls,
    compiled_callees,
    reached_sites,
    reset_around,
    switched_holders,
    switches,
)
from dynamo_lens.static.semantic.usage import READ_EVENTS
from dynamo_lens.static.summary import CompileSite, ModeSwitch
from dynamo_lens.torch_facts import GRAD_MODE, MODULE_STATE, TORCH_NN_STATE, torch_name

RULE = Rule(
    code="DL112",
    name="train-eval-toggle",
    summary="A compiled module is switched between training and eval mode: one compile per mode",
    default_severity=Severity.INFO,
    source="static",
    docs_url="https://docs.pytorch.org/docs/stable/compile/programming_model.recompilation.html",
    confirmed_by=("DL501", "DL502"),
)


MODE_SENSITIVE = re.compile(r"Dropout|BatchNorm|InstanceNorm|RNN|LSTM|GRU|MultiheadAttention|Transformer")
"""``torch.nn`` layers whose forward reads ``training`` (or that contain such layers)."""
MODE_METHODS = frozenset({"eval", "train"})


def _sets_up(index: WorkspaceIndex, path: str, switch: ModeSwitch) -> bool:
    """Whether the switch sets a module up rather than toggles it: a constructor freezing a teacher in eval mode, or
    an ``nn.Module``'s ``train()``/``eval()`` override keeping one submodule in eval (a trainer's own ``eval()`` loop
    is no such override)."""
    owner, _, method = switch.function.rpartition(".")
    if method == "__init__":
        return True
    return method in MODE_METHODS and bool(owner) and index.is_module_class((path, owner))


def judge_workspace(index: WorkspaceIndex) -> Iterator[Finding]:
    trained = _trained_holders(index)
    found: dict[frozenset[Value], list[tuple[str, ModeSwitch, Span | None, list[CompileSite], str]]] = {}
    for path, switch in switches(index):
        if switch.mode == "train" or _sets_up(index, path, switch):
            continue
        holders = switched_holders(index, path, switch)
        sites = list(dict.fromkeys(site for found_sites in holders.values() for site in found_sites))
        if not sites:
            continue
        values = frozenset(v for site in sites for v in index.reach.site_values(site))
        readers = index.memo(("DL112.training_guards", values), partial(_training_guards, index, values))
        if not readers:
            continue  # nothing compiled there is known to read `training`: one entry serves both modes
        if _restored_unused(index, path, switch, sites) or _restores(index, path, switch, sites):
            continue  # eval() around work that never calls the compiled code, then the mode is put back
        earlier = _called_before(index, path, switch, sites)
        if earlier is None and not trained & set(holders):
            continue  # never back in training mode: only one mode is compiled
        found.setdefault(frozenset(holders), []).append((path, switch, earlier, sites, readers))
    for same in found.values():
        # one finding per object holding compiled state: at a switch right after a compiled call, else the first
        path, switch, earlier, sites, readers = next((entry for entry in same if entry[2] is not None), same[0])
        yield _finding(index, path, switch, sites, earlier, readers)


def _trained_holders(index: WorkspaceIndex) -> set[Value]:
    """What holds compiled state that some ``.train()`` switches back to training mode."""
    return {
        holder
        for path, switch in switches(index)
        if switch.mode == "train"
        for holder in switched_holders(index, path, switch)
    }


def _called_before(index: WorkspaceIndex, path: str, switch: ModeSwitch, sites: list[CompileSite]) -> Span | None:
    """A call of the compiled code earlier in the switch's function (it ran in training mode before)."""
    summary = index.summary(path)
    if summary is None:
        return None
    for placed in calls(summary):
        if placed.function != switch.function or placed.call.span.line >= switch.span.line:
            continue
        if set(compiled_callees(index, placed)) & set(sites):
            return placed.call.span
    return None


def _restored_unused(index: WorkspaceIndex, path: str, switch: ModeSwitch, sites: list[CompileSite]) -> bool:
    """The switch's function puts the mode back (``.train(...)`` on the same receiver, later) and no call between
    the two runs the compiled code, directly or through the workspace functions it calls: composer's generate
    callback switches to eval around a Hugging Face ``generate`` that never enters the compiled ``forward``."""
    summary = index.summary(path)
    if summary is None:
        return False
    restores = [
        other.span.line
        for other in summary.switches
        if other.function == switch.function
        and other.receiver_text == switch.receiver_text
        and other.mode != "eval"
        and other.span.line > switch.span.line
    ]
    if not restores or switch.in_loop:
        return False
    end = min(restores)
    between = [
        placed
        for placed in calls(summary)
        if placed.function == switch.function and switch.span.line < placed.call.span.line < end
    ]
    return not any(set(reached_sites(index, placed)) & set(sites) for placed in between)


def _restores(index: WorkspaceIndex, path: str, switch: ModeSwitch, sites: list[CompileSite]) -> bool:
    """``model.train(mode=original)`` that puts back the mode an earlier ``.eval()`` of the same function changed
    around work that ran no compiled code."""
    summary = index.summary(path)
    return switch.mode == "runtime" and any(
        other.mode == "eval"
        and other.function == switch.function
        and other.receiver_text == switch.receiver_text
        and other.span.line < switch.span.line
        and _restored_unused(index, path, other, sites)
        for other in (summary.switches if summary is not None else ())
    )


def _finding(
    index: WorkspaceIndex, path: str, switch: ModeSwitch, sites: list[CompileSite], earlier: Span | None, readers: str
) -> Finding:
    mode = "a mode chosen at run time" if switch.mode == "runtime" else "eval"
    cost = "2 compiles in all; both are reused afterwards"
    if reset_around(index, path, switch.function):
        cost = "the Dynamo reset around it drops that entry, so it compiles again every time"
    message = (
        f"`{switch.receiver_text}` switches to {mode} after the compiled module ran in training mode: layers "
        f"such as Dropout and BatchNorm read `training`, which {torch_name()} guards (`TRUE_MATCH ...training == "
        f"True`), so the other mode compiles a second entry ({cost})"
    )
    related = (Related(earlier, "the compiled module ran here in training mode"),) if earlier is not None else ()
    dropped = settings.guard_filter(sites, readers)
    if dropped is not None and dropped.drops and settings.guard_filter(sites, GRAD_MODE) is None:
        # the mode is no longer guarded, grad mode still is: which calls go wrong depends on how they run
        message += (
            f" (a hint: `guard_filter_fn={dropped.name.rpartition('.')[2]}` drops that guard but keeps grad mode's: "
            "evaluation under `torch.no_grad()` still compiles its own entry, evaluation with grad enabled keeps "
            "running the training-mode code, a silent wrong result)"
        )
        related = (*related, dropped.related)
        return index.finding(RULE, switch.span, message, sites, severity=Severity.HINT, related=related)
    return index.finding(RULE, switch.span, message, sites, related=related, guards_on=readers)


def _training_guards(index: WorkspaceIndex, compiled: Iterable[Value]) -> str:
    """Which modules' ``training`` the compiled code is guarded on, as the family a ``guard_filter_fn`` may drop:
    ``MODULE_STATE`` when a workspace class among the compiled module and its submodules reads ``self.training``,
    ``TORCH_NN_STATE`` when only ``torch.nn`` layers do (Dropout, BatchNorm ...), ``""`` when none is known to."""
    modules = set(index.evaluator.submodules(compiled, recursive=True))
    modules.update(v for v in compiled if isinstance(v, Instance | External))
    found = ""
    for module in modules:
        if isinstance(module, External) and module.instance and module.dotted.startswith("torch.nn."):
            if MODE_SENSITIVE.search(module.dotted.rpartition(".")[2]):
                found = TORCH_NN_STATE
        elif isinstance(module, Instance) and _reads_own_training(index, module.cls):
            return MODULE_STATE
    return found


def _reads_own_training(index: WorkspaceIndex, key: ClassKey) -> bool:
    """Whether a method of the class reads ``self.training``, or it derives from a ``torch.nn`` layer that does
    (``class BatchNorm(nn.BatchNorm2d)``)."""
    for owner in index.mro(key)[0]:
        summary = index.class_summary(owner)
        if summary is None:
            continue
        for base in summary.bases:
            torch_layer = base is not None and base.level == 0 and base.dotted.startswith("torch.nn.")
            if torch_layer and base is not None and MODE_SENSITIVE.search(base.last):
                return True
        for method in summary.methods:
            if any(e.attr == "training" and e.kind in READ_EVENTS for e in method.events):
                return True
    return False


CHECK = Check(RULE.code, judge_workspace=judge_workspace)
