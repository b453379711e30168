"""Dynamo Lens shim: run a Python script or module exactly as ``python`` would, and record what Dynamo did.

Usage (executed by path by the user's own interpreter)::

    <python> shim.py --report OUT.json [--torch-trace DIR] -- script.py [args...]
    <python> shim.py --report OUT.json -- -m module [args...]
    <python> shim.py --rebuild OUT.json          # rebuild OUT.json from OUT.json.events.jsonl (no torch needed)

This file imports only the standard library and, while a script runs, torch; it must keep working when copied alone.
It writes a ``dynamo-lens.run`` v2 report (see ``report.py`` / ``run_report.schema.json`` next to it). In the other
Python processes of a run (``torchrun``'s ranks) the bootstrap ``worker_site/sitecustomize.py`` loads it and calls
:func:`record_worker`.

It does not import torch itself: it finds torch on disk and installs its listeners from an import hook the moment
the program imports ``torch._dynamo`` (``torch.compile`` does), so a program that never compiles pays nothing.
How it collects (on Dynamo's per-call path only the guard-complete hook of item 4, and the probes of item 5):

1. a handler on the structured-trace logger ``torch.__trace`` (what tlparse reads): compile starts, guard trees,
   compile metrics, recompile reasons, graph breaks;
2. ``register_bytecode_hook`` to learn every compiled code object, and ``_debug_get_cache_entry_list`` on them at
   exit (and before each ``torch._dynamo.reset()``): exact guard kinds, fail counts, invalidated entries;
3. ``guard_export_fn``, added by wrapping ``torch._dynamo.optimize`` (which ``torch.compile`` calls): the full user
   stack of every guard, so a guard installed inside ``nn.Linear`` maps back to the user's line;
4. a WARNING handler on ``torch._dynamo.convert_frame`` (recompile-limit hits) and ``set_guard_complete_hook``
   (torch 2.8 and later): every guard check of a call, a hit or a miss, counted for the frame it checked
   (:class:`CompiledCalls`), from which the calls that ran each frame's compiled code, and those that silently ran
   eagerly, follow;
5. ``nn.Module.register_forward_hook`` / ``register_forward_pre_hook`` wrapped: a hook added to a submodule of a
   compiled module after a compile gets two counting probes (``late_hook`` events), only for such hooks;
6. only when asked (``DYNAMO_LENS_GUARD_COST=1``, ``dynamo-lens run --guard-cost``, torch 2.8 and later): after
   each compile, ``torch.profiler`` over the next :data:`COST_WINDOW_CALLS` compiled calls of that thread, from whose
   ``TorchDynamo Cache Lookup`` events the steady-state guard-check time per call of each cache entry is measured
   (``guard_cost`` events). The windows open and close in the guard-complete hook, so a process that never compiles
   is never profiled and memory holds one window's events at most.

Every private API is feature-checked; what is unavailable is named in the report's ``missing`` list.

Everything observed becomes an *event* (a small JSON object) that is kept in memory and appended, as it happens, to
``OUT.json.events.jsonl``. The report is a pure function of the events (:func:`build_report`), so a run killed with
SIGKILL still leaves everything up to that point, and :func:`rebuild_report` turns the stream into a report with
``complete: false``. Event lines are ``{"ev": <kind>, "epoch": <reset epoch>, ...}`` with kinds ``start``,
``process``, ``installed``, ``compile_start``, ``guard_tree``, ``guard_export``, ``metrics``, ``recompile_reasons``,
``graph_break``, ``limit``, ``cache_entries``, ``calls``, ``guard_cost``, ``reset``, ``internal_error`` and ``end``.

Set ``DYNAMO_LENS_SHIM_DISABLE`` to a comma-separated list of source names (``trace``, ``bytecode_hook``,
``cache_entries``, ``guard_export``, ``limit_warnings``, ``guard_complete_hook``, ``reset_hook``, ``hook_watch``) to
run as if this torch lacked them (used by the tests; also a switch for users who hit a problem with one source).
"""

from __future__ import annotations

import atexit
import builtins
import functools
import importlib.machinery
import io
import json
import logging
import os
import re
import runpy
import signal
import sys
import sysconfig
import threading
import time
import traceback
import types
import zipfile
from collections.abc import Callable, Iterable
from typing import Any

SCHEMA = "dynamo-lens.run"
SCHEMA_VERSION = 2
EVENTS_SUFFIX = ".events.jsonl"
DISABLE_ENV = "DYNAMO_LENS_SHIM_DISABLE"
WORKERS_ENV = "DYNAMO_LENS_WORKERS"
"""Set by the runner to a directory: every other Python process of the run (a ``torchrun`` rank, a worker started by
``torch.multiprocessing.spawn``) records itself there as ``<pid>.json`` (:func:`record_worker`)."""
SHIM_ENV = "DYNAMO_LENS_SHIM"
"""Set by the runner to this file's path, for the bootstrap ``sitecustomize`` of worker processes."""
RECORDED_PARENT_ENV = "DYNAMO_LENS_RECORDED_PARENT"
"""Set by a recorded worker for the processes it starts: the ``RANK`` they inherit is not theirs."""
GUARD_COST_ENV = "DYNAMO_LENS_GUARD_COST"
"""``1``: measure the guard-check time per call with ``torch.profiler`` (inherited by every process of the run)."""
LOOKUP_EVENT = "TorchDynamo Cache Lookup"  # the profiler event around a frame's guard checks (eval_frame, C++)
REGION_EVENT = "Torch-Compiled Region: "  # + compile id: the run of the cache entry the lookup chose (torch >= 2.6)
HIT_GAP_NS = 1_000_000
"""A lookup followed by its entry's region within this gap hit; a longer gap is a miss that compiled (milliseconds
at the least), whose lookup is no steady-state figure."""
COST_WINDOW_CALLS = 200
"""Compiled calls (cache hits) profiled after each compile."""
MAX_COST_SAMPLES = 1000
"""Calls kept per cache entry across windows."""

# Caps for pathological programs; every cap that applies is reported (``guards_omitted``, ``missing``).
MAX_GUARDS_PER_ENTRY = 1000
MAX_TOTAL_GUARDS = 100_000  # about 20 MB of report; a frame at the accumulated limit (256 entries) stays under it
MAX_FAILED_GUARDS = 16  # per recompile, newest entry first (a frame at the accumulated limit has 256 entries)
MAX_GUARD_TEXT = 1000
MAX_REASON_TEXT = 4000
MAX_TRACEBACK_TEXT = 20000
MAX_STACK = 64
MAX_WARNINGS = 50  # distinct ones; Python's default filter shows each once per place anyway

# The torch._dynamo.config values that decide guard and recompile behaviour.
CONFIG_KEYS = (
    "recompile_limit",
    "accumulated_recompile_limit",
    "fail_on_recompile_limit_hit",
    "allow_unspec_int_on_nn_module",
    "automatic_dynamic_shapes",
    "automatic_dynamic_shapes_mark_as",
    "assume_static_by_default",
    "specialize_int",
    "specialize_float",
    "force_parameter_static_shapes",
    "force_nn_module_property_static_shapes",
    "guard_nn_modules",
    "inline_inbuilt_nn_modules",
    "suppress_errors",
    "error_on_recompile",
    "nested_graph_breaks",
    "capture_scalar_outputs",
    "capture_dynamic_output_shape_ops",
)

SOURCES = (  # what every run installs; ``guard_cost`` only when asked
    "trace",
    "bytecode_hook",
    "cache_entries",
    "guard_export",
    "limit_warnings",
    "guard_complete_hook",
    "reset_hook",
    "hook_watch",
    "warnings",
)

_METRIC_FIELDS = (
    "compile_id",
    "co_name",
    "co_filename",
    "co_firstlineno",
    "cache_size",
    "accumulated_cache_size",
    "guard_count",
    "entire_frame_compile_time_s",
    "fail_type",
    "fail_reason",
    "restart_reasons",
    "has_guarded_code",
)

# Compile "failures" after which Dynamo simply runs the frame eagerly (a graph break it cannot resume from, e.g.
# inside a loop): the frame is skipped, not broken.
_SKIPPING_FAILURES = frozenset({"Unsupported", "SkipFrame"})

Event = dict[str, Any]
Loc = list[Any]  # [path, line, name]: compact stack frame inside events


# ====================================================================================================================
# Paths: which frames are the user's


class PathPolicy:
    """Decides which files are the user's code (not torch, not installed packages, not the standard library)."""

    def __init__(self, torch_dir: str | None, shim_file: str, library_dirs: Iterable[str]) -> None:
        self.torch_dir = torch_dir
        self.shim_file = shim_file
        self.library_dirs = tuple(d.rstrip(os.sep) + os.sep for d in library_dirs if d)
        self._verdicts: dict[str, bool] = {}  # every guard and stack frame asks, about a few hundred paths

    @classmethod
    def for_this_process(cls, torch_dir: str | None) -> PathPolicy:
        paths = sysconfig.get_paths()
        dirs = {
            paths.get("stdlib", ""),
            paths.get("platstdlib", ""),
            paths.get("purelib", ""),
            paths.get("platlib", ""),
        }
        return cls(torch_dir, os.path.abspath(__file__), sorted(d for d in dirs if d))

    def to_json(self) -> Event:
        return {"torch_dir": self.torch_dir, "shim_file": self.shim_file, "library_dirs": list(self.library_dirs)}

    @classmethod
    def from_json(cls, data: Event) -> PathPolicy:
        return cls(data.get("torch_dir"), str(data.get("shim_file", "")), data.get("library_dirs", ()))

    def is_user(self, path: str) -> bool:
        verdict = self._verdicts.get(path)
        if verdict is None:
            verdict = self._verdicts[path] = self._judge(path)
        return verdict

    def _judge(self, path: str) -> bool:
        if not path or path.startswith("<") or not os.path.isabs(path) or path == self.shim_file:
            return False
        if self.torch_dir and path.startswith(self.torch_dir + os.sep):
            return False
        if f"{os.sep}site-packages{os.sep}" in path or f"{os.sep}dist-packages{os.sep}" in path:
            return False
        return not any(path.startswith(d) for d in self.library_dirs)


def _innermost_user(stack: Iterable[Loc], policy: PathPolicy) -> Loc | None:
    found: Loc | None = None
    for loc in stack:
        if policy.is_user(loc[0]):
            found = loc
    return found


# ====================================================================================================================
# Text parsing (pure): guard texts, recompile reasons, graph breaks

_LOCATION = re.compile(r"^(?P<file>.+?):(?P<line>\d+) in (?P<fn>\S+)$")
_HINT = re.compile(r" \(HINT: (?P<hint>.*)\)$", re.DOTALL)
_SCOPE = re.compile(r"\b([LG])\[\s*['\"](.*?)['\"]\s*\]")
_TYPE_ID = re.compile(r"___check_type_id\((?P<obj>.+), \d+\)(?:, type=<class '(?P<type>[^']+)'>)?$")
_OBJ_ID = re.compile(r"___check_obj_id\((?P<obj>.+), \d+\)(?:, type=<class '(?P<type>[^']+)'>)?$")
_TENSOR = re.compile(
    r"check_tensor\((?P<src>.+?), \w+, DispatchKeySet\([^)]*\), torch\.(?P<dtype>\w+), device=(?P<device>[^,]+), "
    r"requires_grad=(?P<rg>\w+), size=\[(?P<size>[^\]]*)\], stride=\[(?P<stride>[^\]]*)\]\)$"
)
_BARE_ID = re.compile(r"\b(0x[0-9a-f]{6,}|\d{9,})\b")
_STACK_LINE = re.compile(r'^\s*File "(?P<file>.+)", line (?P<line>\d+), in (?P<fn>.+)$')


@functools.lru_cache(maxsize=4096)
def strip_scopes(text: str) -> str:
    """``L['self'].steps`` → ``self.steps``, ``G['SCALE']`` → ``SCALE`` (Dynamo's own local/global scopes).
    Cached: each cache entry of a frame repeats most of the previous entry's guards."""
    return _SCOPE.sub(_scoped_name, text)


def _scoped_name(match: re.Match[str]) -> str:
    return match[2]


def display_guard(code: str) -> str:
    """A readable guard: scopes stripped, object and type ids replaced, tensor checks summarised."""
    code = code.strip()
    tensor = _TENSOR.match(code)
    if tensor:
        size = ", ".join("?" if d.strip() == "None" else d.strip() for d in tensor["size"].split(",") if d.strip())
        stride = ", ".join("?" if d.strip() == "None" else d.strip() for d in tensor["stride"].split(",") if d.strip())
        text = f"{strip_scopes(tensor['src'])}: {tensor['dtype']}[{size}] stride [{stride}]"
        if tensor["rg"] == "True":
            text += " requires_grad"
        if tensor["device"] != "None":
            text += f" device={tensor['device']}"
        return text
    type_id = _TYPE_ID.match(code)
    if type_id:
        return f"type({strip_scopes(type_id['obj'])}) is {type_id['type'] or '<type>'}"
    obj_id = _OBJ_ID.match(code)
    if obj_id:
        return f"{strip_scopes(obj_id['obj'])} is <{obj_id['type'] or 'the'} object seen at compile time>"
    text = strip_scopes(code)
    text = _BARE_ID.sub("<id>", text) if "___check" in text or "id(" in text else text
    return text if len(text) <= MAX_GUARD_TEXT else text[: MAX_GUARD_TEXT - 3] + "..."


