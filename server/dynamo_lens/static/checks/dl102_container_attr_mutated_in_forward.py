"""DL102: a list/dict/set attribute changed by the traced call and read by the next one (``self.history.append``)."""

from __future__ import annotations

from collections.abc import Iterator

from dynamo_lens.model import Finding, Severity
from dynamo_lens.rules.dl102_container_attr_mutated_in_forward import RULE
from dynamo_lens.static.checks import Check
from dynamo_lens.static.index import WorkspaceIndex
from dynamo_lens.static.state_flow import Access, AttrFlow, ClassFlow, init_related, judge_attrs, read_related, sites_of
from dynamo_lens.static.walk import GROWING_METHODS, SHRINKING_METHODS

_LIST_ONLY = frozenset({"append", "extend", "insert", "appendleft", "extendleft"})
_CONTAINERS = frozenset({"list", "dict", "set"})
_GUARD = {"list": "its length (LENGTH_CHECK)", "dict": "its keys (DICT_LENGTH)", "set": "its length (LENGTH_CHECK)"}


def judge_workspace(index: WorkspaceIndex) -> list[Finding]:
    return judge_attrs(index, _judge)


def _container_kind(attr: AttrFlow, mutations: list[Access]) -> str | None:
    kind = attr.init_kind
    if kind in _CONTAINERS:
        return kind
    if kind in (None, "unknown") and mutations and all(a.event.detail in _LIST_ONLY for a in mutations):
        return "list"  # only list methods are called on it: a list set up outside __init__
    return None


def _judge(index: WorkspaceIndex, flow: ClassFlow, attr: AttrFlow) -> Iterator[Finding]:
    mutations = [a for a in attr.accesses if a.event.kind == "mutate"]
    kind = _container_kind(attr, mutations)
    if kind is None:
        return
    growing = [a for a in attr.accesses if not a.fresh and _grows(a, kind)]
    if not growing:
        return
    if _reset_before_return(attr, growing):
        return
    init_keys = set(attr.init[1].keys) if attr.init is not None else set()
    for access in growing:
        event = access.event
        bounded = event.detail == "setitem" and event.text != "" and event.text in init_keys
        if bounded:
            continue  # the key exists from the start: the dict's structure never changes
        bounded = event.detail == "setitem" and event.text != ""
        yield _finding(index, flow, attr, kind, access, bounded)


def _grows(access: Access, kind: str) -> bool:
    event = access.event
    if event.kind == "mutate":
        return event.detail in GROWING_METHODS or event.detail in ("setitem", "setitem-aug")
    if event.kind == "aug":
        return kind == "list"  # self.log += [x]
    if event.kind == "write":
        return event.detail == "concat"  # self.log = self.log + [x]
    return False


def _reset_before_return(attr: AttrFlow, growing: list[Access]) -> bool:
    """The call always ends by emptying the container (``self.buf.clear()`` / ``self.buf = []`` on every path)."""
    last_growth = max(attr.accesses.index(a) for a in growing)
    for access in attr.accesses[last_growth + 1 :]:
        event = access.event
        if not access.definite:
            continue
        if event.kind == "mutate" and event.detail == "clear":
            return True
        if event.kind == "write" and event.detail == "const" and event.text in ("[]", "{}", "set()"):
            return True
    return False


def _finding(
    index: WorkspaceIndex, flow: ClassFlow, attr: AttrFlow, kind: str, access: Access, bounded: bool
) -> Finding:
    name = f"self.{attr.attr}"
    event = access.event
    place = f"`{access.method}`" + (f" (called from `{flow.entry}`)" if access.method != flow.entry else "")
    if event.detail == "setitem-aug":
        action = f"updates a value stored in `{name}`"
        cost = (
            "Dynamo (torch 2.13) guards the stored value it reads (EQUALS_MATCH on the item), so every call "
            "recompiles; after recompile_limit (8) the frame runs eagerly"
        )
        bounded = False
    elif bounded:
        action = f"adds the key {event.text} to `{name}`"
        cost = (
            f"Dynamo guards {_GUARD[kind]}, which changes once: one extra compile; create the key in `__init__` "
            "to avoid it"
        )
    else:
        shrinks = any(a.event.detail in SHRINKING_METHODS for a in attr.accesses if a.event.kind == "mutate")
        action = f"grows the {kind} `{name}`" + (
            " (and shrinks it, by an amount the analysis cannot tell)" if shrinks else ""
        )
        cost = (
            f"Dynamo (torch 2.13) guards {_GUARD[kind]}, so each call that changes it recompiles; after "
            "recompile_limit (8) the frame runs eagerly"
        )
    message = f"{action} in {place}, and the next call reads it: {cost}"
    sites = sites_of(index, [access, *attr.carried_reads])
    return index.finding(
        RULE,
        event.span,
        message,
        sites,
        severity=Severity.INFO if bounded else None,
        related=(*init_related(attr), *read_related(attr, event.span)),
        data={"attribute": attr.attr, "kind": kind, "class": flow.cls[1], "unbounded": not bounded},
    )


CHECK = Check(RULE.code, judge_workspace=judge_workspace)
