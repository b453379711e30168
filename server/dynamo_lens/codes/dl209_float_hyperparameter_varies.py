"""DL209 · float-hyperparameter-varies

## What it does
Flags an optimizer whose `step` is compiled (`torch.compile(opt.step)`, or a compiled function that calls
`opt.step()`) while a learning-rate scheduler (`torch.optim.lr_scheduler.*`) or a write to
`opt.param_groups[...]["lr"]` changes the Python-float learning rate between steps, or a scheduler that cycles the
momentum (`OneCycleLR`, `CyclicLR`) changes `betas[0]` of an Adam-style optimizer.

## Why it matters
The optimizer's `step` reads `group["lr"]`; Dynamo guards the float by value
(`self.param_groups[0]['lr'] == 0.01`). Measured on torch 2.13 (`backend="eager"`, 12 steps, `Adam` with `StepLR`,
`SGD` with `LambdaLR`, and direct writes to `param_groups`): **2 compiles** of the step: one recompile, after which
the float becomes dynamic (`specialize_float=False`). With `lr=torch.tensor(0.01)` the step compiled once. The cost
on 2.13 is one extra compile, so the finding is `info`. Older releases specialised floats more eagerly; the PyTorch
tutorial on compiling the optimizer with an LR scheduler recommends a tensor learning rate for that reason.

## Example
```python
opt = torch.optim.Adam(model.parameters(), lr=0.01)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.9)

@torch.compile
def opt_step():
    opt.step()                      # DL209: guarded lr == 0.01, then dynamic

for x in loader:
    model(x).sum().backward()
    opt_step()
    sched.step()
```

## Use instead
Wrap the learning rate in a tensor: `torch.optim.Adam(model.parameters(), lr=torch.tensor(0.01))`.

## Known limitations
The optimizer (`name = torch.optim.X(...)`), the scheduler or the `param_groups` write, and the compiled step
(`torch.compile(opt.step)`, or a compiled function of the same file calling `opt.step()`) must all be in one file.
A learning rate built with `torch.tensor(...)` is not reported unless the scheduler also cycles `betas[0]` of an
Adam-style optimizer (`OneCycleLR` and `CyclicLR` do by default; measured: one recompile of the step, guard
`param_groups[0]['betas'][0] == 0.95`). SGD's `momentum`, cycled the same way, added no compile and is not
reported; other float hyperparameters are not followed.

## Fix safety
Wrapping the `lr=` value in `torch.tensor(...)` is offered as an unsafe fix: code that reads `group["lr"]` as a float
(logging, arithmetic on Python numbers) then sees a tensor.

## References
- PyTorch tutorial, "(beta) Running the compiled optimizer with an LR Scheduler":
  https://docs.pytorch.org/tutorials/recipes/compiling_optimizer_lr_scheduler.html
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from dynamo_lens.codes import Check, Rule
from dynamo_lens.model import Edit, Fix, Related, Severity
from dynamo_lens.static.context import FileContext, NodeAt
from dynamo_lens.static.semantic.usage import (
    UsageCandidate,
    judge_usage,
    local_function,
    position,
    root_name,
    scope_key,
)
from dynamo_lens.static.summary import CompileSite
from dynamo_lens.torch_facts import torch_name

RULE = Rule(
    code="DL209",
    name="float-hyperparameter-varies",
    summary="A compiled optimizer step reads a Python-float learning rate that a scheduler changes",
    default_severity=Severity.INFO,
    source="static",
    docs_url="https://docs.pytorch.org/tutorials/recipes/compiling_optimizer_lr_scheduler.html",
    fix_title="Use a tensor learning rate",
    confirmed_by=("DL501", "DL502"),
)


SCHEDULERS = "torch.optim.lr_scheduler."
TENSOR_FACTORIES = frozenset({"torch.tensor", "torch.as_tensor", "torch.full", "torch.ones", "torch.zeros"})


def collect(ctx: FileContext) -> Iterator[UsageCandidate]:
    if not ctx.compile_sites or ("lr_scheduler" not in ctx.text and "param_groups" not in ctx.text):
        return
    optimizers = _optimizers(ctx)
    if not optimizers:
        return
    steps = _compiled_steps(ctx, set(optimizers))
    if not steps:
        return
    for at in ctx.nodes(ast.Call, ast.Assign):
        found = _lr_change(ctx, at)
        if found is None:
            continue
        optimizer, what = found
        if optimizer not in steps or optimizer not in optimizers:
            continue
        lr, kind = optimizers[optimizer]
        float_lr = lr is None or not (isinstance(lr, ast.Call) and ctx.resolve(lr.func) in TENSOR_FACTORIES)
        betas = kind in WITH_BETAS and _cycles_momentum(ctx, at.node)
        if not float_lr and not betas:
            continue  # a tensor learning rate is guarded on metadata only
        changed = [name for name, on in (("learning rate", float_lr), ("`betas[0]`", betas)) if on]
        remedy = "with a tensor `lr` the step compiles once"
        if betas:
            remedy = "with `cycle_momentum=False`" + (" and a tensor `lr`" if float_lr else "") + " it compiles once"
        message = (
            f"{what} changes the Python-float {' and '.join(changed)} of `{optimizer}`, whose `step` is compiled: "
            f"{torch_name()} guards the float in `param_groups` by value, recompiles once and then treats it as "
            f"dynamic (2 compiles); {remedy}"
        )
        related = (Related(ctx.span(lr), "Python-float lr set here"),) if lr is not None and float_lr else ()
        where = at.node.targets[0] if isinstance(at.node, ast.Assign) else at.node
        yield UsageCandidate(
            RULE.code,
            ctx.span(where),
            message,
            RULE.default_severity,
            (steps[optimizer],),
            related=related,
            fixes=_tensor_lr_fix(ctx, lr),
        )


MOMENTUM_CYCLING = frozenset({f"{SCHEDULERS}OneCycleLR", f"{SCHEDULERS}CyclicLR"})
WITH_BETAS = frozenset({"Adam", "AdamW", "NAdam", "RAdam", "Adamax"})
"""Optimizers whose momentum is ``betas[0]``: a compiled step guards it by value (measured). SGD's ``momentum``
cycled the same way added no compile on 2.13."""


def _cycles_momentum(ctx: FileContext, node: ast.AST) -> bool:
    """``node`` builds a scheduler that also cycles the optimizer's momentum (``betas[0]`` of an Adam-style
    optimizer) between steps: ``OneCycleLR`` and ``CyclicLR`` unless ``cycle_momentum=False``."""
    if not isinstance(node, ast.Call) or ctx.resolve(node.func) not in MOMENTUM_CYCLING:
        return False
    cycle = next((k.value for k in node.keywords if k.arg == "cycle_momentum"), None)
    return not (isinstance(cycle, ast.Constant) and cycle.value is False)


def _optimizers(ctx: FileContext) -> dict[str, tuple[ast.expr | None, str]]:
    """Names bound to ``torch.optim.<Optimizer>(...)`` → their ``lr=`` expression (None if not given) and class."""
    found: dict[str, tuple[ast.expr | None, str]] = {}
    for at in ctx.nodes(ast.Assign):
        node = at.node
        assert isinstance(node, ast.Assign)
        value = node.value
        if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name) or not isinstance(value, ast.Call):
            continue
        name = ctx.resolve(value.func) or ""
        if not name.startswith("torch.optim.") or name.startswith(SCHEDULERS):
            continue
        if not name.rpartition(".")[2][:1].isupper():
            continue
        lr = next((k.value for k in value.keywords if k.arg == "lr"), value.args[1] if len(value.args) > 1 else None)
        found[node.targets[0].id] = lr, name.rpartition(".")[2]
    return found


def _compiled_steps(ctx: FileContext, optimizers: set[str]) -> dict[str, CompileSite]:
    """Optimizer name → the compile site that compiles its ``step`` (directly or inside a compiled function)."""
    definitions = {node.name: node for at in ctx.nodes(ast.FunctionDef) if isinstance(node := at.node, ast.FunctionDef)}
    found: dict[str, CompileSite] = {}
    for site in ctx.compile_sites:
        function = local_function(ctx, site)
        if site.target_text.endswith(".step"):
            owner = site.target_text[: -len(".step")]
            if owner in optimizers:
                found.setdefault(owner, site)
        elif function is not None:
            definition = definitions.get(function.rpartition(".")[2])
            if definition is None:
                continue
            for node in ast.walk(definition):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "step"
                    and isinstance(node.func.value, ast.Name)
                    and node.func.value.id in optimizers
                ):
                    found.setdefault(node.func.value.id, site)
    return found


def _lr_change(ctx: FileContext, at: NodeAt) -> tuple[str, str] | None:
    """(optimizer name, description) if ``at`` builds an LR scheduler or writes a param group's ``"lr"``."""
    node = at.node
    if isinstance(node, ast.Call):
        name = ctx.resolve(node.func) or ""
        if not name.startswith(SCHEDULERS):
            return None
        optimizer = next((k.value for k in node.keywords if k.arg == "optimizer"), node.args[0] if node.args else None)
        if isinstance(optimizer, ast.Name):
            return optimizer.id, f"`{name.rpartition('.')[2]}`"
        return None
    assert isinstance(node, ast.Assign)
    for target in node.targets:
        if not (isinstance(target, ast.Subscript) and _is_lr_key(target.slice)):
            continue
        group = target.value
        group_root: ast.expr | None
        if isinstance(group, ast.Subscript) and isinstance(group.value, ast.Attribute):
            group_root = group.value
        elif isinstance(group, ast.Name):
            group_root = _param_groups_loop(ctx, at, group.id)
        else:
            group_root = None
        if isinstance(group_root, ast.Attribute) and group_root.attr == "param_groups":
            root, _ = root_name(group_root.value)
            if root is not None:
                return root, f"`{ctx.source(target, 30)} = ...`"
    return None