def split_verbose(part: str) -> dict[str, Any]:
    """Split one verbose guard part ``<code>  # <source line>  # <file>:<line> in <fn> (HINT: ...)``."""
    hint: str | None = None
    rest = part
    match = _HINT.search(rest)
    if match:
        hint = match["hint"]
        rest = rest[: match.start()]
    location: dict[str, Any] | None = None
    pieces = rest.split("  # ")
    if len(pieces) > 1:
        loc = _LOCATION.match(pieces[-1].strip())
        if loc:
            location = {"file": loc["file"], "line": int(loc["line"]), "fn": loc["fn"]}
            pieces = pieces[:-1]
    code = pieces[0].rstrip()
    source_line = "  # ".join(pieces[1:]).strip() or None
    return {"code": code, "source_line": source_line, "location": location, "hint": hint}


def parse_guard_tree(text: str) -> list[list[str]]:
    """``str(GuardManagerWrapper)`` (the ``dynamo_cpp_guards_str`` event) → ``[kind, verbose part, source]``."""
    guards: list[list[str]] = []
    sources: dict[int, str] = {}
    for raw in text.splitlines():
        stripped = raw.lstrip("| ")
        depth = (len(raw) - len(stripped)) // 2
        if not stripped.startswith("+- "):
            continue
        body = stripped[3:]
        for prefix in ("KeyManager: ", "ValueManager: "):
            if body.startswith(prefix):
                body = body[len(prefix) :]
        if body.startswith("KeyValueManager pair"):
            sources[depth] = sources.get(depth - 1, "")
            continue
        manager = re.match(r"^\w*GuardManager(?:: source=(?P<source>.*?), (?:accessed_by|type)=.*)?$", body)
        if manager:
            sources[depth] = manager["source"] or ""
            continue
        leaf = re.match(r"^(?P<kind>[A-Z][A-Z0-9_]*): (?P<part>.*)$", body)
        if leaf:
            guards.append([leaf["kind"], leaf["part"], sources.get(depth - 1, "")])
    return _dedupe_guards(guards)


def _dedupe_guards(guards: list[list[str]]) -> list[list[str]]:
    seen: set[tuple[str, str]] = set()
    out: list[list[str]] = []
    for kind, part, source in guards:
        if (kind, part) not in seen:
            seen.add((kind, part))
            out.append([kind, part, source])
    return out


def parse_stack_text(text: str) -> list[Loc]:
    """``  File "/abs/x.py", line 3, in f`` lines (a Python traceback body) → ``[path, line, name]``."""
    out: list[Loc] = []
    for line in text.splitlines():
        match = _STACK_LINE.match(line)
        if match:
            out.append([match["file"], int(match["line"]), match["fn"].strip()])
    return out


def split_reason(reason: str) -> dict[str, Any]:
    """One recompile reason ``"0/0: <failing guard or message>[\\nUser stack trace:\\n<frames>]"``."""
    head, _, stack_text = reason.partition("\nUser stack trace:\n")
    entry, sep, text = head.partition(": ")
    if not sep or not re.match(r"^!?[\d/]+$", entry):
        entry, text = "", head
    return {"entry": entry, "text": text.strip(), "stack": parse_stack_text(stack_text)}


def load_reasons(payload: str) -> list[str]:
    """The ``recompile_reasons`` artifact: a JSON list for several reasons, a raw string for one."""
    try:
        value = json.loads(payload)
    except ValueError:
        return [payload]
    if isinstance(value, list):
        return [str(v) for v in value]
    return [str(value)]


def parse_graph_break(payload: str, gb_types: dict[str, str]) -> dict[str, Any]:
    """The ``dynamo_graph_break_reason`` artifact → reason, gb_type, explanation, hints, context, user stack."""
    text = payload.split("\nTraceback (most recent call last):", 1)[0]
    body, _, user_tb = text.partition("\nUser code traceback:\n")
    at = re.match(r"Graph break in user code at (?P<file>.+):(?P<line>\d+)", body)
    lines = body.splitlines()
    reason_line = next((ln for ln in lines if ln.startswith("Graph Break Reason:")), "")
    reason_index = lines.index(reason_line) if reason_line else 0
    message = [ln for ln in lines[reason_index + 1 :] if ln.strip()]
    reason = reason_line[len("Graph Break Reason:") :].strip() if reason_line else ""
    candidates = [reason.rstrip(":"), *(ln.strip() for ln in message)]
    gb_type = next((c for c in candidates if c in gb_types), None)
    if gb_type is None and message and not message[0].startswith(" "):
        gb_type = message[0].strip()
    link = re.search(r"/gb/gb(\d{4})\.html", body)
    explanation = next((ln.strip()[len("Explanation:") :].strip() for ln in message if "Explanation:" in ln), None)
    hints = [ln.strip()[len("Hint:") :].strip() for ln in message if ln.strip().startswith("Hint:")]
    context = next(
        (ln.strip()[len("Developer debug context:") :].strip() for ln in message if "Developer debug context:" in ln),
        None,
    )
    return {
        "gb_id": f"GB{link[1]}" if link else None,
        "reason": (gb_type or reason.rstrip(":") or body.strip())[:MAX_REASON_TEXT],
        "gb_type": gb_type,
        "explanation": explanation,
        "hints": hints,
        "context": context,
        "at": [at["file"], int(at["line"]), ""] if at else None,
        "stack": parse_stack_text(user_tb),
    }


def _release(version: str | None) -> tuple[int, int]:
    """``"2.4.1+cu121"`` → ``(2, 4)``; ``(0, 0)`` for anything unreadable."""
    parts = (version or "").partition("+")[0].split(".")
    try:
        return int(parts[0]), int(parts[1])
    except (IndexError, ValueError):
        return (0, 0)


def load_gb_registry(torch_dir: str | None) -> tuple[dict[str, str], dict[str, dict[str, Any]]]:
    """``torch/_dynamo/graph_break_registry.json`` → (gb_type → GB id, GB id → first registry entry)."""
    if not torch_dir:
        return {}, {}
    try:
        with open(os.path.join(torch_dir, "_dynamo", "graph_break_registry.json"), encoding="utf-8") as handle:
            registry = json.load(handle)
    except (OSError, ValueError):
        return {}, {}
    by_type: dict[str, str] = {}
    by_id: dict[str, dict[str, Any]] = {}
    for gb_id, entries in registry.items():
        for entry in entries if isinstance(entries, list) else []:
            if isinstance(entry, dict) and isinstance(entry.get("Gb_type"), str):
                by_type.setdefault(entry["Gb_type"], gb_id)
                by_id.setdefault(gb_id, entry)
    return by_type, by_id


# ====================================================================================================================
# The report: a pure function of the events


class _Attempt:
    def __init__(self, compile_id: str) -> None:
        self.compile_id = compile_id
        self.call_stack: list[Loc] = []
        self.tree: list[list[str]] | None = None
        self.export: list[Event] | None = None
        self.compiled_at: Loc | None = None
        """The user's line that called ``torch.compile`` (or ``.compile()``, or applied the decorator)."""
        self.guard_cost: Event | None = None
        self.metrics: Event | None = None
        self.live: Event | None = None
        self._export_index: tuple[dict[str, Loc], dict[str, Loc]] | None = None

    def export_index(self) -> tuple[dict[str, Loc], dict[str, Loc]]:
        """Exported guards' user lines by stripped code and by guarded source (first wins), built once."""
        if self._export_index is None:
            by_code: dict[str, Loc] = {}
            by_name: dict[str, Loc] = {}
            for guard in self.export or []:
                user = guard.get("user")
                if user is None:
                    continue
                for code in guard.get("code") or []:
                    by_code.setdefault(strip_scopes(code), user)
                by_name.setdefault(str(guard.get("name")), user)
            self._export_index = (by_code, by_name)
        return self._export_index

    @property
    def index(self) -> int:
        try:
            return int(self.compile_id.rsplit("/", 1)[1])
        except (IndexError, ValueError):
            return 0


class _Frame:
    def __init__(self, epoch: int, frame_id: int, name: str, path: str, line: int) -> None:
        self.epoch, self.frame_id, self.name, self.path, self.line = epoch, frame_id, name, path, line
        self.attempts: dict[str, _Attempt] = {}

    def attempt(self, compile_id: str) -> _Attempt:
        if compile_id not in self.attempts:
            self.attempts[compile_id] = _Attempt(compile_id)
        return self.attempts[compile_id]

    def ref(self) -> Event:
        return {
            "name": self.name,
            "path": self.path,
            "line": self.line,
            "frame_id": self.frame_id,
            "reset_epoch": self.epoch,
        }


def _guard_kind(guard: Any) -> str:
    """``EQUALS_MATCH``: the name of the guard's builder function (``Guard.create_fn_name()``, which torch before
    2.5 lacks: there the same name is read from ``create_fn``, a method or a ``functools.partial`` of one)."""
    named = getattr(guard, "create_fn_name", None)
    if named is not None:
        return str(named())
    create_fn = guard.create_fn
    return str(getattr(getattr(create_fn, "func", create_fn), "__name__", create_fn))


def _frame_id(compile_id: str) -> int | None:
    head = compile_id.lstrip("!").split("/")
    try:
        return int(head[-2]) if len(head) >= 2 else None
    except ValueError:
        return None


def _loc_json(loc: Loc | None) -> Event | None:
    return None if loc is None else {"path": loc[0], "line": int(loc[1]), "name": str(loc[2])}


