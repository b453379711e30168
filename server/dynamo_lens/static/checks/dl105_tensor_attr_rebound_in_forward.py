"""DL105: a tensor attribute read by the next call that goes from ``None`` to a tensor, or grows, in traced code."""

from __future__ import annotations

import re
from collections.abc import Iterator

from dynamo_lens.model import Finding
from dynamo_lens.rules.dl105_tensor_attr_rebound_in_forward import RULE
from dynamo_lens.static.checks import Check
from dynamo_lens.static.index import WorkspaceIndex
from dynamo_lens.static.state_flow import Access, AttrFlow, ClassFlow, init_related, judge_attrs, read_related, sites_of

_GROWING_CALL = re.compile(r"\b(cat|concat|concatenate|stack|hstack|vstack|column_stack|dstack)\(")
_TENSOR_KINDS = frozenset({"tensor", "buffer", "parameter"})


def judge_workspace(index: WorkspaceIndex) -> list[Finding]:
    return judge_attrs(index, _judge)


def _judge(index: WorkspaceIndex, flow: ClassFlow, attr: AttrFlow) -> Iterator[Finding]:
    if attr.init is None or not attr.carried:
        return
    writes = [a for a in attr.changes if a.event.kind == "write" and a.event.detail != "del"]
    if not writes:
        return
    name = f"self.{attr.attr}"
    kinds = {a.event.value_kind for a in writes}
    if attr.init_kind == "none" and "tensor" in kinds and kinds <= {"tensor", "unknown", "none"}:
        if not [a for a in attr.carried_reads if a.event.kind == "read"]:
            return
        for access in writes:
            if access.event.value_kind == "none":
                continue
            message = (
                f"`{name}` starts as `None` and {_place(flow, access.method)} makes it a tensor that the next call "
                f"reads: the first call guards `{name} is None` (NONE_MATCH), so the second call recompiles once "
                "(torch 2.13); later calls with the same shape and dtype reuse that entry"
            )
            yield _finding(index, flow, attr, access, message)
    elif attr.init_kind in _TENSOR_KINDS:
        for access in writes:
            event = access.event
            if event.detail == "self" and _GROWING_CALL.search(event.text):
                message = (
                    f"`{name} = {event.text}` in {_place(flow, access.method)} grows a tensor that the next call "
                    "reads: its size guard fails on the second call, Dynamo marks the dimension dynamic (automatic "
                    "dynamic shapes, torch 2.13) and compiles once more"
                )
                yield _finding(index, flow, attr, access, message)


def _place(flow: ClassFlow, method: str) -> str:
    return f"`{method}`" + (f" (called from `{flow.entry}`)" if method != flow.entry else "")


def _finding(index: WorkspaceIndex, flow: ClassFlow, attr: AttrFlow, access: Access, message: str) -> Finding:
    return index.finding(
        RULE,
        access.event.span,
        message,
        sites_of(index, [access, *attr.carried_reads]),
        related=(*init_related(attr), *read_related(attr, access.event.span)),
        data={"attribute": attr.attr, "class": flow.cls[1]},
    )


CHECK = Check(RULE.code, judge_workspace=judge_workspace)
