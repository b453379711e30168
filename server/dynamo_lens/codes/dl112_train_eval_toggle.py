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

## Use instead
Nothing needs to change: two compiled entries are the expected price of two modes. To avoid compiling the
evaluation mode at all, run evaluation on the uncompiled module (`model(x)` instead of `compiled(x)`).

## Known limitations
Only a switch *to* eval mode (or to a mode computed at run time) after the compiled module ran is reported, on a
name bound in the same file. For workspace classes the finding needs a layer that reads `training`: a `Dropout`,
`BatchNorm`, `InstanceNorm`, RNN or attention layer among the submodules built in `__init__` (recursively), a
`self.training` read, or a submodule from outside the workspace (assumed to read it). A `torch.nn` layer without
such behaviour (`nn.Linear`) is not reported; `nn.Sequential` and other containers are.

## Fix safety
No fix is offered.

## References
- PyTorch, "Dealing with recompilations": https://docs.pytorch.org/docs/stable/compile/programming_model.recompilation.html
- `torch.nn.Module.train`: https://docs.pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.train
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from dynamo_lens.codes import Check, Rule
from dynamo_lens.model import Finding, Related, Severity, Span
from dynamo_lens.static.context import FileContext, NodeAt
from dynamo_lens.static.semantic.evaluate import External, Instance, Value
from dynamo_lens.static.semantic.index import ClassKey, WorkspaceIndex
from dynamo_lens.static.semantic.usage import READ_EVENTS, Usage, method_calls, scope_key, usage
from dynamo_lens.static.summary import Candidate, CompileSite
from dynamo_lens.torch_facts import TORCH

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


@dataclass(frozen=True, slots=True)
class ModeSwitch(Candidate):
    receiver: str
    mode: str
    site: CompileSite
    earlier: Span


def collect(ctx: FileContext) -> Iterator[ModeSwitch]:
    table = usage(ctx)
    if not table.handles:
        return
    for at, call, func in method_calls(ctx, MODE_METHODS):
        if not isinstance(func.value, ast.Name):
            continue
        mode = _mode(func.attr, call)
        if mode is None:
            continue
        handle = table.handle(scope_key(at.scope), func.value.id)
        if handle is None or not handle.module:
            continue
        earlier = table.ran_before({handle.site}, at, next_iteration=_trains_in_loop(table, at, func.value.id))
        if earlier is None:
            continue  # switched before the first compiled call (every iteration): only that mode is compiled
        yield ModeSwitch(RULE.code, ctx.span(call), func.value.id, mode, handle.site, ctx.span(earlier.call))


def _trains_in_loop(table: Usage, at: NodeAt, name: str) -> bool:
    """A loop around ``at`` also switches ``name`` back to training mode (so the next iteration trains again)."""
    for loop in table.enclosing_loops(at):
        for node in ast.walk(loop):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "train"
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == name
                and _mode("train", node) is None
            ):
                return True
    return False


def _mode(method: str, call: ast.Call) -> str | None:
    """ "eval" or "a mode chosen at run time"; None for a switch to training mode (the mode modules start in)."""
    if method == "eval":
        return "eval"
    flag = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "mode"), None)
    if flag is None:
        return None
    if isinstance(flag, ast.Constant):
        return "eval" if flag.value is False else None
    return "a mode chosen at run time"


def judge(candidate: ModeSwitch, index: WorkspaceIndex) -> Iterator[Finding]:
    if not _reads_training(index, index.reach.site_values(candidate.site)):
        return  # nothing compiled there is known to read `training`: one entry serves both modes, or we cannot tell
    message = (
        f"`{candidate.receiver}` switches to {candidate.mode} after the compiled module ran in training mode: layers "
        f"such as Dropout and BatchNorm read `training`, which {TORCH} guards (`TRUE_MATCH ...training == True`), "
        "so the other mode compiles a second entry (2 compiles in all; both are reused afterwards)"
    )
    related = (Related(candidate.earlier, "the compiled module ran here in training mode"),)
    yield index.finding(RULE, candidate.span, message, (candidate.site,), related=related)


def _reads_training(index: WorkspaceIndex, compiled: Iterable[Value]) -> bool:
    """Whether a compiled module, or one of its submodules, reads ``training``: a workspace class whose methods read
    ``self.training``, or a ``torch.nn`` layer whose forward does (Dropout, BatchNorm ...)."""
    modules = set(index.evaluator.submodules(compiled, recursive=True))
    modules.update(v for v in compiled if isinstance(v, Instance | External))
    for module in modules:
        if isinstance(module, External) and module.instance and module.dotted.startswith("torch.nn."):
            if MODE_SENSITIVE.search(module.dotted.rpartition(".")[2]):
                return True
        elif isinstance(module, Instance) and _reads_own_training(index, module.cls):
            return True
    return False


def _reads_own_training(index: WorkspaceIndex, key: ClassKey) -> bool:
    for owner in index.mro(key)[0]:
        summary = index.class_summary(owner)
        for method in summary.methods if summary is not None else ():
            if any(e.attr == "training" and e.kind in READ_EVENTS for e in method.events):
                return True
    return False


CHECK = Check(RULE.code, collect=collect, judge=judge)