class ReportBuilder:
    """Folds the event stream into a ``dynamo-lens.run`` v2 document (plain JSON data)."""

    def __init__(self, events: list[Event]) -> None:
        self.events = events
        start = next((e for e in events if e.get("ev") == "start"), {})
        self.start = start
        self.process: Event = dict(start.get("process") or {})
        self.policy = PathPolicy.from_json(start.get("paths", {}))
        self.gb_types, self.gb_entries = load_gb_registry(self.policy.torch_dir)
        self.frames: dict[tuple[int, int], _Frame] = {}
        self.user_files: set[str] = set()
        self.reasons: dict[tuple[int, str], list[str]] = {}
        self.breaks: list[Event] = []
        self.limits: list[Event] = []
        self.warnings: list[Event] = []
        self.live: dict[tuple[int, str], Event] = {}
        self.walked: set[int] = set()
        self.calls: Event = {}
        self.checks: dict[tuple[int, int], tuple[int, int]] | None = None
        """(epoch, frame id) → the guard hits and misses counted for the frame; None when the run could not count
        them per frame (no hook, or a shim before per-frame counts)."""
        self.unattributed = 0
        """Guard checks of calls no frame was found for."""
        self.late_hooks: dict[int, Event] = {}
        self.late_hook_calls: dict[int, Event] = {}
        self.end: Event | None = None
        self.installed: Event = {}
        self.resets = 0
        self.errors: list[str] = []
        self.guards_kept = 0
        self.entries_over_budget = 0
        self.resolved: dict[str, str | None] = {}

    # -- folding ------------------------------------------------------------------------------------------------------

    def _frame(self, epoch: int, frame_id: int, name: str, path: str, line: int) -> _Frame:
        key = (epoch, frame_id)
        if key not in self.frames:
            self.frames[key] = _Frame(epoch, frame_id, name, path, line)
        if self.policy.is_user(path):
            self.user_files.add(path)
        return self.frames[key]

    def build(self) -> Event:
        for event in self.events:
            try:
                self._fold(event)
            except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
                self.errors.append(f"a malformed {event.get('ev')!r} event was skipped ({type(exc).__name__}: {exc})")
        for (epoch, compile_id), entry in self.live.items():
            frame = self._frame_of(epoch, compile_id)
            if frame is not None:
                frame.attempt(compile_id).live = entry
        self._count_checks()
        frames_json, entry_guards = self._frames_json()
        recompiles = self._recompiles(self.reasons, entry_guards)
        breaks = self._graph_breaks(self.breaks)
        limit_hits = self._limit_hits(self.limits)
        for hit in limit_hits:
            ref = hit["frame"]
            frame = self.frames.get((ref["reset_epoch"], ref["frame_id"])) if ref else None
            eager = self._eager_calls_of(frame) if frame is not None else None
            hit["eager_calls"] = eager if eager is not None else self._eager_calls_at(hit["call_site"])
        return self._document(frames_json, recompiles, breaks, limit_hits)

    def _inside_dynamo(self, path: str) -> bool:
        torch_dir = self.policy.torch_dir
        return bool(torch_dir) and path.startswith(os.path.join(str(torch_dir), "_dynamo") + os.sep)

    def _frame_of(self, epoch: int, compile_id: str) -> _Frame | None:
        frame_id = _frame_id(compile_id)
        return None if frame_id is None else self.frames.get((epoch, frame_id))

    def _fold(self, event: Event) -> None:
        kind = event.get("ev")
        epoch = int(event.get("epoch", 0))
        compile_id = str(event.get("compile_id") or "")
        if kind == "process":
            self.process.update({k: event[k] for k in ("rank", "world_size") if k in event})
        elif kind == "compile_start":
            frame = self._frame(epoch, int(event["frame_id"]), event["name"], event["path"], int(event["line"]))
            attempt = frame.attempt(compile_id)
            attempt.call_stack = event.get("call_stack") or attempt.call_stack
            self.user_files.update(loc[0] for loc in attempt.call_stack)
        elif kind == "metrics":
            known = self._frame_of(epoch, compile_id)
            frame_id = _frame_id(compile_id)
            if event.get("co_filename") and frame_id is not None:
                name, path, line = (
                    event.get("co_name") or "?",
                    event["co_filename"],
                    int(event.get("co_firstlineno") or 1),
                )
                if known is None:
                    known = self._frame(epoch, frame_id, name, path, line)
                elif self._inside_dynamo(known.path):
                    # torch < 2.5 logs the stack above Dynamo's callback, not the code it compiles: the metrics name it
                    known.name, known.path, known.line = name, path, line
                    if self.policy.is_user(path):
                        self.user_files.add(path)
            if known is not None:
                known.attempt(compile_id).metrics = event
        elif kind in ("guard_tree", "guard_export"):
            owner = self._frame_of(epoch, compile_id)
            if owner is not None and kind == "guard_tree":
                owner.attempt(compile_id).tree = event.get("guards") or []
            elif owner is not None:
                attempt = owner.attempt(compile_id)
                attempt.export = event.get("guards") or []
                attempt.compiled_at = event.get("compiled_at") or attempt.compiled_at
        elif kind == "guard_cost_skipped":
            self.errors.append(
                f"guard cost: {event.get('windows')} measuring windows were left out because the program ran its own "
                "torch.profiler then (one profiler session at a time)"
            )
        elif kind == "guard_cost":
            for entry_id, cost in (event.get("entries") or {}).items():
                owner = self._frame_of(epoch, entry_id)
                if owner is not None and entry_id in owner.attempts:
                    owner.attempt(entry_id).guard_cost = cost
        elif kind == "recompile_reasons":
            self.reasons.setdefault((epoch, compile_id), list(event.get("reasons") or []))
            owner = self._frame_of(epoch, compile_id)
            if owner is not None and not owner.attempt(compile_id).call_stack:
                owner.attempt(compile_id).call_stack = event.get("call_stack") or []
        elif kind == "graph_break":
            self.breaks.append(event)
        elif kind == "limit":
            self.limits.append(event)
        elif kind == "warning":
            self.warnings.append({k: event.get(k) for k in ("category", "message", "path", "line")})
        elif kind == "cache_entries":
            self.walked.add(epoch)
            for entry in event.get("entries") or []:
                entry_id = str(entry.get("compile_id"))
                self.live[(epoch, entry_id)] = entry
                frame_id = _frame_id(entry_id)
                code = entry.get("code")
                if frame_id is not None and code and (epoch, frame_id) not in self.frames:
                    # Without the trace, the cache entries are all we know about the frame.
                    self._frame(epoch, frame_id, str(code[2]), str(code[0]), int(code[1]))
        elif kind == "calls":
            self.calls = event
        elif kind == "late_hook":
            self.late_hooks[int(event["id"])] = event
        elif kind == "late_hook_calls":
            self.late_hook_calls[int(event["id"])] = event
        elif kind == "reset":
            self.resets += 1
        elif kind == "internal_error":
            self.errors.append(f"internal error in {event.get('where')}: {event.get('message')}")
        elif kind == "installed":
            self.installed = event
        elif kind == "end":
            self.end = event

    # -- frames, entries and guards -----------------------------------------------------------------------------------

    def _frames_json(self) -> tuple[list[Event], dict[tuple[int, int, str], list[Event]]]:
        out: list[Event] = []
        guards_by_entry: dict[tuple[int, int, str], list[Event]] = {}
        checks = self.checks
        for key in sorted(self.frames):
            frame = self.frames[key]
            if frame.path == self.policy.shim_file:
                continue  # a probe of the hook watch, run around compiled code: Dynamo skips it, nothing to report
            entries: list[Event] = []
            for attempt in sorted(frame.attempts.values(), key=lambda a: a.index):
                entry = self._entry_json(frame, attempt)
                guards_by_entry[(frame.epoch, frame.frame_id, attempt.compile_id)] = entry["guards"]
                entries.append(entry)
            out.append(
                {
                    "name": frame.name,
                    "path": frame.path,
                    "line": max(1, int(frame.line)),
                    "frame_id": frame.frame_id,
                    "reset_epoch": frame.epoch,
                    "is_resume": frame.name.startswith("torch_dynamo_resume_in_"),
                    "cache_entries": entries,
                    "compiled_calls": None
                    if checks is None
                    else checks.get(key, (0, 0))[0] + sum(1 for e in entries if e["status"] == "ok"),
                }
            )
        return out, guards_by_entry

    def _count_checks(self) -> None:
        """Fill :attr:`checks` and :attr:`unattributed` from the ``calls`` event."""
        rows = self.calls.get("frames")
        if not isinstance(rows, list):
            return
        self.unattributed = int(self.calls.get("unattributed_hits") or 0) + int(
            self.calls.get("unattributed_misses") or 0
        )
        self.checks = {(int(epoch), int(frame_id)): (int(hits), int(misses)) for epoch, frame_id, hits, misses in rows}

    def _eager_calls_of(self, frame: _Frame) -> int | None:
        """The calls of ``frame`` that ran eagerly: its guard misses that compiled nothing (None: not counted)."""
        if self.checks is None:
            return None
        misses = self.checks.get((frame.epoch, frame.frame_id), (0, 0))[1]
        return max(0, misses - sum(1 for a in frame.attempts.values() if _compiled_on_a_miss(a)))

    def _status(self, attempt: _Attempt) -> tuple[str, str | None, str | None]:
        metrics = attempt.metrics
        if metrics is None:
            if attempt.live is not None:
                return "ok", None, None
            return "failed", None, "the run ended before this compile finished"
        fail_type, fail_reason = metrics.get("fail_type"), metrics.get("fail_reason")
        if fail_type == "FailOnRecompileLimitHit" or "recompile limit" in str(fail_reason or "").lower():
            return "recompile_limit", fail_type, fail_reason
        if fail_type in _SKIPPING_FAILURES:
            return "skipped", fail_type, fail_reason
        if fail_type:
            return "failed", fail_type, fail_reason
        if metrics.get("guard_count") is None:
            return "skipped", None, None
        return "ok", None, None

    def _entry_json(self, frame: _Frame, attempt: _Attempt) -> Event:
        status, fail_type, fail_reason = self._status(attempt)
        metrics = attempt.metrics or {}
        live = attempt.live
        raw: list[list[str]] = []
        guards_from = "none"
        if live is not None and live.get("guards") and not live.get("invalidated"):
            raw, guards_from = live["guards"], "cache_entry"
        elif attempt.tree:
            raw, guards_from = attempt.tree, "trace"
        keep = max(0, min(MAX_GUARDS_PER_ENTRY, MAX_TOTAL_GUARDS - self.guards_kept))
        if keep < len(raw) and keep < MAX_GUARDS_PER_ENTRY:
            self.entries_over_budget += 1
        self.guards_kept += min(keep, len(raw))
        omitted = max(0, len(raw) - keep) + (int(live.get("omitted", 0)) if live else 0)
        guards = [self._guard_json(kind, part, source, attempt) for kind, part, source in raw[:keep]]
        call_stack = attempt.call_stack[-MAX_STACK:]
        time_s = metrics.get("entire_frame_compile_time_s")
        return {
            "compile_id": attempt.compile_id,
            "status": status,
            "compile_time_s": float(time_s) if isinstance(time_s, int | float) else None,
            "guard_count": metrics.get("guard_count") if isinstance(metrics.get("guard_count"), int) else None,
            "fail_type": fail_type,
            "fail_reason": None if fail_reason is None else str(fail_reason)[:MAX_REASON_TEXT],
            "restart_reasons": [str(r)[:MAX_REASON_TEXT] for r in metrics.get("restart_reasons") or []],
            "call_site": _loc_json(call_stack[-1]) if call_stack else None,
            "call_stack": [_loc_json(loc) for loc in call_stack],
            "compiled_at": _loc_json(attempt.compiled_at),
            "guard_cost": attempt.guard_cost,
            "alive_at_exit": live is not None if frame.epoch in self.walked else None,
            "invalidated": live.get("invalidated") if live else None,
            "fail_count": live.get("fail_count") if live else None,
            "guards_from": guards_from,
            "guards": guards,
            "guards_omitted": omitted,
        }

    def _resolve(self, short: str) -> str | None:
        """Dynamo prints paths relative to torch's parent directory (and mangles those outside it): resolve them."""
        if short not in self.resolved:
            self.resolved[short] = self._resolve_uncached(short)
        return self.resolved[short]

    def _resolve_uncached(self, short: str) -> str | None:
        if os.path.isabs(short) and os.path.exists(short):
            return short
        for candidate in sorted(self.user_files):
            if candidate.endswith(os.sep + short) or candidate.endswith(short):
                return candidate
        torch_dir = self.policy.torch_dir
        for base in (torch_dir, os.path.dirname(torch_dir)) if torch_dir else ():
            guess = os.path.join(base, short)
            if os.path.exists(guess):
                return guess
        return None

    def _guard_json(self, kind: str, part: str, source: str, attempt: _Attempt) -> Event:
        split = split_verbose(part)
        code = split["code"]
        origin: str | None = None
        path: str | None = None
        line: int | None = None
        location = split["location"]
        if location is not None:
            resolved = self._resolve(location["file"])
            origin = f"{resolved or location['file']}:{location['line']}"
            if resolved and self.policy.is_user(resolved):
                path, line = resolved, location["line"]
        exported = self._exported_location(attempt, code, source, kind)
        if exported is not None:
            path, line = exported[0], int(exported[1])
        return {
            "kind": kind,
            "text": display_guard(code),
            "source": source or None,
            "path": path,
            "line": line,
            "hint": split["hint"],
            "origin": origin,
            "code": split["source_line"],
        }

    def _exported_location(self, attempt: _Attempt, code: str, source: str, kind: str) -> Loc | None:
        """The user line of the exported guard with the same code (or, for kinds whose exported code differs from
        the leaf's text, the same guarded source)."""
        by_code, by_name = attempt.export_index()
        found = by_code.get(strip_scopes(code))
        if found is None and kind in ("TENSOR_MATCH", "TYPE_MATCH", "ID_MATCH", "DICT_LENGTH", "LENGTH_CHECK"):
            found = by_name.get(source)
        return None if found is None else list(found)

    # -- recompiles ---------------------------------------------------------------------------------------------------

    def _recompiles(
        self, reasons: dict[tuple[int, str], list[str]], guards: dict[tuple[int, int, str], list[Event]]
    ) -> list[Event]:
        out: list[Event] = []
        for (epoch, compile_id), texts in sorted(reasons.items(), key=lambda kv: (kv[0][0], _sort_id(kv[0][1]))):
            frame_id = _frame_id(compile_id)
            frame = self.frames.get((epoch, frame_id if frame_id is not None else -1))
            if frame is None:
                continue
            attempt = frame.attempts.get(compile_id)
            call_stack = attempt.call_stack if attempt else []
            call_site = call_stack[-1] if call_stack else None
            failed: list[Event] = []
            seen: set[tuple[str, str]] = set()
            for text in texts:
                parsed = split_reason(text)
                key = (parsed["entry"], parsed["text"])
                if key in seen:
                    continue
                seen.add(key)
                old = guards.get((epoch, frame.frame_id, parsed["entry"]), [])
                failed.append(self._failed_guard(parsed, text, old, call_site, frame))
            out.append(
                {
                    "compile_id": compile_id,
                    "frame": frame.ref(),
                    "failed_guards": sorted(failed, key=lambda g: _sort_id(g["entry"]), reverse=True)[
                        :MAX_FAILED_GUARDS
                    ],
                    "failed_guards_omitted": max(0, len(failed) - MAX_FAILED_GUARDS),
                    "call_site": _loc_json(call_site),
                }
            )
        return out

    def _failed_guard(
        self, parsed: Event, raw: str, old_guards: list[Event], call_site: Loc | None, frame: _Frame
    ) -> Event:
        split = split_verbose(parsed["text"])
        text = split["code"]
        kind: str | None = None
        source: str | None = None
        matched: Event | None = None
        tensor = re.match(r"^tensor '(?P<name>[^']+)' ", text)
        if tensor:
            kind = "TENSOR_MATCH"
            name = tensor["name"]
            matched = next(
                (g for g in old_guards if g["kind"] == "TENSOR_MATCH" and strip_scopes(g["source"] or "") == name), None
            )
            source = matched["source"] if matched else name
        elif text.startswith("GLOBAL_STATE changed"):
            kind = "GLOBAL_STATE"
        elif text.startswith("BACKEND_MATCH"):
            kind = "BACKEND_MATCH"
        elif not text.startswith("Cache line invalidated"):
            target = display_guard(text)
            matched = next((g for g in old_guards if g["text"] == target), None)
            if matched is not None:
                kind, source = matched["kind"], matched["source"]
        hint = split["hint"] or (matched["hint"] if matched else None)
        user_frame = _innermost_user(parsed["stack"], self.policy)
        path: str | None = None
        line: int | None = None
        attributed = "none"
        carries_line = kind not in ("TENSOR_MATCH", "GLOBAL_STATE", "BACKEND_MATCH") and not text.startswith("Cache")
        if carries_line and user_frame is not None:
            path, line, attributed = user_frame[0], int(user_frame[1]), "guard"
        elif carries_line and matched is not None and matched["path"]:
            path, line, attributed = matched["path"], matched["line"], "guard"
        elif carries_line and split["location"] is not None and (located := self._user_location(split["location"])):
            path, line, attributed = located[0], located[1], "guard"
        elif call_site is not None:
            path, line, attributed = call_site[0], int(call_site[1]), "call"
        else:
            path, line, attributed = frame.path, frame.line, "frame"
        return {
            "entry": parsed["entry"],
            "text": display_guard(text) if kind != "TENSOR_MATCH" else text,
            "kind": kind,
            "source": source,
            "path": path,
            "line": line,
            "attributed_to": attributed,
            "hint": hint,
            "raw": raw[:MAX_REASON_TEXT],
        }

    def _user_location(self, location: Event) -> tuple[str, int] | None:
        resolved = self._resolve(location["file"])
        if resolved and self.policy.is_user(resolved):
            return resolved, int(location["line"])
        return None

    # -- graph breaks and limits --------------------------------------------------------------------------------------

    def _graph_breaks(self, events: list[Event]) -> list[Event]:
        merged: dict[tuple[Any, ...], Event] = {}
        for event in events:
            parsed = parse_graph_break(str(event.get("text", "")), self.gb_types)
            user = _innermost_user(parsed["stack"], self.policy) or parsed["at"]
            epoch = int(event.get("epoch", 0))
            compile_id = str(event.get("compile_id") or "") or None
            frame_id = _frame_id(compile_id or "")
            frame = self.frames.get((epoch, frame_id if frame_id is not None else -1))
            key = (user[0] if user else None, user[1] if user else None, parsed["gb_type"] or parsed["reason"])
            if key in merged:
                existing = merged[key]
                existing["count"] += 1
                if compile_id and compile_id not in existing["compile_ids"]:
                    existing["compile_ids"].append(compile_id)
                continue
            gb_id = parsed["gb_id"] or self.gb_types.get(parsed["gb_type"] or "")
            registry = self.gb_entries.get(gb_id or "", {})
            registry_hints = registry.get("Hints")
            merged[key] = {
                "compile_id": compile_id,
                "reason": parsed["reason"],
                "gb_type": parsed["gb_type"],
                "gb_id": gb_id,
                "explanation": parsed["explanation"] or registry.get("Explanation"),
                "hints": parsed["hints"]
                or ([str(h) for h in registry_hints] if isinstance(registry_hints, list) else []),
                "context": parsed["context"],
                "path": user[0] if user else None,
                "line": int(user[1]) if user else None,
                "frame": frame.ref() if frame else None,
                "user_stack": [_loc_json(loc) for loc in parsed["stack"] if self.policy.is_user(loc[0])][-MAX_STACK:],
                "compile_ids": [compile_id] if compile_id else [],
                "count": 1,
            }
        return list(merged.values())

    def _limit_hits(self, events: list[Event]) -> list[Event]:
        out: list[Event] = []
        seen: set[tuple[Any, ...]] = set()
        for event in events:
            epoch = int(event.get("epoch", 0))
            function = str(event.get("function", ""))
            match = re.match(r"^'(?P<name>.*)' \((?P<path>.+):(?P<line>\d+)\)$", function)
            frame: _Frame | None = None
            if match:
                candidates = [
                    f
                    for f in self.frames.values()
                    if f.epoch == epoch
                    and (f.name, f.path, int(f.line)) == (match["name"], match["path"], int(match["line"]))
                ]
                frame = max(candidates, key=lambda f: f.frame_id) if candidates else None
            limit = str(event.get("limit_type", ""))
            if limit not in ("recompile_limit", "accumulated_recompile_limit"):
                limit = "accumulated_recompile_limit" if "accumulated" in limit else "recompile_limit"
            key = (epoch, frame.frame_id if frame else function, limit)
            if key in seen:
                continue
            seen.add(key)
            hit_id = None
            if frame is not None:
                hit_id = next(
                    (a.compile_id for a in frame.attempts.values() if self._status(a)[0] == "recompile_limit"), None
                )
            value = event.get("limit")
            out.append(
                {
                    "limit": limit,
                    "value": value if isinstance(value, int) and not isinstance(value, bool) else None,
                    "last_reason": _short_reason(str(event.get("last_reason", ""))),
                    "frame": frame.ref() if frame else None,
                    "compile_id": hit_id,
                    "function": function,
                    "call_site": _loc_json(event["call_stack"][-1]) if event.get("call_stack") else None,
                }
            )
        for frame in self.frames.values():
            for attempt in frame.attempts.values():
                if self._status(attempt)[0] != "recompile_limit":
                    continue
                if any(
                    h["frame"] and h["frame"]["frame_id"] == frame.frame_id and h["frame"]["reset_epoch"] == frame.epoch
                    for h in out
                ):
                    continue
                reason = str((attempt.metrics or {}).get("fail_reason") or "")
                out.append(
                    {
                        "limit": "accumulated_recompile_limit" if "accumulated" in reason else "recompile_limit",
                        "value": None,
                        "last_reason": "",
                        "frame": frame.ref(),
                        "compile_id": attempt.compile_id,
                        "function": f"'{frame.name}' ({frame.path}:{frame.line})",
                        "call_site": _loc_json(attempt.call_stack[-1]) if attempt.call_stack else None,
                    }
                )
        return out

    def _eager_calls_at(self, site: Event | None) -> int | None:
        """Guard misses at the user's call that hit the limit, minus those that led to a recompile there."""
        misses = self.calls.get("miss_sites")
        if site is None or not isinstance(misses, list):
            return None
        key = (site["path"], site["line"])
        missed = sum(int(count) for path, line, count in misses if (path, line) == key)
        recompiled = sum(
            1
            for frame in self.frames.values()
            for attempt in frame.attempts.values()
            if attempt.call_stack and tuple(attempt.call_stack[-1][:2]) == key and _compiled_on_a_miss(attempt)
        )
        return max(0, missed - recompiled)

    # -- the document -------------------------------------------------------------------------------------------------

    def _silent_hooks(self) -> list[Event]:
        found = (_silent_hook(hook, self.late_hook_calls.get(hook_id)) for hook_id, hook in self.late_hooks.items())
        return [hook for hook in found if hook is not None]

    def _document(
        self, frames: list[Event], recompiles: list[Event], breaks: list[Event], limit_hits: list[Event]
    ) -> Event:
        start, end, calls = self.start, self.end, self.calls
        installed = self.installed  # what the listeners found once torch._dynamo was imported
        entries = [e for f in frames for e in f["cache_entries"]]
        misses = calls.get("misses")
        hits = calls.get("hits")
        compiles_on_existing = sum(
            1 for f in self.frames.values() for a in f.attempts.values() if _compiled_on_a_miss(a)
        )
        eager = max(0, misses - compiles_on_existing) if isinstance(misses, int) else None
        missing = list(dict.fromkeys([*(start.get("missing") or []), *(installed.get("missing") or [])]))
        missing.extend(self.errors)
        if calls.get("replaced"):
            missing.append(
                "call counts are partial: the program replaced the guard-complete hook "
                "(e.g. torch.compiler.set_enable_guard_collectives), so later calls were not counted"
            )
        if self.unattributed:
            missing.append(
                f"calls per frame: {self.unattributed} guard checks could not be told apart by frame (a caller Dynamo "
                "skipped, or another guard-complete hook in between); the frames' counts of calls leave them out"
            )
        if self.entries_over_budget:
            missing.append(
                f"guard lists of {self.entries_over_budget} cache entries: the report keeps at most "
                f"{MAX_TOTAL_GUARDS} guards in all (see guards_omitted)"
            )
        if end is None:
            missing.append(
                "the run was killed before the shim could finish: cache-entry details, call counts, exit code"
            )
        measured = any(e["guard_cost"] for e in entries)
        if (installed.get("sources_ok") or {}).get("guard_cost") and end is not None and entries and not measured:
            missing.append(
                "guard cost: no compiled call was measured (the calls after the first compile, in the thread that "
                "made them, are profiled; a call needs a cache entry to hit)"
            )
        total_time = sum(e["compile_time_s"] or 0.0 for e in entries)
        summary = {
            "frames": len(frames),
            "compiles": len(entries),
            "compiles_ok": sum(1 for e in entries if e["status"] == "ok"),
            "recompiles": len(recompiles),
            "graph_breaks": len(breaks),
            "limit_hits": len(limit_hits),
            "skipped_frames": sum(
                1 for f in frames if f["cache_entries"] and all(e["status"] == "skipped" for e in f["cache_entries"])
            ),
            "total_compile_time_s": round(total_time, 6),
            "cache_hits": hits if isinstance(hits, int) else None,
            "cache_misses": misses if isinstance(misses, int) else None,
            "eager_fallback_calls": eager,
            "unattributed_calls": self.unattributed if self.checks is not None else None,
            "resets": self.resets,
        }
        end = end or {}
        config = end.get("config") or installed.get("config") or start.get("config") or {}
        return {
            "schema": SCHEMA,
            "version": SCHEMA_VERSION,
            "torch_version": installed.get("torch_version") or start.get("torch_version"),
            "python": start.get("python") or "",
            "argv": list(start.get("argv") or []),
            "cwd": start.get("cwd") or "",
            "process": self.process or None,
            "exit_code": end.get("exit_code"),
            "ended_by": end.get("ended_by", "unknown"),
            "complete": bool(end),
            "error": end.get("error"),
            "duration_s": end.get("duration_s"),
            "config": config,
            "frames": frames,
            "recompiles": recompiles,
            "graph_breaks": breaks,
            "limit_hits": limit_hits,
            "warnings": self.warnings,
            "silent_hooks": self._silent_hooks(),
            "summary": summary,
            "sources_ok": dict(installed.get("sources_ok") or start.get("sources_ok") or {}),
            "missing": missing,
            "findings": [],
        }


