"""What changed between two cache entries of a compiled frame, grouped by what the guards protect.

Dynamo says *which* guard of an old entry failed; the diff says what the new entry guards instead, which is what a
user needs to see the pattern: ``self.steps == 2`` → ``== 3`` (a counter), ``x`` size[0] 4 → dynamic (automatic
dynamic shapes), ``n == 1`` → dynamic (int) (a Python number made symbolic).

Guarded sources are shown as the user would write them: ``L['self']._modules['body']._modules['0'].training``
reads ``self.body[0].training``.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from dynamo_lens.runtime.report import CacheEntry, Frame, Guard

NOISE_KINDS = frozenset(
    {
        "DIMENSION_DYNAMIC_MARKING_GUARD",
        "NO_TENSOR_ALIASING",
        "DEFAULT_DEVICE",
        "TORCH_FUNCTION_MODE_STACK",
        "GLOBAL_STATE",
        "AUTOGRAD_SAVED_TENSORS_HOOKS",
        "DICT_VERSION",
        "NOT_PRESENT_IN_GENERIC_DICT",
    }
)
"""Guard kinds that hovers collapse: they rarely change between entries and never name a user value."""

LENGTH_KINDS = ("LENGTH_CHECK", "DICT_LENGTH")
"""Guard kinds that pin the length of a list or dict rather than a value."""

_SCOPE = re.compile(r"""\b[LG]\[(['"])(?P<name>[^'"]+)\1\]""")
_DICT_CONTAINER = re.compile(r"""\.__dict__\[(['"])(?:_modules|_parameters|_buffers)\1\]\[(['"])(?P<key>[^'"]+)\2\]""")
_CONTAINER = re.compile(r"""\.(?:_modules|_parameters|_buffers|__dict__)\[(['"])(?P<key>[^'"]+)\1\]""")
_STATE_FLAG = re.compile(r'"(?P<key>\w+)":(?P<value>true|false|-?\d+(?:\.\d+)?)(?=[,}])')
_RAW_TENSOR = re.compile(
    r"check_tensor\((?P<name>[^,]+),.*?torch\.(?P<dtype>\w+),.*?requires_grad=(?P<grad>\w+),"
    r"\s*size=\[(?P<size>[^\]]*)\],\s*stride=\[(?P<stride>[^\]]*)\]"
)
_READABLE_TENSOR = re.compile(
    r"^(?P<name>[^:]+):\s*(?P<dtype>\w+)\[(?P<size>[^\]]*)\](?:\s*stride\s*\[(?P<stride>[^\]]*)\])?"
    r"(?P<grad>\s+requires_grad\b)?"
)
_BUILTINS_DICT = re.compile(r"__builtins_dict___\d+")
_SHAPE_OF = re.compile(r"(?P<name>[A-Za-z_][\w.]*?)(?:\._base)?\.(?:size|stride|storage_offset)\(\)")
_COMMENT = re.compile(r"\s+#\s")
_COMPARISON = re.compile(r"^(?P<lhs>.+?)\s*(?P<op>==|!=|<=|>=|<|>| is not | is )\s*(?P<rhs>.+)$")


@functools.lru_cache(maxsize=8192)
def readable_source(source: str) -> str:
    """``L['self']._modules['lin']._parameters['weight']`` → ``self.lin.weight``; ``G['SCALE']`` → ``SCALE``."""

    def container(match: re.Match[str]) -> str:
        key = match.group("key")
        return f".{key}" if key.isidentifier() else f"[{key}]"

    text = _SCOPE.sub(lambda m: m.group("name"), source)
    text = _BUILTINS_DICT.sub("__builtins__", text)  # Dynamo numbers its builtins dict per compile
    text = _DICT_CONTAINER.sub(container, text)  # self.__dict__['_modules']['drop'] → self.drop
    return _CONTAINER.sub(container, text)


@functools.lru_cache(maxsize=8192)
def readable_guard_text(text: str) -> str:
    """A guard's code with Dynamo's scopes and module containers rewritten as in :func:`readable_source`; the
    ``# <source line>  # <file>:<line>`` comment Dynamo appends to verbose guard texts is dropped."""
    return readable_source(_COMMENT.split(text, maxsplit=1)[0].rstrip())


@dataclass(frozen=True, slots=True)
class TensorFacts:
    """The metadata a TENSOR_MATCH guard checks; ``None`` in ``size``/``stride`` marks a dynamic dimension."""

    name: str
    dtype: str
    size: tuple[str | None, ...]
    stride: tuple[str | None, ...]
    requires_grad: bool | None


def parse_tensor_guard(text: str) -> TensorFacts | None:
    """Read a TENSOR_MATCH text, raw (``check_tensor(...)``) or readable (``x: float32[4, 8] stride [8, 1]``)."""
    raw = _RAW_TENSOR.search(text)
    if raw is not None:
        return TensorFacts(
            name=readable_source(raw.group("name").strip()),
            dtype=raw.group("dtype"),
            size=_dims(raw.group("size")),
            stride=_dims(raw.group("stride")),
            requires_grad=raw.group("grad") == "True",
        )
    readable = _READABLE_TENSOR.match(text.strip())
    if readable is not None:
        return TensorFacts(
            name=readable_source(readable.group("name").strip()),
            dtype=readable.group("dtype"),
            size=_dims(readable.group("size")),
            stride=_dims(readable.group("stride") or ""),
            requires_grad=readable.group("grad") is not None,
        )
    return None


def _dims(text: str) -> tuple[str | None, ...]:
    dims = [d.strip() for d in text.split(",") if d.strip()]
    return tuple(None if d == "None" or not d.lstrip("-").isdigit() else d for d in dims)


@dataclass(frozen=True, slots=True)
class GuardChange:
    """How the guards on one source differ between an older and a newer cache entry."""

    source: str
    """The readable guarded source (``self.steps``, ``x``)."""
    before: tuple[str, ...]
    """Readable guard texts of the older entry (empty: the source was not guarded)."""
    after: tuple[str, ...]
    details: tuple[str, ...] = ()
    """Short descriptions of what changed (``size[0] 4 → dynamic``, ``== 2 → == 3``)."""

    def render(self) -> str:
        if self.details:
            subject = "global state:" if self.source == GLOBAL_STATE_KEY else f"`{self.source}`"
            return f"{subject} " + ", ".join(self.details)
        removed = [t for t in self.before if t not in self.after]
        added = [t for t in self.after if t not in self.before]
        if not removed:
            return "newly guarded: " + "; ".join(f"`{t}`" for t in added)
        if not added:
            return "no longer guarded: " + "; ".join(f"`{t}`" for t in removed)
        return "; ".join(f"`{t}`" for t in removed) + " → " + "; ".join(f"`{t}`" for t in added)

    @property
    def changes_value(self) -> bool:
        """True when the same source is guarded on both sides but differently (a value, a size, a type)."""
        return bool(self.details) or (bool(self.before) and bool(self.after))


@dataclass(frozen=True, slots=True)
class EntryDiff:
    """The difference between two consecutive cache entries of one frame (``newer`` compiled after ``older``)."""

    older: str
    newer: str
    changes: tuple[GuardChange, ...]

    def render(self, focus: str | None = None, limit: int | None = None) -> str:
        """``entry 0/3 vs 0/2: <changes>``. With ``limit``, the changes shown first are those of ``focus`` (the
        source whose guard failed), then those that changed a value, size or type; the rest are counted."""
        head = f"entry {self.newer} vs {self.older}"
        if not self.changes:
            return f"{head}: no guard differs (the failing check is not a guard, or guards were not collected)"
        changes = list(self.changes)
        if limit is not None:
            changes.sort(key=lambda c: (c.source != focus, not c.changes_value))
            shown = changes[:limit]
            if focus is not None and any(c.source == focus for c in changes):
                shown = [c for c in shown if c.source == focus or c.changes_value] or shown[:1]
            elif any(c.changes_value for c in changes):
                shown = [c for c in shown if c.changes_value]
            hidden = len(changes) - len(shown)
            text = "; ".join(change.render() for change in shown)
            return f"{head}: {text}" + (f" (+{hidden} more guard change{'s' if hidden != 1 else ''})" if hidden else "")
        return f"{head}: " + "; ".join(change.render() for change in changes)


def group_by_source(guards: Iterable[Guard]) -> dict[str, list[Guard]]:
    """Guards keyed by readable source (see :func:`_source_key`), de-duplicated, in order."""
    groups: dict[str, list[Guard]] = {}
    seen: set[tuple[str, str]] = set()
    for guard in guards:
        key = (guard.kind, guard.text)
        if key in seen:
            continue
        seen.add(key)
        groups.setdefault(_source_key(guard), []).append(guard)
    return groups


GLOBAL_STATE_KEY = "(global state)"


def _source_key(guard: Guard) -> str:
    """The readable source; a source-less guard is keyed by the tensor it checks (``x`` for ``2 <= x.size()[0]``),
    or by its own text (a lambda guard such as ``not math.isnan(x)``), or, for Dynamo's ambient checks,
    :data:`GLOBAL_STATE_KEY`."""
    if guard.source:
        source = readable_source(guard.source)
        if source not in ("", "L", "G"):
            return source
    facts = parse_tensor_guard(guard.text) if guard.kind == "TENSOR_MATCH" else None
    if facts is not None:
        return facts.name
    if guard.kind in NOISE_KINDS:
        return GLOBAL_STATE_KEY
    text = readable_guard_text(guard.text)
    shape = _SHAPE_OF.search(text)  # symbolic-shape guards: `2 <= x.size()[0]` belongs with `x`
    return shape.group("name") if shape is not None else text


def diff_entries(older: CacheEntry, newer: CacheEntry) -> EntryDiff:
    """Per source, the guards that differ between two entries (noise kinds ignored)."""
    before = _signal_groups(older.guards)
    after = _signal_groups(newer.guards)
    changes: list[GuardChange] = []
    for source in [*before, *(s for s in after if s not in before)]:
        old = before.get(source, [])
        new = after.get(source, [])
        old_texts = tuple(readable_guard_text(g.text) for g in old)
        new_texts = tuple(readable_guard_text(g.text) for g in new)
        if set(old_texts) == set(new_texts):
            continue
        changes.append(GuardChange(source, old_texts, new_texts, _describe(source, old, new)))
    state = _global_state_change(older.guards, newer.guards)
    return EntryDiff(older.compile_id, newer.compile_id, (*([state] if state else []), *changes))


def _global_state_change(older: Sequence[Guard], newer: Sequence[Guard]) -> GuardChange | None:
    """Grad mode, default dtype, deterministic algorithms, ...: the flags of Dynamo's GLOBAL_STATE guard that differ
    (read from its ``___check_global_state() against {...}`` text; nested values are left out)."""
    old = _state_flags(older)
    new = _state_flags(newer)
    details = tuple(f"{key} {old[key]} → {new[key]}" for key in old if key in new and old[key] != new[key])
    return GuardChange(GLOBAL_STATE_KEY, (), (), details) if details else None


def _state_flags(guards: Sequence[Guard]) -> dict[str, str]:
    text = next((g.text for g in guards if g.kind == "GLOBAL_STATE"), "")
    return {m.group("key"): m.group("value") for m in _STATE_FLAG.finditer(text)}


def frame_diffs(frame: Frame) -> list[EntryDiff]:
    """Diffs between each pair of consecutive compiled entries of a frame that both carry guards."""
    entries = [e for e in frame.cache_entries if e.produced_code and e.guards]
    return [diff_entries(a, b) for a, b in itertools.pairwise(entries)]


def value_history(frame: Frame, source: str) -> list[str]:
    """The successive guarded values of one source across a frame's entries (``["0", "1", "2"]``), where every
    entry pins it with a comparison; ``"dynamic"`` once an entry stops pinning it."""
    values: list[str] = []
    for entry in frame.cache_entries:
        if not entry.produced_code or not entry.guards:
            continue
        group = _signal_groups(entry.guards).get(source, [])
        value = _pinned_value(group)
        values.append(value if value is not None else "dynamic")
    return values


def _signal_groups(guards: Sequence[Guard]) -> dict[str, list[Guard]]:
    return {
        source: kept
        for source, group in group_by_source(guards).items()
        if (kept := [g for g in group if g.kind not in NOISE_KINDS])
    }


def _pinned_value(group: Sequence[Guard]) -> str | None:
    for guard in group:
        if guard.kind in LENGTH_KINDS and readable_guard_text(guard.text).startswith("not "):
            return "0"  # Dynamo writes an empty-container check as `not self.history`
        if guard.kind in ("EQUALS_MATCH", "CONSTANT_MATCH", *LENGTH_KINDS):
            match = _COMPARISON.match(readable_guard_text(guard.text))
            if match is not None and match.group("op") == "==":
                return match.group("rhs").strip()
        if guard.kind in ("TRUE_MATCH", "FALSE_MATCH", "NONE_MATCH"):
            return {"TRUE_MATCH": "True", "FALSE_MATCH": "False", "NONE_MATCH": "None"}[guard.kind]
    return None


def _describe(source: str, old: Sequence[Guard], new: Sequence[Guard]) -> tuple[str, ...]:
    old_tensor = _tensor_facts(old)
    new_tensor = _tensor_facts(new)
    if old_tensor is not None and new_tensor is not None:
        return _tensor_changes(old_tensor, new_tensor)
    old_value = _pinned_value(old)
    new_value = _pinned_value(new)
    if old_value is not None and new_value is not None and old_value != new_value:
        old_text = next(readable_guard_text(g.text) for g in old if _pinned_value([g]) is not None)
        if "==" in old_text:
            return (f"`{old_text}` → `== {new_value}`",)
        length = any(g.kind in LENGTH_KINDS for g in old)
        return (f"{'len ' if length else ''}{old_value} → {new_value}",)
    if old_value is not None and new_value is None and new:
        kind = _type_name(new)
        return (f"`== {old_value}` → dynamic" + (f" ({kind})" if kind else ""),)
    return ()


def _tensor_facts(group: Sequence[Guard]) -> TensorFacts | None:
    for guard in group:
        if guard.kind == "TENSOR_MATCH":
            return parse_tensor_guard(guard.text)
    return None


def _tensor_changes(old: TensorFacts, new: TensorFacts) -> tuple[str, ...]:
    changes: list[str] = []
    if old.dtype != new.dtype:
        changes.append(f"dtype {old.dtype} → {new.dtype}")
    if old.requires_grad is not None and new.requires_grad is not None and old.requires_grad != new.requires_grad:
        changes.append(f"requires_grad {old.requires_grad} → {new.requires_grad}")
    if len(old.size) != len(new.size):
        changes.append(f"rank {len(old.size)} → {len(new.size)}")
    else:
        for index, (a, b) in enumerate(zip(old.size, new.size, strict=True)):
            if a != b:
                changes.append(f"size[{index}] {a or 'dynamic'} → {b or 'dynamic'}")
        if not changes and old.stride != new.stride:
            changes.append(f"stride {_dims_text(old.stride)} → {_dims_text(new.stride)}")
    return tuple(changes)


def _dims_text(dims: Sequence[str | None]) -> str:
    return "[" + ", ".join(d or "?" for d in dims) + "]"


def _type_name(group: Sequence[Guard]) -> str | None:
    for guard in group:
        if guard.kind == "TYPE_MATCH":
            match = re.search(r"type=<class '([\w.]+)'>|HINT: type ([\w.]+)|\) is ([\w.]+)$", guard.text)
            if match is not None:
                return next(group for group in match.groups() if group)
    return None