def _is_lr_key(key: ast.expr) -> bool:
    return isinstance(key, ast.Constant) and key.value == "lr"


def _param_groups_loop(ctx: FileContext, at: NodeAt, name: str) -> ast.expr | None:
    """``opt.param_groups`` when ``name`` is the variable of an enclosing ``for name in opt.param_groups:``."""
    line = position(at.node)[0]
    for loop_at in ctx.nodes(ast.For):
        loop = loop_at.node
        assert isinstance(loop, ast.For)
        if scope_key(loop_at.scope) != scope_key(at.scope):
            continue
        if not (loop.body[0].lineno <= line <= (loop.end_lineno or loop.lineno)):
            continue
        if isinstance(loop.target, ast.Name) and loop.target.id == name:
            return loop.iter
    return None


def _tensor_lr_fix(ctx: FileContext, lr: ast.expr | None) -> tuple[Fix, ...]:
    torch = ctx.torch_name()
    if torch is None or not isinstance(lr, ast.Constant) or not isinstance(lr.value, float):
        return ()
    edit = Edit(ctx.span(lr), f"{torch}.tensor({ctx.source(lr)})")
    return (Fix(RULE.fix_title or "Use a tensor learning rate", (edit,)),)


CHECK = Check(RULE.code, collect=collect, judge=judge_usage)