def _silent_hook(hook: Event, calls: Event | None) -> Event | None:
    """A late hook that never ran while its compiled module did (unknown, so left out, for a run killed before the
    counts were written)."""
    if calls is None or calls.get("fired") or not calls.get("root_calls"):
        return None
    keys = ("hook", "path", "line", "module", "root")
    return {**{key: hook.get(key) for key in keys}, "root_calls": int(calls["root_calls"])}


def _is_submodule(module: Any, root: Any) -> bool:
    return any(child is module for child in root.modules())


def _compiled_on_a_miss(attempt: _Attempt) -> bool:
    """Whether this compile followed a guard miss: the code object already had cache entries (of any ID_MATCH'd
    objects, hence the accumulated count). Misses that compiled nothing ran eagerly."""
    size = (attempt.metrics or {}).get("accumulated_cache_size")
    return isinstance(size, int) and size > 0


def _short_reason(reason: str) -> str:
    """``0/7: self.steps == 7   # ... (HINT: ...)\nUser stack trace: ...`` → ``0/7: self.steps == 7``."""
    parsed = split_reason(reason)
    text = display_guard(split_verbose(parsed["text"])["code"])
    return f"{parsed['entry']}: {text}" if parsed["entry"] else text


def _sort_id(compile_id: str) -> tuple[int, ...]:
    try:
        return tuple(int(p) for p in compile_id.lstrip("!").split("/"))
    except ValueError:
        return (0,)


def lookup_samples(events: Iterable[tuple[int, int, int, str]]) -> dict[str, tuple[list[int], list[int]]]:
    """The calls that hit each cache entry, from profiler events ``(thread, start_ns, duration_ns, name)``: a
    ``TorchDynamo Cache Lookup`` followed on its thread, within :data:`HIT_GAP_NS`, by the ``Torch-Compiled Region``
    of an entry is a call of that entry. A frame called from compiled code (a resume function) makes its lookup
    inside the region of its caller, so the events are paired in order of their start.

    Returns compile id → (lookup durations, region durations) in nanoseconds, one of each per call."""
    by_thread: dict[int, list[tuple[int, int, str]]] = {}
    for thread, start, duration, name in events:
        if name == LOOKUP_EVENT or name.startswith(REGION_EVENT):
            by_thread.setdefault(thread, []).append((start, duration, name))
    samples: dict[str, tuple[list[int], list[int]]] = {}
    for found in by_thread.values():
        found.sort()
        lookup: tuple[int, int] | None = None
        for start, duration, name in found:
            if name == LOOKUP_EVENT:
                lookup = (start, duration)
                continue
            if lookup is not None and 0 <= start - (lookup[0] + lookup[1]) <= HIT_GAP_NS:
                lookups, regions = samples.setdefault(name[len(REGION_EVENT) :], ([], []))
                lookups.append(lookup[1])
                regions.append(duration)
            lookup = None
    return samples


def summarise_costs(samples: dict[str, tuple[list[int], list[int]]]) -> dict[str, Event]:
    """compile id → ``{"calls", "lookup_us", "call_us"}``: the calls measured, and the median time of their guard
    checks and of the call itself (the region: the compiled code and what it calls)."""
    import statistics  # only runs that measure guard cost pay for it (about 8 ms)

    return {
        entry: {
            "calls": len(lookups),
            "lookup_us": round(statistics.median(lookups) / 1000, 3),
            "call_us": round(statistics.median(regions) / 1000, 3),
        }
        for entry, (lookups, regions) in samples.items()
        if lookups
    }


def build_report(events: list[Event]) -> Event:
    """The report document for a list of events (pure; no torch needed)."""
    return ReportBuilder(events).build()


def read_events(path: str) -> list[Event]:
    """Read an event stream, skipping a torn last line (the process may have been killed mid-write)."""
    events: list[Event] = []
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict):
                events.append(event)
    return events


def rebuild_report(events_file: str) -> Event:
    """The report a killed run would have written, from its event stream (``complete`` is false)."""
    return build_report(read_events(events_file))


