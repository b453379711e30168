"""DL212 · rank-specialised

## What it does
Hints at a read of this process's rank inside compiled code: `torch.distributed.get_rank()`, the `RANK` /
`LOCAL_RANK` / `GROUP_RANK` / `NODE_RANK` environment variables that `torchrun` sets (`os.environ[...]`,
`os.environ.get(...)`, `os.getenv(...)`), or a module attribute the class sets from one of those
(`self.rank = dist.get_rank()` in `__init__`, read in `forward`).

## Why it matters
Dynamo reads the rank while it traces and specialises the graph on it: each rank compiles code of its own. Measured
on torch 2.13 with two gloo ranks on CPU: `if dist.get_rank() == 0: x = x + 1` gave rank 0 a 4-node graph and rank
1 a 3-node one (one compile each); `os.environ["RANK"]` was guarded `os.environ._data[b'RANK'] == b'0'` on rank 0
and `== b'1'` on rank 1; an attribute set from the rank was guarded `self.rank == 0` and `self.rank == 1`. Where
the rank decides what the graph does, the ranks run different compiled code, and a collective that only some of them
reach waits until its timeout. Whether that matters depends on what the rank decides (an offset into a sharded
table is harmless), which a scan cannot tell: this is a hint, and `dynamo-lens run -m torch.distributed.run …`
shows whether the ranks compiled differently (DL504).

## Example
```python
@torch.compile
def step(x):
    if dist.get_rank() == 0:        # DL212 (hint): each rank compiles its own graph
        x = x + 1
    return x * 2
```

## Use instead
Decide rank-dependent things outside the compiled region and pass the result in as a tensor, or keep the compiled
code the same on every rank (log, save and print on rank 0 outside it).

## Known limitations
Only direct reads and attributes assigned from them in the class itself are followed: a rank passed in as an argument
or kept in a global is not. Reads in code that is not compiled are not reported.

## Fix safety
No fix is offered.

## References
- PyTorch, "torch.compile and distributed": https://docs.pytorch.org/docs/stable/torch.compiler_faq.html
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from dynamo_lens.codes import Check, Rule
from dynamo_lens.model import Severity
from dynamo_lens.static.context import FileContext
from dynamo_lens.static.semantic.bodies import InsideCompiledCandidate, function_bodies, judge
from dynamo_lens.torch_facts import torch_name

RULE = Rule(
    code="DL212",
    name="rank-specialised",
    summary="Compiled code reads the process's rank: each rank compiles a graph of its own",
    default_severity=Severity.HINT,
    source="static",
    docs_url="https://docs.pytorch.org/docs/stable/torch.compiler_faq.html",
    confirmed_by=("DL504",),
)

RANK_CALLS = frozenset({"torch.distributed.get_rank", "torch.distributed.get_node_local_rank"})
RANK_VARIABLES = frozenset({"RANK", "LOCAL_RANK", "GROUP_RANK", "NODE_RANK"})
ENVIRONMENT_GETTERS = frozenset({"os.environ.get", "os.getenv"})


def collect(ctx: FileContext) -> Iterator[InsideCompiledCandidate]:
    if not any("rank" in line.lower() for line in ctx.lines.lines):
        return
    attributes = _rank_attributes(ctx)
    for body in function_bodies(ctx):
        names = attributes.get(body.qualname.rpartition(".")[0], set())

        def mentions(line: str, names: set[str] = names) -> bool:
            return "rank" in line.lower() or any(name in line for name in names)

        for _, node in body.expressions(mentions):
            what = _rank_read(ctx, node) or _attribute_read(node, names)
            if what is None:
                continue
            yield InsideCompiledCandidate(
                code=RULE.code,
                span=ctx.span(node),
                function=body.qualname,
                message=(
                    f"`{ctx.source(node, 60)}` reads {what} inside compiled code: Dynamo specialises the graph on it "
                    f"({torch_name()}), so each rank compiles code of its own: where the rank decides what the "
                    "graph does, the ranks run different compiled code (check with `dynamo-lens run -m "
                    "torch.distributed.run …`, DL504)"
                ),
                severity=RULE.default_severity,
            )


def _rank_read(ctx: FileContext, node: ast.AST) -> str | None:
    """``"the process's rank"`` for ``dist.get_rank()``, ``os.environ["RANK"]``, ``os.getenv("LOCAL_RANK")``."""
    if isinstance(node, ast.Call):
        called = ctx.resolve(node.func)
        if called in RANK_CALLS:
            return "the process's rank"
        if called in ENVIRONMENT_GETTERS and node.args and _rank_variable(node.args[0]):
            return "the process's rank"
    if isinstance(node, ast.Subscript) and ctx.resolve(node.value) == "os.environ" and _rank_variable(node.slice):
        return "the process's rank"
    return None


def _rank_variable(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value in RANK_VARIABLES


def _attribute_read(node: ast.AST, names: set[str]) -> str | None:
    if (
        isinstance(node, ast.Attribute)
        and isinstance(node.ctx, ast.Load)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
        and node.attr in names
    ):
        return "an attribute set from the process's rank"
    return None


def _rank_attributes(ctx: FileContext) -> dict[str, set[str]]:
    """Class qualname → its attributes assigned (``self.<name> = …``) from a rank read, in any of its methods."""
    found: dict[str, set[str]] = {}
    lines = ctx.lines.lines
    for at in ctx.nodes(ast.Assign):
        statement = at.node
        assert isinstance(statement, ast.Assign)
        cls = at.scope.class_name
        written = lines[statement.lineno - 1 : statement.end_lineno or statement.lineno]
        if cls is None or not any("rank" in line.lower() for line in written):
            continue
        if not any(_rank_read(ctx, node) for node in ast.walk(statement.value)):
            continue
        for target in statement.targets:
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
                found.setdefault(cls, set()).add(target.attr)
    return found


CHECK = Check(RULE.code, collect=collect, judge=judge, judged_locally=True)
