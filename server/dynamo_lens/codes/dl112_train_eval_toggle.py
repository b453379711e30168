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
from collections.abc import Iterator
from dataclasses import dataclass

from dynamo_lens.codes import Check, Rule
from dynamo_lens.model import Finding, Related, Severity, Span
from dynamo_lens.static.context import FileContext, NodeAt
from dynamo_lens.static.semantic.index import ClassKey, WorkspaceIndex
from dynamo_lens.static.semantic.state_flow import unseen_summaries
from dynamo_lens.static.semantic.usage import READ_EVENTS, Usage, method_calls, position, scope_key, usage
from dynamo_lens.static.summary import Candidate, CompileSite, Ref

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
CONTAINERS = frozenset({"Sequential", "ModuleList", "ModuleDict"})
MODE_METHODS = frozenset({"eval", "train"})


@dataclass(frozen=True, slots=True)
class ModeSwitch(Candidate):
    receiver: str
    mode: str
    cls: Ref | None
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
        cls = handle.site.target.ref if handle.site.target.kind == "instance" else None
        if cls is None:
            cls = table.class_ref(scope_key(at.scope), handle.site.target.text or handle.name, position(call))
        yield ModeSwitch(RULE.code, ctx.span(call), func.value.id, mode, cls, handle.site, ctx.span(earlier.call))


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
    path = candidate.site.span.path
    key = index.resolve_class(path, candidate.cls) if candidate.cls is not None else None
    if key is not None and not _reads_training(index, key, set()):
        return  # no Dropout/BatchNorm and no `self.training` read: one compiled entry serves both modes
    if key is None and candidate.cls is not None and candidate.cls.level == 0:
        last = candidate.cls.last
        if candidate.cls.dotted.startswith("torch.nn.") and last not in CONTAINERS and not MODE_SENSITIVE.search(last):
            return
    message = (
        f"`{candidate.receiver}` switches to {candidate.mode} after the compiled module ran in training mode: layers "
        "such as Dropout and BatchNorm read `training`, which torch 2.13 guards (`TRUE_MATCH ...training == True`), "
        "so the other mode compiles a second entry (2 compiles in all; both are reused afterwards)"
    )
    related = (Related(candidate.earlier, "the compiled module ran here in training mode"),)
    yield index.finding(RULE, candidate.span, message, (candidate.site,), related=related)


def _reads_training(index: WorkspaceIndex, key: ClassKey, seen: set[ClassKey]) -> bool:
    """Whether instances of ``key`` read ``training`` anywhere (themselves or through a submodule)."""
    for owner, summary in unseen_summaries(index, key, seen):
        for method in summary.methods:
            if any(e.attr == "training" and e.kind in READ_EVENTS for e in method.events):
                return True
        for attr in summary.init_attrs:
            for constructor in attr.constructors:
                sub = index.resolve_class(owner[0], constructor)
                if sub is not None:
                    if index.is_module_class(sub) and _reads_training(index, sub, seen):
                        return True
                elif constructor.level == 0 and constructor.dotted.startswith("torch.nn."):
                    if MODE_SENSITIVE.search(constructor.last):
                        return True
                elif constructor.level != 0 or not _is_plain_call(constructor):
                    return True  # a module from outside the workspace: assume it may read `training`
    return False


def _is_plain_call(ref: Ref) -> bool:
    """Builtins and torch functions used in ``__init__`` values (``torch.zeros``, ``range``), not modules."""
    return ref.dotted.startswith("torch.") or "." not in ref.dotted


CHECK = Check(RULE.code, collect=collect, judge=judge)