def write_json_atomically(document: Event, path: str) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(directory, f".{os.path.basename(path)}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(json.dumps(document, separators=(",", ":"), default=str) + "\n")  # dumps: C encoder
    os.replace(tmp, path)


# ====================================================================================================================
# Collection (inside the user's process)


class EventStream:
    """Events in memory, each also appended to the sidecar file at once so a killed run keeps them."""

    def __init__(self, path: str | None) -> None:
        self.events: list[Event] = []
        self.lock = threading.RLock()
        self.open_error: str | None = None
        self.handle = None
        try:
            self.handle = open(path, "w", encoding="utf-8") if path else None  # noqa: SIM115 - lives with the run
        except OSError as exc:
            self.open_error = f"the event stream {path!r} could not be written ({exc.strerror or exc})"
        self.epoch = 0
        self.enabled = True

    def event(self, kind: str, fields: dict[str, Any]) -> Event:
        """An event of the current reset epoch, as the stream writes it."""
        return {"ev": kind, "epoch": self.epoch, **fields}

    def emit(self, kind: str, **fields: Any) -> None:
        if not self.enabled:
            return
        event = self.event(kind, fields)
        with self.lock:
            self.events.append(event)
            if self.handle is not None:
                try:
                    self.handle.write(json.dumps(event, default=str) + "\n")
                    self.handle.flush()
                except (OSError, ValueError):
                    self.handle = None

    def close(self) -> None:
        with self.lock:
            if self.handle is not None:
                self.handle.close()
                self.handle = None


class TraceHandler(logging.Handler):
    """Receives Dynamo's structured-trace records and turns the ones we use into events."""

    def __init__(self, collector: Collector) -> None:
        super().__init__(logging.DEBUG)
        self.collector = collector
        self.interned: dict[int, str] = {}

    def emit(self, record: logging.LogRecord) -> None:
        metadata = getattr(record, "metadata", None)
        if not isinstance(metadata, dict) or not metadata:
            return
        try:
            self._handle(metadata, getattr(record, "payload", None))
        except Exception as exc:  # never let our bookkeeping break the user's compile
            self.collector.internal_error("trace handler", exc)

    def _handle(self, metadata: dict[str, Any], payload: Any) -> None:
        name = next(iter(metadata))
        if "compiled_autograd_id" in metadata:
            return
        stream = self.collector.stream
        compile_id = None
        if "frame_id" in metadata and "frame_compile_id" in metadata:
            compile_id = f"{metadata['frame_id']}/{metadata['frame_compile_id']}"
        if name == "str":
            value = metadata["str"]
            self.interned[int(value[1])] = str(value[0])
        elif name == "dynamo_start":
            self.collector.note_rank()
            stack = metadata["dynamo_start"].get("stack") or []
            if not stack or compile_id is None:
                return
            code = stack[-1]
            path = self.interned.get(code.get("filename"), str(code.get("filename")))
            stream.emit(
                "compile_start",
                compile_id=compile_id,
                frame_id=int(metadata["frame_id"]),
                attempt=metadata.get("attempt", 0),
                name=code.get("name", "?"),
                path=path,
                line=int(code.get("line") or 1),
                call_stack=self.collector.user_call_stack(),
            )
        elif name == "dynamo_cpp_guards_str" and isinstance(payload, str):
            stream.emit("guard_tree", compile_id=compile_id, guards=parse_guard_tree(payload))
        elif name == "compilation_metrics":
            metrics = metadata["compilation_metrics"]
            fields = {k: metrics.get(k) for k in _METRIC_FIELDS}
            stream.emit("metrics", **fields)
            produced = self.collector.produced
            produced_id = str(fields.get("compile_id") or "")
            frame_id = _frame_id(produced_id)
            if produced is not None and fields.get("has_guarded_code") and frame_id is not None:
                produced.setdefault((stream.epoch, frame_id), []).append(produced_id)
        elif name == "artifact" and isinstance(payload, str):
            artifact = metadata["artifact"].get("name")
            if artifact == "recompile_reasons":
                reasons = load_reasons(payload)
                stream.emit(
                    "recompile_reasons",
                    compile_id=compile_id,
                    reasons=reasons,
                    call_stack=self.collector.user_call_stack(),
                )
            elif artifact == "dynamo_graph_break_reason":
                text = payload.split("\nTraceback (most recent call last):", 1)[0]
                stream.emit("graph_break", compile_id=compile_id, text=text[: MAX_REASON_TEXT * 2])


TRACE_EVENTS_READ = frozenset({"str", "dynamo_start", "dynamo_cpp_guards_str", "compilation_metrics"})
TRACE_ARTIFACTS_READ = frozenset({"recompile_reasons", "dynamo_graph_break_reason"})
"""The structured-trace events :class:`TraceHandler` reads (``artifact`` events by their ``name``)."""


class TraceHandlers(list):  # type: ignore[type-arg]
    """The trace logger's handler list, which tells torch's ``trace_structured`` it is empty for an event nobody
    reads while ``ours`` is its only handler.

    torch builds an event's metadata and payload whenever ``trace_log.handlers`` is non-empty: a description of every
    tensor and storage it fakes, every symbol and shape guard, the printed FX graph, timing events. The report reads a
    handful (:data:`TRACE_EVENTS_READ`); building the rest cost about 0.1 s per run of the bundled workload. The
    list answers that test (its length, asked from the frame of ``trace_structured`` itself, whose ``name`` and
    ``metadata_fn`` are its arguments) and nothing else: ``logging`` iterates it as usual, no frame is added to the
    calls that build or log an event (torch reads its own stack there), and with another handler present
    (``TORCH_TRACE``, ``--torch-trace``, a user's own) every event is built as before."""

    def __init__(self, handlers: Iterable[logging.Handler], ours: logging.Handler, traced: types.CodeType) -> None:
        super().__init__(handlers)
        self.ours = ours
        self.traced = traced

    def __len__(self) -> int:
        count = super().__len__()
        if count != 1 or self[0] is not self.ours:
            return count
        caller = sys._getframe(1)
        if caller.f_code is not self.traced:
            return count
        arguments = caller.f_locals
        return 1 if _trace_event_wanted(arguments.get("name"), arguments.get("metadata_fn")) else 0


def filter_trace_events(internal: Any, logger: logging.Logger, ours: logging.Handler) -> Callable[[], None] | None:
    """Put :class:`TraceHandlers` in place on ``logger``; the undo, or None where this torch's ``trace_structured``
    is not a function of ``(name, metadata_fn, ...)`` (then nothing changes)."""
    code = getattr(getattr(internal, "trace_structured", None), "__code__", None)
    if not isinstance(code, types.CodeType) or code.co_varnames[:2] != ("name", "metadata_fn"):
        return None
    logger.handlers = TraceHandlers(logger.handlers, ours, code)

    def undo() -> None:
        if isinstance(logger.handlers, TraceHandlers):
            logger.handlers = list(logger.handlers)

    return undo


def _trace_event_wanted(name: Any, metadata_fn: Any) -> bool:
    if name != "artifact":
        return name in TRACE_EVENTS_READ
    try:
        metadata = metadata_fn() if callable(metadata_fn) else None
    except Exception:  # torch's own call raises the same; let it
        return True
    return not isinstance(metadata, dict) or metadata.get("name") in TRACE_ARTIFACTS_READ


class GraphBreakLogHandler(logging.Handler):
    """A record of torch's ``graph_breaks`` log (before 2.6) → a ``graph_break`` event in the trace's own text form:
    the first ``File "...", line N, in f`` of the message is the user's line, the record's exception the reason."""

    def __init__(self, collector: Collector) -> None:
        super().__init__(level=logging.DEBUG)
        self.collector = collector

    def emit(self, record: logging.LogRecord) -> None:
        collector = self.collector
        try:
            at = re.search(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>\S+)', record.getMessage())
            if at is None:
                return
            error = record.exc_info[1] if record.exc_info else None
            reason = str(error).strip().splitlines()[0] if error is not None and str(error).strip() else "graph break"
            text = (
                f"Graph break in user code at {at['file']}:{at['line']}\nGraph Break Reason: {reason}\n"
                f'User code traceback:\n  File "{at["file"]}", line {at["line"]}, in {at["func"]}\n'
            )
            compile_id = collector.torch._guards.CompileContext.current_compile_id()
            collector.stream.emit("graph_break", compile_id=str(compile_id), text=text[: MAX_REASON_TEXT * 2])
        except Exception as exc:
            collector.internal_error("graph break log", exc)


class LimitHandler(logging.Handler):
    """Catches ``torch._dynamo hit config.<limit> (<value>)`` warnings from ``convert_frame``."""

    def __init__(self, collector: Collector) -> None:
        super().__init__(logging.WARNING)
        self.collector = collector

    def emit(self, record: logging.LogRecord) -> None:
        try:
            if "hit config." not in str(record.msg) or not isinstance(record.args, tuple) or len(record.args) < 4:
                return
            limit_type, limit, function, last_reason = record.args[:4]
            self.collector.stream.emit(
                "limit",
                call_stack=self.collector.user_call_stack(),
                limit_type=str(limit_type),
                limit=limit if isinstance(limit, int) else None,
                function=str(function),
                last_reason=str(last_reason)[:MAX_REASON_TEXT],
            )
        except Exception as exc:
            self.collector.internal_error("limit handler", exc)


def _find_torch() -> tuple[str | None, str | None]:
    """torch's package directory and version, read from disk without importing torch (``None`` when unknown)."""
    module = sys.modules.get("torch")
    module_file = getattr(module, "__file__", None)
    if module_file:
        return os.path.dirname(os.path.abspath(module_file)), getattr(module, "__version__", None)
    import importlib.util

    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):
        return None, None
    if spec is None or not spec.submodule_search_locations:
        return None, None
    torch_dir = os.path.abspath(next(iter(spec.submodule_search_locations)))
    try:
        with open(os.path.join(torch_dir, "version.py"), encoding="utf-8") as handle:
            found = re.search(r"^__version__\s*=\s*['\"]([^'\"]+)['\"]", handle.read(), re.MULTILINE)
    except OSError:
        found = None
    return torch_dir, found[1] if found else None


def _put_back(owner: Any, name: str, ours: Any, original: Any) -> None:
    """``owner.name = original`` where ``owner.name`` is still ``ours`` (what the program put there since stays)."""
    if getattr(owner, name, None) is ours:
        setattr(owner, name, original)


def _handler_remover(logger: logging.Logger, handler: logging.Handler) -> Callable[[], None]:
    """Adds ``handler`` to ``logger``; returns what takes it out again, with the level and propagation it had."""
    level, propagate = logger.level, logger.propagate
    logger.addHandler(handler)

    def remove() -> None:
        logger.removeHandler(handler)
        logger.setLevel(level)
        logger.propagate = propagate

    return remove


