"""The candidates of the checks about code inside compiled regions (DL204, DL205, DL301, DL302), and how ``link``
turns them into findings.

``collect`` records a candidate in every function that *could* be compiled; whether it is compiled is known only at
link time, across files. There a candidate becomes a finding at the rule's severity (or the lower one the check
chose, e.g. for bounded costs) when a compile site reaches its function, a hint when its function is only reachable
from the ``forward`` of an ``nn.Module`` that the workspace never compiles, and nothing otherwise: a ``print`` in a
plain script is no hazard.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from dynamo_lens.model import Finding, Related, Severity
from dynamo_lens.rules import get_rule
from dynamo_lens.static.checks._python_values import TensorInference, body_nodes, local_names
from dynamo_lens.static.context import FileContext
from dynamo_lens.static.summary import Candidate

if TYPE_CHECKING:
    from dynamo_lens.static.index import WorkspaceIndex


@dataclass(frozen=True, slots=True)
class InsideCompiledCandidate(Candidate):
    """A hazard at ``span`` inside the function ``function`` (qualified name in ``span.path``)."""

    function: str
    message: str
    severity: Severity
    related: tuple[Related, ...] = ()
    data: tuple[tuple[str, str], ...] = ()


@dataclass(slots=True, eq=False)
class FunctionBody:
    """One ``def`` of the file and the nodes Dynamo traces in it (nested ``def``s excluded)."""

    node: ast.FunctionDef | ast.AsyncFunctionDef
    qualname: str
    parent: FunctionBody | None
    """The enclosing function, for a nested ``def``."""
    nodes: list[ast.AST]
    _locals: set[str] | None = field(default=None, repr=False)
    _tensors: TensorInference | None = field(default=None, repr=False)

    def locals(self) -> set[str]:
        if self._locals is None:
            self._locals = local_names(self.node, self.nodes)
        return self._locals

    def tensors(self, ctx: FileContext) -> TensorInference:
        if self._tensors is None:
            self._tensors = TensorInference(self.node, self.nodes, ctx.resolve)
        return self._tensors


_last: tuple[FileContext, list[FunctionBody]] | None = None


def function_bodies(ctx: FileContext) -> list[FunctionBody]:
    """Every function of the file, walked once per file however many checks ask (the last file is remembered)."""
    global _last
    if _last is not None and _last[0] is ctx:
        return _last[1]
    bodies: dict[int, FunctionBody] = {}
    for at in ctx.nodes(ast.FunctionDef, ast.AsyncFunctionDef):
        node = at.node
        assert isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        qualname = f"{at.scope.qualname}.{node.name}" if at.scope.qualname else node.name
        enclosing = at.scope.function
        parent = bodies.get(id(enclosing.node)) if enclosing is not None else None
        bodies[id(node)] = FunctionBody(node, qualname, parent, list(body_nodes(node, ctx.resolve)))
    result = list(bodies.values())
    _last = (ctx, result)
    return result


def name_loads(body: FunctionBody) -> Iterator[ast.Name]:
    """Names the function reads, including the target of ``name += ...`` (read, then written)."""
    for node in body.nodes:
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            yield node
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            yield node.target


def sorted_by_position(nodes: Iterable[ast.Name]) -> list[ast.Name]:
    return sorted(nodes, key=lambda n: (n.lineno, n.col_offset))


def judge(candidate: InsideCompiledCandidate, index: WorkspaceIndex) -> Iterator[Finding]:
    """The candidate's finding when compiled code reaches its function, a hint inside an uncompiled module's
    ``forward`` (or a method it calls), nothing elsewhere."""
    rule = get_rule(candidate.code)
    assert rule is not None, candidate.code
    path = candidate.span.path
    sites = index.sites_for_scope(path, candidate.function)
    if not sites and not _in_module_forward(index, path, candidate.function):
        return
    yield index.finding(
        rule,
        candidate.span,
        candidate.message,
        sites,
        severity=candidate.severity,
        related=candidate.related,
        data=dict(candidate.data),
    )


def _in_module_forward(index: WorkspaceIndex, path: str, function: str) -> bool:
    """``function`` is ``forward`` of an ``nn.Module`` subclass, or a method ``forward`` calls as ``self.name()``."""
    owner, _, method = function.rpartition(".")
    if not owner or not index.is_module_class((path, owner)):
        return False
    if method == "forward":
        return True
    summary = index.class_summary((path, owner))
    forward = summary.method("forward") if summary is not None else None
    return forward is not None and any(e.kind == "call" and e.attr == method for e in forward.events)