class DynamoImportWatcher:
    """A ``sys.meta_path`` finder that calls back right after ``torch._dynamo`` has been imported, then leaves."""

    def __init__(self, on_import: Callable[[], None]) -> None:
        self.on_import = on_import

    def find_spec(
        self, fullname: str, path: Any = None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != "torch._dynamo":
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        loader = spec.loader if spec is not None else None
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        exec_module = loader.exec_module
        on_import = self.on_import

        def exec_then_install(module: types.ModuleType) -> None:
            exec_module(module)
            parent = sys.modules.get("torch")
            if parent is not None:
                # What the import system does next anyway; the listeners need ``torch._dynamo`` now.
                setattr(parent, "_dynamo", module)  # noqa: B010
            on_import()

        loader.exec_module = exec_then_install  # type: ignore[method-assign]
        return spec


_SHARED = object()
"""A call that started more than one compiled code object: each call is told apart by its caller's locals."""
_UNSEEN = object()
CallKey = tuple[int, int]
"""A call: the id of the caller's code object and the offset of its call instruction (``f_lasti``), or a line."""


class CompiledCalls:
    """Which compiled frame each guard check ran for, counted per frame: the hits (the call ran compiled code) and
    the misses (no entry matched: the call compiled again, or ran eagerly).

    The guard-complete hook runs before the checked frame starts, so the innermost Python frame it sees is the
    caller's. A caller that is code Dynamo produced calls a fixed target at each instruction (guards keep it so): the
    bytecode hook notes, when it compiles a frame, the instruction that called it (a resume function is called from
    its parent's compiled code; a function compiled on its own after a graph break, from the parent's code around
    the break), and the line of the caller's original code, for a parent that recompiled since. Any other caller
    (``nn.Module._call_impl``'s ``forward_call(...)`` for every compiled module, ``torch.compile``'s wrapper for every
    compiled function, user code Dynamo skipped) is told apart by its locals: the one function or bound method among
    them whose code was compiled. A call neither tells apart is counted, unattributed.

    Everything is keyed by ``id()`` (a code object's hash walks its constants); the code objects are kept alive.
    """

    def __init__(self, compiled: dict[int, types.CodeType]) -> None:
        self.compiled = compiled
        """id → every code object Dynamo compiled (the collector's, filled by the bytecode hook)."""
        self.compile_context: Any = None
        """``torch._guards.CompileContext``, whose current compile id names the frame being compiled."""
        self.convert_frame_file: str | None = None
        self.produced: dict[int, tuple[types.CodeType, types.CodeType]] = {}
        """id of code Dynamo produced → (that code, the code it compiled)."""
        self.callee_at: dict[CallKey, Any] = {}
        """(Dynamo-produced caller code, instruction) → the code compiled there, or :data:`_SHARED`."""
        self.callee_on_line: dict[CallKey, Any] = {}
        """(the original code of a Dynamo-produced caller, line) → the code compiled there, or :data:`_SHARED`."""
        self.frame_ids: dict[tuple[int, int], int] = {}
        """(id of a compiled code, reset epoch) → Dynamo's frame id for it."""
        self.counts: dict[tuple[int, int, bool], int] = {}
        """(id of the compiled code or 0, reset epoch, hit) → calls."""

    def note_compile(self, code: types.CodeType, new_code: types.CodeType, epoch: int) -> None:
        """In the bytecode hook: note what Dynamo compiled and produced, its frame id, and the call that compiled it
        (never raises: the compile must go on)."""
        try:
            self.produced[id(new_code)] = (new_code, code)
            compile_id = self.compile_context.current_compile_id() if self.compile_context is not None else None
            if compile_id is not None:
                self.frame_ids[(id(code), epoch)] = int(compile_id.frame_id)
            caller = self._compile_caller()
            produced = self.produced.get(id(caller.f_code)) if caller is not None else None
            if caller is None or produced is None:
                return  # not called from Dynamo's code: its calls are told apart by the caller's locals
            _note(self.callee_at, (id(caller.f_code), caller.f_lasti), code)
            _note(self.callee_on_line, (id(produced[1]), caller.f_lineno), code)
        except Exception:  # its calls stay unattributed
            return

    def _compile_caller(self) -> types.FrameType | None:
        """The frame whose call Dynamo is compiling: the one that called the outermost frame of
        ``convert_frame.py`` (the eval-frame callback; helpers of other files run inside it)."""
        frame: types.FrameType | None = sys._getframe(1)
        caller = None
        while frame is not None:
            if frame.f_code.co_filename == self.convert_frame_file:
                caller = frame.f_back
            frame = frame.f_back
        return caller

    def checked(self, hit: bool, epoch: int) -> None:
        """In the guard-complete hook (the caller of this method): one guard check, a hit or a miss."""
        try:
            caller = sys._getframe(2)
            callee = self._callee(caller)
        except Exception:  # no caller, or one whose locals cannot be read: the call is counted, unattributed
            callee = 0
        key = (callee, epoch, hit)
        self.counts[key] = self.counts.get(key, 0) + 1

    def _callee(self, caller: types.FrameType) -> int:
        """The id of the compiled code ``caller`` is calling, 0 when it cannot be told."""
        code = caller.f_code
        produced = self.produced.get(id(code))
        if produced is not None:
            key = (id(code), caller.f_lasti)
            callee = self.callee_at.get(key, _UNSEEN)
            if callee is _UNSEEN:  # an instruction of a recompiled parent: what its line called before
                callee = self.callee_on_line.get((id(produced[1]), caller.f_lineno), _SHARED)
                if callee is not _SHARED:
                    self.callee_at[key] = callee
            if callee is not _SHARED:
                return id(callee)
        found = 0
        for value in caller.f_locals.values():
            if type(value) is types.MethodType:
                value = value.__func__
            if type(value) is types.FunctionType and id(value.__code__) in self.compiled:
                if found and found != id(value.__code__):
                    return 0
                found = id(value.__code__)
        return found

    def event(self) -> Event:
        """For the ``calls`` event: the guard hits and misses in all, ``frames`` as ``[epoch, frame id, hits,
        misses]``, and the hits and misses of calls no frame was found for."""
        rows: dict[tuple[int, int], list[int]] = {}
        totals = {True: 0, False: 0}
        unattributed = {True: 0, False: 0}
        for (callee, epoch, hit), count in self.counts.items():
            totals[hit] += count
            frame_id = self.frame_ids.get((callee, epoch))
            if frame_id is None:
                unattributed[hit] += count
                continue
            row = rows.setdefault((epoch, frame_id), [epoch, frame_id, 0, 0])
            row[2 if hit else 3] += count
        return {
            "hits": totals[True],
            "misses": totals[False],
            "frames": list(rows.values()),
            "unattributed_hits": unattributed[True],
            "unattributed_misses": unattributed[False],
        }


def _note(callees: dict[CallKey, Any], key: CallKey, code: types.CodeType) -> None:
    """``code`` was compiled from the call ``key``: the one code of that call, or :data:`_SHARED` once two were."""
    known = callees.get(key)
    callees[key] = code if known is None or known is code else _SHARED


class Collector:
    """Installs the four listeners, emits events, walks the cache entries, and writes the report."""

    def __init__(self, report_path: str, argv: list[str]) -> None:
        self.report_path = report_path
        self.stream = EventStream(report_path + EVENTS_SUFFIX)
        self.argv = argv
        self.pid = os.getpid()
        self.started = time.monotonic()
        self.disabled = {s.strip() for s in os.environ.get(DISABLE_ENV, "").split(",") if s.strip()}
        self.sources_ok: dict[str, bool] = {}
        self.missing: list[str] = []
        self.torch: Any = None
        self.torch_version: str | None = None
        self.installed = False
        self.policy = PathPolicy.for_this_process(None)
        self.codes: dict[int, types.CodeType] = {}
        self.compiled_calls = CompiledCalls(self.codes)
        self.guard_hook: Callable[[bool], bool] | None = None
        self.miss_sites: dict[tuple[str, int], int] = {}
        self.finished = False
        self.finish_lock = threading.Lock()
        self.reported_errors: set[str] = set()
        self.warnings_seen: set[tuple[str, str, str, int]] = set()
        self.undo: list[Callable[[], None]] = []
        """How to take each installed listener out again (:meth:`detach`), in the order they went in."""
        self.rank_noted = _env_int("RANK") is not None
        self.late_hooks: list[dict[str, int]] = []
        """Per hook registered on a submodule of a compiled module after compiling: how often it (and its compiled
        module) ran since, counted by probes beside it."""
        self.guard_cost_asked = os.environ.get(GUARD_COST_ENV) == "1"
        self.measuring_cost = False
        self.profiler: Any = None
        """The ``torch.profiler.profile`` of the open window (guard cost, only when asked)."""
        self.window_due = False
        """A compile happened since the last window: open one at the next cache hit."""
        self.window_hits = 0
        self.cost_samples: dict[tuple[int, str], tuple[list[int], list[int]]] = {}
        """(epoch, compile id) → the lookups and calls measured, :data:`MAX_COST_SAMPLES` at most."""
        self.windows_not_opened = 0
        """Windows left out because the program had a profiler of its own running."""
        self.produced: dict[tuple[int, int], list[str]] | None = None
        """(epoch, frame id) → the compile ids that produced a cache entry, in order; kept only on torch before 2.5,
        whose recompile reasons carry no ids (:meth:`_install_reasons_before_2_5`)."""
        if self.stream.open_error:
            self.missing.append(f"{self.stream.open_error}: a killed run would leave nothing")

    # -- set-up -------------------------------------------------------------------------------------------------------

    def start(self) -> None:
        """Find torch without importing it; install the listeners the moment ``torch._dynamo`` is imported.

        A program that never compiles then pays nothing for the shim (importing ``torch._dynamo`` alone costs
        seconds), and one that does gets every listener before its first compile.
        """
        torch_dir, version = _find_torch()
        if torch_dir is not None and version is None:  # an unusual torch: import it to learn what it is
            try:
                import torch

                version = str(torch.__version__)
            except Exception as exc:
                self.missing.append(f"torch could not be imported in this interpreter ({type(exc).__name__}: {exc})")
                torch_dir = None
        elif torch_dir is None:
            self.missing.append("torch could not be imported in this interpreter (it is not installed)")
        self.torch_version = version
        if torch_dir is not None:
            self.policy = PathPolicy.for_this_process(torch_dir)
            # before torch is imported: `import torch` itself warns (no numpy, an old driver)
            self._install("warnings", self._install_warning_capture, "the warnings shown (warnings.showwarning)")
        self.emit_start()
        if torch_dir is None:
            return
        if "torch._dynamo" in sys.modules:
            self.install()
        else:
            watcher = DynamoImportWatcher(self.install)
            sys.meta_path.insert(0, watcher)
            self.undo.append(lambda: sys.meta_path.remove(watcher) if watcher in sys.meta_path else None)

    def install(self) -> None:
        """Install the listeners (``torch._dynamo`` has just been imported); emits an ``installed`` event."""
        if self.installed:
            return
        self.installed = True
        self.torch = sys.modules["torch"]
        self.torch_version = str(getattr(self.torch, "__version__", self.torch_version))
        self._install("trace", self._install_trace, "structured trace (logger torch.__trace)")
        self._install("bytecode_hook", self._install_bytecode_hook, "compiled code objects (register_bytecode_hook)")
        self._install("cache_entries", self._check_cache_entries, "cache entries (_debug_get_cache_entry_list)")
        self._install("guard_export", self._install_guard_export, "guard user stacks (guard_export_fn)")
        self._install("limit_warnings", self._install_limit_handler, "recompile-limit warnings")
        self._install("guard_complete_hook", self._install_guard_hook, "call counts (set_guard_complete_hook)")
        self._install("reset_hook", self._install_reset_hook, "reset epochs (torch._dynamo.reset)")
        self._install("hook_watch", self._install_hook_watch, "hooks added after compile (register_forward_hook)")
        if self.guard_cost_asked:
            self._install("guard_cost", self._install_guard_cost, "guard cost (torch.profiler's cache lookups)")
        self._install_reasons_before_2_5()
        if _release(self.torch_version) < (2, 6):
            self._install("graph_break_log", self._install_graph_break_log, "graph breaks (the graph_breaks log)")
        if not self.sources_ok.get("bytecode_hook") and self.sources_ok.get("cache_entries"):
            self.sources_ok["cache_entries"] = False
            self.missing.append(
                "cache entries (_debug_get_cache_entry_list): no way to find the compiled code objects without "
                "register_bytecode_hook; guards come from the trace text and fail counts are unknown"
            )
        self.stream.emit(
            "installed",
            torch_version=self.torch_version,
            sources_ok=self.sources_ok,
            missing=self._missing_with_consequences(),
            config=self.config_snapshot(),
        )

    def _install_warning_capture(self) -> None:
        """Record each distinct warning Python shows (torch's C++ warnings name the user's call into torch, so
        every warning is kept, not only those naming a file of torch), then show it as Python would have."""
        import warnings

        shown = warnings.showwarning

        def showwarning(message: Any, category: Any, filename: str, lineno: int, *args: Any, **kwargs: Any) -> None:
            try:
                self._warning(str(getattr(category, "__name__", category)), str(message), str(filename), lineno)
            except Exception as exc:
                self.internal_error("warnings", exc)
            shown(message, category, filename, lineno, *args, **kwargs)

        warnings.showwarning = showwarning
        self.undo.append(lambda: _put_back(warnings, "showwarning", showwarning, shown))

    def _warning(self, category: str, message: str, path: str, line: int) -> None:
        key = (category, message[:MAX_REASON_TEXT], path, int(line))
        if key in self.warnings_seen or len(self.warnings_seen) >= MAX_WARNINGS:
            return
        self.warnings_seen.add(key)
        self.stream.emit("warning", category=key[0], message=key[1], path=path, line=key[3])

    def _install(self, name: str, install: Callable[[], None], what: str) -> None:
        if name in self.disabled:
            self.sources_ok[name] = False
            self.missing.append(f"{what}: disabled by {DISABLE_ENV}")
            return
        try:
            install()
            self.sources_ok[name] = True
        except Exception as exc:
            self.sources_ok[name] = False
            self.missing.append(f"{what}: not available on torch {self.torch_version} ({type(exc).__name__}: {exc})")

    def emit_start(self) -> None:
        self.stream.emit(
            "start",
            torch_version=self.torch_version,
            python=sys.version.split()[0],
            executable=sys.executable,
            argv=self.argv,
            cwd=os.getcwd(),
            config=self.config_snapshot(),
            paths=self.policy.to_json(),
            sources_ok=self.sources_ok,
            missing=self._missing_with_consequences(),
            process=_process_identity(),
        )

    def note_rank(self) -> None:
        """The process group's rank, the first time one is initialised in a process whose environment named none
        (a worker of ``torch.multiprocessing.spawn`` gets its rank as an argument): a ``process`` event."""
        if self.rank_noted:
            return
        dist = sys.modules.get("torch.distributed")
        try:
            if dist is None or not dist.is_available() or not dist.is_initialized():
                return
            rank, world_size = int(dist.get_rank()), int(dist.get_world_size())
        except Exception:  # a process group in an odd state tells us nothing
            return
        self.rank_noted = True
        self.stream.emit("process", rank=rank, world_size=world_size)

    def _missing_with_consequences(self) -> list[str]:
        out = list(self.missing)
        ok = self.sources_ok
        if self.torch is not None and not ok.get("trace"):
            out.append("without the structured trace: no compile times, recompile reasons or graph breaks")
        if self.torch is not None and not ok.get("guard_export"):
            out.append("without guard_export_fn: guards inside torch code (nn.Linear, ...) carry no user line")
        if self.torch is not None and not ok.get("reset_hook"):
            out.append(
                "without the reset hook: after torch._dynamo.reset() compile ids repeat and runs of a frame merge"
            )
        if self.torch is not None and not ok.get("limit_warnings"):
            out.append("without the limit warnings: limit hits come from compile metrics (without the limit value)")
        return out

    def _install_trace(self) -> None:
        internal = self.torch._logging._internal
        if not hasattr(internal, "trace_structured"):
            raise AttributeError("torch._logging._internal.trace_structured")
        logger = logging.getLogger("torch.__trace")
        handler = TraceHandler(self)
        self.undo.append(_handler_remover(logger, handler))
        logger.setLevel(logging.DEBUG)
        logger.propagate = False
        undo_filter = filter_trace_events(internal, logger, handler)
        if undo_filter is not None:
            self.undo.append(undo_filter)

    def _install_bytecode_hook(self) -> None:
        register = self.torch._dynamo.convert_frame.register_bytecode_hook

        calls, stream = self.compiled_calls, self.stream
        calls.convert_frame_file = getattr(self.torch._dynamo.convert_frame, "__file__", None)
        calls.compile_context = getattr(self.torch._guards, "CompileContext", None)

        def remember(code: types.CodeType, new_code: types.CodeType) -> None:
            self.codes[id(code)] = code
            calls.note_compile(code, new_code, stream.epoch)

        handle = register(remember)
        if hasattr(handle, "remove"):
            self.undo.append(handle.remove)

    def _check_cache_entries(self) -> None:
        getter = self.torch._dynamo.eval_frame._debug_get_cache_entry_list
        getter(self._check_cache_entries.__code__)  # raises on a torch whose C API differs
        entry_type = self.torch._C._dynamo.eval_frame._CacheEntry
        for needed in ("compile_id", "guard_manager"):  # before 2.5 an entry names neither
            if not hasattr(entry_type, needed):
                raise AttributeError(f"a cache entry has no {needed}: its guards come from the trace text")

    def _install_guard_export(self) -> None:
        dynamo = self.torch._dynamo
        original = dynamo.optimize
        import inspect

        target = getattr(dynamo.eval_frame, "_optimize", original)
        if "guard_export_fn" not in inspect.signature(target).parameters:
            raise TypeError("torch._dynamo.optimize takes no guard_export_fn")
        collector = self

        def optimize(*args: Any, **kwargs: Any) -> Any:
            user_fn = kwargs.get("guard_export_fn")
            stack = collector.user_call_stack()
            compiled_at = stack[-1] if stack else None

            def export(guards: Any) -> None:
                collector.export_guards(guards, compiled_at)
                if user_fn is not None:
                    user_fn(guards)

            kwargs["guard_export_fn"] = export
            return original(*args, **kwargs)

        optimize.__wrapped__ = original  # type: ignore[attr-defined]
        optimize.__doc__ = original.__doc__
        dynamo.optimize = optimize
        self.undo.append(lambda: _put_back(dynamo, "optimize", optimize, original))

    def _install_limit_handler(self) -> None:
        self.undo.append(_handler_remover(logging.getLogger("torch._dynamo.convert_frame"), LimitHandler(self)))

    def _install_guard_hook(self) -> None:
        set_hook = self.torch._C._dynamo.eval_frame.set_guard_complete_hook
        previous: list[Any] = [None]

        calls, stream = self.compiled_calls, self.stream

        def on_guards(cache_hit: bool) -> bool:
            calls.checked(cache_hit, stream.epoch)
            if not cache_hit:  # rare (a recompile, or a call that runs eagerly): worth finding the user's call
                site = self.innermost_user_site()
                self.miss_sites[site] = self.miss_sites.get(site, 0) + 1
            if self.measuring_cost:
                self.guard_cost_window(cache_hit)
            chained = previous[0]
            return bool(chained(cache_hit)) if chained is not None else cache_hit

        previous[0] = set_hook(on_guards)
        self.guard_hook = on_guards

        def put_back() -> None:
            current = set_hook(previous[0])
            if current is not on_guards:  # the program put its own hook over ours since: it stays
                set_hook(current)

        self.undo.append(put_back)

    def _install_guard_cost(self) -> None:
        """Windows of ``torch.profiler`` after each compile (:meth:`guard_cost_window`), the documented way to see
        guard overhead; they open and close in the guard-complete hook, which torch before 2.8 lacks."""
        if not self.sources_ok.get("guard_complete_hook"):
            raise RuntimeError("it needs the guard-complete hook (torch 2.8 and later)")
        from torch.profiler import profile  # noqa: F401 - fail here, not in the hook, where the profiler is missing

        self.measuring_cost = self.window_due = True
        self.undo.append(self.close_cost_window)

    def guard_cost_window(self, cache_hit: bool) -> None:
        """In the guard-complete hook: count the window's calls and close it after :data:`COST_WINDOW_CALLS`; after
        a compile (a miss), open the next one at the next hit (that hit's own lookup is over, so it is not counted)."""
        try:
            if self.profiler is not None:
                self.window_hits += cache_hit
                if self.window_hits >= COST_WINDOW_CALLS:
                    self.close_cost_window()
            elif not cache_hit:
                self.window_due = True
            elif self.window_due:
                self.window_due = False
                self._open_cost_window()
        except Exception as exc:
            self.measuring_cost = False  # never again in this run: the program must go on unharmed
            self.internal_error("guard cost", exc)

    def _open_cost_window(self) -> None:
        from torch.profiler import ProfilerActivity, profile

        if self.torch._C._autograd._profiler_enabled():  # the program's own: one session at a time, and it is theirs
            self.windows_not_opened += 1
            return
        profiler = profile(activities=[ProfilerActivity.CPU])
        profiler.start()
        self.profiler, self.window_hits = profiler, 0

    def close_cost_window(self) -> None:
        """Stop the window's profiler and keep what it measured (also at a reset and at exit)."""
        profiler, self.profiler = self.profiler, None
        if profiler is None:
            return
        profiler.stop()
        events = [
            (e.start_thread_id(), e.start_ns(), e.duration_ns(), e.name())
            for e in profiler.profiler.kineto_results.events()
        ]
        for entry, (lookups, regions) in lookup_samples(events).items():
            kept = self.cost_samples.setdefault((self.stream.epoch, entry), ([], []))
            room = MAX_COST_SAMPLES - len(kept[0])
            kept[0].extend(lookups[:room])
            kept[1].extend(regions[:room])

    def emit_guard_cost(self) -> None:
        """The guard cost measured in each epoch, at the end (a ``guard_cost`` event per epoch)."""
        if not self.measuring_cost and not self.cost_samples:
            return
        try:
            self.close_cost_window()
            for epoch in sorted({epoch for epoch, _ in self.cost_samples}):
                samples = {entry: kept for (e, entry), kept in self.cost_samples.items() if e == epoch}
                self.stream.emit("guard_cost", epoch=epoch, entries=summarise_costs(samples))
            if self.windows_not_opened:
                self.stream.emit("guard_cost_skipped", windows=self.windows_not_opened)
        except Exception as exc:
            self.internal_error("guard cost", exc)

    def _install_hook_watch(self) -> None:
        """Forward (pre-)hooks registered on a submodule of a module compiled with ``torch.compile(module)`` after
        something compiled: Dynamo does not guard the hooks of submodules (``skip_nnmodule_hook_guards``), so the
        compiled code never calls one added later. Only for such a hook, two probes count: one beside it on the
        submodule (runs when its hooks run), one on the compiled module itself (its hooks run around the compiled
        code); ``late_hook`` and, at the end, ``late_hook_calls`` events carry them."""
        torch = self.torch
        compiled_type = torch._dynamo.eval_frame.OptimizedModule
        module_type = torch.nn.Module
        for name in ("register_forward_hook", "register_forward_pre_hook"):
            original = getattr(module_type, name)
            setattr(module_type, name, self._watching(original, name, compiled_type))
            self.undo.append(functools.partial(setattr, module_type, name, original))

    def _watching(self, original: Callable[..., Any], name: str, compiled_type: type) -> Callable[..., Any]:
        def register(module: Any, *args: Any, **kwargs: Any) -> Any:
            handle = original(module, *args, **kwargs)
            try:
                if self.codes:  # nothing compiled yet: a hook added now is seen by the first compile
                    self._watch_late_hook(module, name, compiled_type)
            except Exception as exc:  # the user's hook is registered whatever happens here
                self.internal_error("hook watch", exc)
            return handle

        register.__wrapped__ = original  # type: ignore[attr-defined]
        return register

    def _watch_late_hook(self, module: Any, name: str, compiled_type: type) -> None:
        import gc  # the compiled modules are found when a late hook is registered, a rare event

        roots: list[Any] = [o for o in gc.get_objects() if issubclass(type(o), compiled_type)]  # no proxy touched
        root = next((r for r in roots if r._orig_mod is not module and _is_submodule(module, r._orig_mod)), None)
        if root is None:
            return
        counts = {"fired": 0, "root_calls": 0}
        probe = type(module).register_forward_pre_hook
        register_pre = getattr(probe, "__wrapped__", probe)  # not through the watch
        register_pre(module, lambda *_: counts.__setitem__("fired", counts["fired"] + 1))
        register_pre(root._orig_mod, lambda *_: counts.__setitem__("root_calls", counts["root_calls"] + 1))
        path, line = self.innermost_user_site()
        hook_id = len(self.late_hooks)
        self.late_hooks.append(counts)
        self.stream.emit(
            "late_hook",
            id=hook_id,
            hook=name.removeprefix("register_"),
            path=path or None,
            line=line or None,
            module=type(module).__name__,
            root=type(root._orig_mod).__name__,
        )

    def guard_hook_replaced(self) -> bool:
        """Whether the program installed its own guard-complete hook over ours (the slot holds one hook)."""
        set_hook = self.torch._C._dynamo.eval_frame.set_guard_complete_hook
        current = set_hook(self.guard_hook)
        set_hook(current)
        return current is not self.guard_hook

    def _install_reasons_before_2_5(self) -> None:
        """torch before 2.5 logs no ``recompile_reasons`` artifact: its ``convert_frame`` asks
        ``get_and_maybe_log_recompilation_reason(cache_entry, frame)`` for one reason per cache entry, newest first,
        without compile ids. Wrapped, it reports them under the ids of the frame's entries (when every entry gave
        one, so that they pair up), as newer torch does."""
        convert_frame = sys.modules.get("torch._dynamo.convert_frame")
        original = getattr(convert_frame, "get_and_maybe_log_recompilation_reason", None)
        if convert_frame is None or original is None:
            return  # newer torch: the reasons come with the structured trace
        produced: dict[tuple[int, int], list[str]] = {}
        self.produced = produced

        def reasons_with_ids(cache_entry: Any, frame: Any) -> Any:
            reasons = original(cache_entry, frame)
            try:
                compile_id = str(self.torch._guards.CompileContext.current_compile_id())
                frame_id = _frame_id(compile_id)
                ids = produced.get((self.stream.epoch, frame_id), []) if frame_id is not None else []
                if reasons and len(reasons) == len(ids):
                    paired = [f"{entry}: {text}" for entry, text in zip(reversed(ids), reasons, strict=True)]
                    self.stream.emit(
                        "recompile_reasons", compile_id=compile_id, reasons=paired, call_stack=self.user_call_stack()
                    )
            except Exception as exc:
                self.internal_error("recompile reasons", exc)
            return reasons

        setattr(convert_frame, "get_and_maybe_log_recompilation_reason", reasons_with_ids)  # noqa: B010
        name = "get_and_maybe_log_recompilation_reason"
        self.undo.append(lambda: _put_back(convert_frame, name, reasons_with_ids, original))

    def _install_graph_break_log(self) -> None:
        """torch before 2.6 puts no graph-break record in its structured trace; its ``graph_breaks`` log artifact
        names the user's line, with the ``Unsupported`` error as the record's exception. A handler there reports
        them as newer torch does; the artifact prints nothing more than the user asked for (``TORCH_LOGS``)."""
        logger = logging.getLogger("torch._dynamo.symbolic_convert.__graph_breaks")
        self.undo.append(_handler_remover(logger, GraphBreakLogHandler(self)))
        if not logger.isEnabledFor(logging.DEBUG):  # off: turn it on for our handler only
            logger.setLevel(logging.DEBUG)
            logger.propagate = False

    def _install_reset_hook(self) -> None:
        dynamo = self.torch._dynamo
        original = dynamo.reset

        def reset(*args: Any, **kwargs: Any) -> Any:
            if self.profiler is not None:
                self.close_cost_window()  # its calls belong to the epoch that ends
            self.walk_cache_entries()
            result = original(*args, **kwargs)
            self.stream.epoch += 1
            self.stream.emit("reset")
            return result

        reset.__wrapped__ = original  # type: ignore[attr-defined]
        reset.__doc__ = original.__doc__
        dynamo.reset = reset
        self.undo.append(lambda: _put_back(dynamo, "reset", reset, original))

    # -- listeners ----------------------------------------------------------------------------------------------------

    def internal_error(self, where: str, exc: BaseException) -> None:
        key = f"{where}: {type(exc).__name__}"
        if key in self.reported_errors:
            return
        self.reported_errors.add(key)
        self.stream.emit("internal_error", where=where, message=f"{type(exc).__name__}: {exc}")

    def innermost_user_site(self) -> tuple[str, int]:
        """The innermost user frame of the current stack (``("", 0)`` when there is none)."""
        frame: types.FrameType | None = sys._getframe(0)
        while frame is not None:
            if self.policy.is_user(frame.f_code.co_filename):
                return frame.f_code.co_filename, frame.f_lineno
            frame = frame.f_back
        return "", 0

    def user_call_stack(self) -> list[Loc]:
        """The user frames of the current Python stack, outermost first (the compile's trigger is the last)."""
        frames: list[Loc] = []
        frame: types.FrameType | None = sys._getframe(1)
        while frame is not None:
            path = frame.f_code.co_filename
            if self.policy.is_user(path):
                frames.append([path, frame.f_lineno, frame.f_code.co_name])
            frame = frame.f_back
        frames.reverse()
        return frames[-MAX_STACK:]

    def export_guards(self, guards: Any, compiled_at: Loc | None = None) -> None:
        try:
            compile_id = self.torch._guards.CompileContext.current_compile_id()
            out: list[Event] = []
            total = 0
            for guard in guards:
                total += 1
                if len(out) >= MAX_GUARDS_PER_ENTRY:
                    continue
                stack = [[fs.filename, fs.lineno, fs.name] for fs in (guard.user_stack or [])]
                code = guard.code_list or []
                out.append(
                    {
                        "name": guard.name,
                        "kind": _guard_kind(guard),
                        "code": [str(c) for c in code][:8],
                        "user": _innermost_user(stack, self.policy),
                    }
                )
            self.stream.emit(
                "guard_export",
                compile_id=str(compile_id),
                guards=out,
                omitted=max(0, total - len(out)),
                compiled_at=compiled_at,
            )
        except Exception as exc:
            self.internal_error("guard export", exc)

    # -- the end ------------------------------------------------------------------------------------------------------

    def walk_cache_entries(self) -> None:
        if not self.sources_ok.get("cache_entries") or self.torch is None:
            return
        try:
            getter = self.torch._dynamo.eval_frame._debug_get_cache_entry_list
            entries: list[Event] = []
            for code in list(self.codes.values()):
                for entry in getter(code):
                    event = self._entry_event(entry)
                    event["code"] = [code.co_filename, code.co_firstlineno, code.co_name]
                    entries.append(event)
            self.stream.emit("cache_entries", entries=entries)
        except Exception as exc:
            self.internal_error("cache entry walk", exc)

    def _entry_event(self, entry: Any) -> Event:
        manager = entry.guard_manager
        invalidated = getattr(manager, "invalidation_reason", None)
        root = getattr(manager, "root", None)
        guards: list[list[str]] = []
        fail_count = None
        if root is not None:
            fail_count = root.fail_count() if hasattr(root, "fail_count") else None
            pending: list[Any] = [root]
            while pending and len(guards) <= MAX_GUARDS_PER_ENTRY:
                mgr = pending.pop()
                source = "" if mgr is root or not hasattr(mgr, "get_source") else mgr.get_source()
                for leaf in mgr.get_leaf_guards():
                    for part in leaf.verbose_code_parts():
                        guards.append([type(leaf).__name__, str(part), source])
                children = list(mgr.get_child_managers())
                if hasattr(mgr, "get_key_value_managers"):
                    for key_mgr, value_mgr in mgr.get_key_value_managers().values():
                        children.extend(m for m in (key_mgr, value_mgr) if m is not None)
                pending.extend(reversed(children))
            if hasattr(root, "get_epilogue_lambda_guards"):
                for leaf in root.get_epilogue_lambda_guards():
                    for part in leaf.verbose_code_parts():
                        guards.append([type(leaf).__name__, str(part), ""])
        guards = _dedupe_guards(guards)
        return {
            "compile_id": str(entry.compile_id),
            "fail_count": fail_count,
            "invalidated": None if invalidated is None else str(invalidated),
            "guards": guards[:MAX_GUARDS_PER_ENTRY],
            "omitted": max(0, len(guards) - MAX_GUARDS_PER_ENTRY),
        }

    def config_snapshot(self) -> dict[str, Any]:
        if self.torch is None:
            return {}
        import warnings

        config = self.torch._dynamo.config
        out: dict[str, Any] = {}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for key in CONFIG_KEYS:
                try:
                    value = getattr(config, key)
                except Exception:
                    continue
                out[key] = value if value is None or isinstance(value, bool | int | float | str) else repr(value)
        return out

    def finish(self, ended_by: str, exit_code: int | None, error: Event | None) -> None:
        """Write the report (once; only in the process that started the run, never in a forked child)."""
        with self.finish_lock:
            if self.finished or os.getpid() != self.pid:
                return
            self.finished = True
        try:
            self.emit_guard_cost()
            self.note_rank()
            if not self.installed and "torch._dynamo" in sys.modules:
                self.internal_error(
                    "import watcher", RuntimeError("torch._dynamo was imported without the shim seeing it")
                )
            self.walk_cache_entries()
            for kind, fields in self._closing(ended_by, exit_code, error):
                self.stream.emit(kind, **fields)
            self.stream.enabled = False
            write_json_atomically(build_report(self.stream.events), self.report_path)
        except Exception as exc:  # the report is best effort; the user's exit code is not
            self.stream.enabled = True
            self.internal_error("report writer", exc)
        finally:
            self.stream.close()

    def report_so_far(self) -> Event:
        """The report as :meth:`finish` would write it now, ending nothing (a live kernel's ``%dynamo_lens``)."""
        self.walk_cache_entries()
        with self.stream.lock:
            events = list(self.stream.events)
        closing = [self.stream.event(kind, fields) for kind, fields in self._closing("returned")]
        return build_report(events + closing)

    def _closing(
        self, ended_by: str, exit_code: int | None = None, error: Event | None = None
    ) -> list[tuple[str, dict[str, Any]]]:
        """The events that end a run: the call counts (where the guard hook saw them), then ``end``."""
        closing: list[tuple[str, dict[str, Any]]] = []
        if self.sources_ok.get("guard_complete_hook"):
            replaced = self.guard_hook_replaced()
            sites = [[path, line, count] for (path, line), count in self.miss_sites.items() if path]
            calls = {**self.compiled_calls.event(), "miss_sites": sites, "replaced": replaced}
            closing.append(("calls", calls))
        for hook_id, counts in enumerate(self.late_hooks):
            closing.append(("late_hook_calls", {"id": hook_id, **counts}))
        duration = round(time.monotonic() - self.started, 3)
        end = {"ended_by": ended_by, "exit_code": exit_code, "error": error, "duration_s": duration}
        closing.append(("end", {**end, "config": self.config_snapshot()}))
        return closing

    def detach(self) -> None:
        """Take every listener out again, newest first: a recording that ends while the program goes on
        (``dynamo_lens.record()``, a notebook's ``%unload_ext``) leaves torch as it found it."""
        while self.undo:
            undo = self.undo.pop()
            try:
                undo()
            except Exception as exc:  # one that cannot be undone must not keep the others in
                self.internal_error("detach", exc)

    def detach_in_child(self) -> None:
        """After ``os.fork()``: the child must not write into the parent's stream or report."""
        self.stream.enabled = False
        self.stream.handle = None
        self.finished = True


# ====================================================================================================================
# Running the target like ``python`` would


def _user_traceback(tb: types.TracebackType | None) -> types.TracebackType | None:
    """Drop the shim's and runpy's own frames from the top of a traceback."""
    own = {__file__, os.path.abspath(__file__), runpy.run_path.__code__.co_filename}  # runpy for -m and directories
    while tb is not None and tb.tb_frame.f_code.co_filename in own:
        tb = tb.tb_next
    return tb


def error_event(exc: BaseException, tb: types.TracebackType | None, policy: PathPolicy) -> Event:
    frames = traceback.extract_tb(tb)
    user = None
    for fs in frames:
        if policy.is_user(os.path.abspath(fs.filename)):
            user = fs
    text = "".join(traceback.format_exception(type(exc), exc, tb))
    return {
        "type": type(exc).__name__,
        "message": str(exc)[:MAX_REASON_TEXT],
        "path": os.path.abspath(user.filename) if user else None,
        "line": user.lineno if user and user.lineno else None,
        "traceback": text[-MAX_TRACEBACK_TEXT:],
    }


def _exit_code(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int) and not isinstance(code, bool):
        return code
    return 1


def _parse_args(argv: list[str]) -> tuple[dict[str, str], list[str]]:
    options: dict[str, str] = {}
    index = 0
    while index < len(argv) and argv[index] != "--":
        flag = argv[index]
        if flag in ("--report", "--torch-trace", "--rebuild") and index + 1 < len(argv):
            options[flag[2:]] = argv[index + 1]
            index += 2
        else:
            raise SystemExit(f"dynamo-lens shim: unknown option {flag!r}\n{__doc__.splitlines()[2] if __doc__ else ''}")
    return options, argv[index + 1 :]


def run_script(path: str) -> None:
    """Execute a script file as ``python path`` does: a fresh ``__main__`` with an absolute ``__file__``, while
    ``sys.argv[0]`` stays as the user typed it (``runpy.run_path`` would make it absolute). Directories and zip
    files with a ``__main__.py`` go through runpy, which knows how to run them."""
    if not os.path.isfile(path) or zipfile.is_zipfile(path):
        runpy.run_path(path, run_name="__main__")
        return
    with io.open_code(path) as handle:
        source = handle.read()
    code = compile(source, path, "exec", dont_inherit=True)
    main_module = types.ModuleType("__main__")
    main_module.__dict__.update(
        __file__=path,
        __cached__=None,
        __builtins__=builtins,
        __loader__=importlib.machinery.SourceFileLoader("__main__", path),
        __spec__=None,
    )
    sys.modules["__main__"] = main_module  # stays, as in python: atexit handlers and pickling see the script
    exec(code, main_module.__dict__)


def _unrunnable(target: list[str]) -> tuple[str, str, int] | None:
    """Python's own message, error type and exit code when the script or module cannot even be started."""
    if target[0] != "-m":
        script = os.path.abspath(target[0])
        if os.path.exists(script):
            return None
        return f"can't open file {script!r}: [Errno 2] No such file or directory", "FileNotFoundError", 2
    import importlib.util

    sys.path.insert(0, os.getcwd())
    try:
        found = importlib.util.find_spec(target[1]) is not None
    except (ImportError, ValueError):
        found = False
    finally:
        sys.path.pop(0)
    return None if found else (f"No module named {target[1]}", "ModuleNotFoundError", 1)


def main(argv: list[str]) -> int:
    options, target = _parse_args(argv)
    if "rebuild" in options:
        report = options["rebuild"]
        write_json_atomically(rebuild_report(report + EVENTS_SUFFIX), report)
        return 0
    if "report" not in options or not target or (target[0] == "-m" and len(target) < 2):
        sys.stderr.write("usage: shim.py --report OUT.json [--torch-trace DIR] -- (script.py | -m module) [args...]\n")
        return 2
    if "torch-trace" in options:
        os.environ["TORCH_TRACE"] = os.path.abspath(options["torch-trace"])
    report_path = os.path.abspath(options["report"])

    collector = Collector(report_path, list(target))
    unrunnable = _unrunnable(target)
    if unrunnable is not None:  # fail as python itself would, before paying for torch
        message, error_type, code = unrunnable
        sys.stderr.write(f"{sys.executable}: {message}\n")
        collector.missing.append("everything: the target could not be started, so nothing ran")
        collector.torch_version = _find_torch()[1]  # read from disk: the report must not blame torch for it
        collector.emit_start()
        error = {"type": error_type, "message": message, "path": None, "line": None, "traceback": ""}
        collector.finish("exception", code, error)
        return code
    collector.start()
    _finish_with_the_process(collector)

    if target[0] == "-m":
        module, args = target[1], target[2:]
        sys.argv = [module, *args]
        sys.path[0] = os.getcwd()

        def run() -> None:
            runpy.run_module(module, run_name="__main__", alter_sys=True)

    else:
        script_path = os.path.abspath(target[0])
        sys.argv = list(target)
        sys.path[0] = os.path.dirname(script_path)

        def run() -> None:
            run_script(script_path)

    try:
        run()
    except SystemExit as exc:
        collector.finish("sys_exit", _exit_code(exc.code), None)
        raise
    except KeyboardInterrupt as exc:
        tb = _user_traceback(exc.__traceback__)
        collector.finish("keyboard_interrupt", 130, error_event(exc, tb, collector.policy))
        sys.excepthook(type(exc), exc.with_traceback(tb), tb)
        return 130
    except BaseException as exc:
        tb = _user_traceback(exc.__traceback__)
        collector.finish("exception", 1, error_event(exc, tb, collector.policy))
        sys.excepthook(type(exc), exc.with_traceback(tb), tb)
        return 1
    collector.finish("returned", 0, None)
    return 0


def _finish_with_the_process(collector: Collector) -> None:
    """A forked child records nothing into this process's report; SIGTERM (how a run is stopped, and how
    ``torchrun`` stops the other ranks when one fails) writes the report before the process dies of it."""
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=collector.detach_in_child)
    if signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, None):
        return

    def on_term(signum: int, frame: types.FrameType | None) -> None:
        collector.finish("signal", -signum, None)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)

    signal.signal(signal.SIGTERM, on_term)


# ====================================================================================================================
# The other processes of a multi-process run


def _env_int(name: str) -> int | None:
    """An int the environment gives *this* process: not one a recorded ancestor passed down (a rank's data loader
    workers inherit its ``RANK``; :data:`RECORDED_PARENT_ENV` tells)."""
    if os.environ.get(RECORDED_PARENT_ENV, str(os.getpid())) != str(os.getpid()):
        return None
    try:
        return int(os.environ[name])
    except (KeyError, ValueError):
        return None


def _process_identity() -> Event:
    """This process, and its place in a distributed job as its environment states it (``torchrun`` sets ``RANK``,
    ``LOCAL_RANK`` and ``WORLD_SIZE`` for each worker; a process group initialised later adds a ``process``
    event)."""
    return {
        "pid": os.getpid(),
        "rank": _env_int("RANK"),
        "local_rank": _env_int("LOCAL_RANK"),
        "world_size": _env_int("WORLD_SIZE"),
    }


def record_worker(directory: str) -> Collector:
    """Record this process as ``<directory>/<pid>.json``: called by the bootstrap ``sitecustomize`` that the runner
    puts on ``PYTHONPATH`` (``worker_site/``, which also decides which processes are worth it) when the program
    first imports torch, so the user's code is not changed. The runner merges these reports into the run's own
    (``ranks``).

    The report is written at exit; the event stream is written as things happen, so a rank killed with SIGKILL, or
    stopped with SIGTERM (left at its default here: a rank blocked in a collective would never run a Python handler,
    and ``torchrun`` would wait for it), keeps what it saw. The exit code is the one of ``sys.exit``, ``exit`` or
    ``quit`` (``multiprocessing`` workers end with ``sys.exit``) or of an uncaught exception, else 0."""
    collector = Collector(os.path.join(directory, f"{os.getpid()}.json"), list(sys.argv))
    collector.start()
    os.environ[RECORDED_PARENT_ENV] = str(os.getpid())
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=collector.detach_in_child)
    outcome: dict[str, Any] = {"ended_by": "returned", "exit_code": 0, "error": None}
    previous_hook = sys.excepthook

    def excepthook(kind: type[BaseException], exc: BaseException, tb: types.TracebackType | None) -> None:
        interrupted = isinstance(exc, KeyboardInterrupt)
        outcome.update(
            ended_by="keyboard_interrupt" if interrupted else "exception",
            exit_code=130 if interrupted else 1,
            error=error_event(exc, tb, collector.policy),
        )
        previous_hook(kind, exc, tb)

    def recording(original: Callable[..., Any]) -> Callable[..., Any]:
        def leave(status: object = None) -> Any:
            outcome.update(ended_by="sys_exit", exit_code=_exit_code(status), error=None)
            return original(status)

        return leave

    sys.excepthook = excepthook
    sys.exit = recording(sys.exit)
    for name in ("exit", "quit"):  # the site module's exit()/quit(), absent under python -S
        if hasattr(builtins, name):
            setattr(builtins, name, recording(getattr(builtins, name)))
    atexit.register(lambda: collector.finish(outcome["ended_by"], outcome["exit_code"], outcome["error"]))
    return collector


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
