"""The run report (``dynamo-lens.run`` v1): what one instrumented run of a user's script observed.

The shim (``shim.py``, inside the user's interpreter) writes this document as plain JSON; everything on our side reads
it through :meth:`RunReport.from_json`, which validates the whole document and raises :class:`ReportError` naming
the first offending field (``frames[0].cache_entries[2].guards[5].line: expected an integer, got 'x'``).
``run_report.schema.json`` next to this module describes the same document for users (JSON Schema 2020-12).

Conventions (DESIGN.md §2):

* ``path``/``line`` always mean the **user's** code: the innermost stack frame that is not in torch or
  site-packages. Paths are absolute, lines 1-based. ``None`` when the run did not show a user frame.
* Compile ids (``"0/1"``: frame 0, its second compile) restart after ``torch._dynamo.reset()``; every object that
  carries a compile id therefore also carries the ``reset_epoch`` it belongs to (0 before the first reset).
* A :class:`CacheEntry` is one compile *attempt* of a frame. Attempts that produced no code (``skipped``: the frame
  had nothing to compile, or Dynamo gave up on it and runs it eagerly, e.g. after a graph break inside a loop;
  ``recompile_limit``; ``failed``) are kept so the history reads in order.
* Dynamo reports only the first failing guard of each earlier entry; :class:`Recompile` lists one
  :class:`FailedGuard` per earlier entry that rejected the call.
* A killed run leaves only the shim's event stream (``<report>.events.jsonl``, see :func:`events_path`);
  :func:`load_partial_report` rebuilds a report from it with ``complete = False``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar, cast, get_args

from dynamo_lens.model import Finding

RUN_SCHEMA = "dynamo-lens.run"
RUN_SCHEMA_VERSION = 1
EVENTS_SUFFIX = ".events.jsonl"

CompileStatus = Literal["ok", "skipped", "recompile_limit", "failed"]
EndedBy = Literal["returned", "sys_exit", "exception", "keyboard_interrupt", "signal", "unknown"]
GuardsFrom = Literal["cache_entry", "trace", "none"]
AttributedTo = Literal["guard", "call", "frame", "none"]
LimitKind = Literal["recompile_limit", "accumulated_recompile_limit"]
ConfigValue = bool | int | float | str | None


class ReportError(ValueError):
    """The document is not a valid ``dynamo-lens.run`` v1 report; the message names the field."""


# --------------------------------------------------------------------------------------------------------------------
# The data


@dataclass(frozen=True, slots=True)
class StackFrame:
    """One frame of a Python stack (absolute ``path``, 1-based ``line``, function ``name``)."""

    path: str
    line: int
    name: str

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "line": self.line, "name": self.name}

    @classmethod
    def from_json(cls, data: object, where: str = "stack_frame") -> StackFrame:
        obj = _object(data, where)
        return cls(path=_str(obj, "path", where), line=_line(obj, "line", where), name=_str(obj, "name", where))


@dataclass(frozen=True, slots=True)
class FrameRef:
    """Names a compiled frame from elsewhere in the report (a recompile, a graph break, a limit hit)."""

    name: str
    path: str
    line: int
    frame_id: int | None = None
    reset_epoch: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "path": self.path,
            "line": self.line,
            "frame_id": self.frame_id,
            "reset_epoch": self.reset_epoch,
        }

    @classmethod
    def from_json(cls, data: object, where: str) -> FrameRef:
        obj = _object(data, where)
        return cls(
            name=_str(obj, "name", where),
            path=_str(obj, "path", where),
            line=_line(obj, "line", where),
            frame_id=_opt_int(obj, "frame_id", where),
            reset_epoch=_int(obj, "reset_epoch", where, default=0),
        )


@dataclass(frozen=True, slots=True)
class Guard:
    """One guard of a cache entry.

    ``kind`` is the C++ leaf guard class (``EQUALS_MATCH``, ``TENSOR_MATCH``, ...) when the entry was still alive at
    exit, else the kind printed in the trace's guard tree (the same names). ``text`` is the guard as Dynamo prints it
    with ``L[...]``/``G[...]`` scopes stripped and object ids replaced (``___check_obj_id(self.lin, <id>)``);
    ``source`` is the guarded source as Dynamo names it (``L['self'].steps``). ``path``/``line`` locate the user code
    that installed the guard; ``origin`` is where Dynamo itself points (often a torch file:
    ``nn/modules/linear.py:134``).
    """

    kind: str
    text: str
    source: str | None = None
    path: str | None = None
    line: int | None = None
    hint: str | None = None
    origin: str | None = None
    code: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "text": self.text,
            "source": self.source,
            "path": self.path,
            "line": self.line,
            "hint": self.hint,
            "origin": self.origin,
            "code": self.code,
        }

    @classmethod
    def from_json(cls, data: object, where: str) -> Guard:
        obj = _object(data, where)
        return cls(
            kind=_str(obj, "kind", where),
            text=_str(obj, "text", where),
            source=_opt_str(obj, "source", where),
            path=_opt_str(obj, "path", where),
            line=_opt_line(obj, "line", where),
            hint=_opt_str(obj, "hint", where),
            origin=_opt_str(obj, "origin", where),
            code=_opt_str(obj, "code", where),
        )


@dataclass(frozen=True, slots=True)
class CacheEntry:
    """One compile attempt of a frame and, when it produced code, the guards of the cache entry it installed.

    ``call_site`` is the user's call that made Dynamo compile (the last user frame of ``call_stack``).
    ``fail_count`` is how often the live entry's guards rejected a call (``None`` when unknown).
    ``guards_omitted`` counts guards left out because the entry exceeded the shim's per-entry cap.
    """

    compile_id: str
    status: CompileStatus
    compile_time_s: float | None = None
    guard_count: int | None = None
    fail_type: str | None = None
    fail_reason: str | None = None
    restart_reasons: tuple[str, ...] = ()
    call_site: StackFrame | None = None
    call_stack: tuple[StackFrame, ...] = ()
    alive_at_exit: bool | None = None
    invalidated: str | None = None
    fail_count: int | None = None
    guards_from: GuardsFrom = "none"
    guards: tuple[Guard, ...] = ()
    guards_omitted: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "compile_id": self.compile_id,
            "status": self.status,
            "compile_time_s": self.compile_time_s,
            "guard_count": self.guard_count,
            "fail_type": self.fail_type,
            "fail_reason": self.fail_reason,
            "restart_reasons": list(self.restart_reasons),
            "call_site": None if self.call_site is None else self.call_site.to_json(),
            "call_stack": [f.to_json() for f in self.call_stack],
            "alive_at_exit": self.alive_at_exit,
            "invalidated": self.invalidated,
            "fail_count": self.fail_count,
            "guards_from": self.guards_from,
            "guards": [g.to_json() for g in self.guards],
            "guards_omitted": self.guards_omitted,
        }

    @classmethod
    def from_json(cls, data: object, where: str) -> CacheEntry:
        obj = _object(data, where)
        call_site = obj.get("call_site")
        return cls(
            compile_id=_compile_id(obj, "compile_id", where),
            status=_choice(obj, "status", where, CompileStatus),
            compile_time_s=_opt_float(obj, "compile_time_s", where),
            guard_count=_opt_int(obj, "guard_count", where),
            fail_type=_opt_str(obj, "fail_type", where),
            fail_reason=_opt_str(obj, "fail_reason", where),
            restart_reasons=_str_list(obj, "restart_reasons", where),
            call_site=None if call_site is None else StackFrame.from_json(call_site, f"{where}.call_site"),
            call_stack=_list(obj, "call_stack", where, StackFrame.from_json),
            alive_at_exit=_opt_bool(obj, "alive_at_exit", where),
            invalidated=_opt_str(obj, "invalidated", where),
            fail_count=_opt_int(obj, "fail_count", where),
            guards_from=_choice(obj, "guards_from", where, GuardsFrom, default="none"),
            guards=_list(obj, "guards", where, Guard.from_json),
            guards_omitted=_int(obj, "guards_omitted", where, default=0),
        )

    @property
    def produced_code(self) -> bool:
        return self.status == "ok"


@dataclass(frozen=True, slots=True)
class Frame:
    """A Python frame (code object) Dynamo compiled, in one reset epoch, with its compile attempts in order.

    ``is_resume`` marks Dynamo's resume functions (``torch_dynamo_resume_in_<fn>_at_<line>``) that continue a frame
    after a graph break; their ``path``/``line`` are the user's file and the line the break happened at.
    """

    name: str
    path: str
    line: int
    frame_id: int | None = None
    reset_epoch: int = 0
    is_resume: bool = False
    cache_entries: tuple[CacheEntry, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "path": self.path,
            "line": self.line,
            "frame_id": self.frame_id,
            "reset_epoch": self.reset_epoch,
            "is_resume": self.is_resume,
            "cache_entries": [e.to_json() for e in self.cache_entries],
        }

    @classmethod
    def from_json(cls, data: object, where: str) -> Frame:
        obj = _object(data, where)
        return cls(
            name=_str(obj, "name", where),
            path=_str(obj, "path", where),
            line=_line(obj, "line", where),
            frame_id=_opt_int(obj, "frame_id", where),
            reset_epoch=_int(obj, "reset_epoch", where, default=0),
            is_resume=_bool(obj, "is_resume", where, default=False),
            cache_entries=_list(obj, "cache_entries", where, CacheEntry.from_json),
        )

    @property
    def ref(self) -> FrameRef:
        return FrameRef(self.name, self.path, self.line, self.frame_id, self.reset_epoch)

    @property
    def compiles_ok(self) -> int:
        return sum(1 for e in self.cache_entries if e.produced_code)

    @property
    def skipped(self) -> bool:
        """True when every attempt was skipped: Dynamo runs this frame without compiled code."""
        return bool(self.cache_entries) and all(e.status == "skipped" for e in self.cache_entries)


@dataclass(frozen=True, slots=True)
class FailedGuard:
    """Why one earlier cache entry (``entry``) rejected the call that caused a recompile.

    ``text`` is the failing guard (``self.steps == 0``) or Dynamo's message for failures that are not guard code
    (``tensor 'x' size mismatch at index 0. expected 2, actual 3``, ``GLOBAL_STATE changed: grad_mode``).
    ``attributed_to`` says where ``path``/``line`` come from: ``guard`` (the user line that installed the failing
    guard), ``call`` (the user's call that triggered the recompile: used for tensor and global-state failures, which
    carry no line), ``frame`` (the compiled ``def``) or ``none``. ``raw`` is Dynamo's unparsed reason.
    """

    entry: str
    text: str
    kind: str | None = None
    source: str | None = None
    path: str | None = None
    line: int | None = None
    attributed_to: AttributedTo = "none"
    hint: str | None = None
    raw: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "entry": self.entry,
            "text": self.text,
            "kind": self.kind,
            "source": self.source,
            "path": self.path,
            "line": self.line,
            "attributed_to": self.attributed_to,
            "hint": self.hint,
            "raw": self.raw,
        }

    @classmethod
    def from_json(cls, data: object, where: str) -> FailedGuard:
        obj = _object(data, where)
        return cls(
            entry=_str(obj, "entry", where),
            text=_str(obj, "text", where),
            kind=_opt_str(obj, "kind", where),
            source=_opt_str(obj, "source", where),
            path=_opt_str(obj, "path", where),
            line=_opt_line(obj, "line", where),
            attributed_to=_choice(obj, "attributed_to", where, AttributedTo, default="none"),
            hint=_opt_str(obj, "hint", where),
            raw=_str(obj, "raw", where, default=""),
        )


@dataclass(frozen=True, slots=True)
class Recompile:
    """A compile of a frame that already had cache entries, and the guards of those entries that failed.

    ``failed_guards`` has one item per earlier entry that rejected the call, newest entry first (for a counter,
    ``failed_guards[0]`` is the previous value's guard), exact repeats removed, capped at 16
    (``failed_guards_omitted`` counts the rest). ``call_site`` is the user's call that triggered the recompile.
    """

    compile_id: str
    frame: FrameRef
    failed_guards: tuple[FailedGuard, ...] = ()
    call_site: StackFrame | None = None
    failed_guards_omitted: int = 0

    @property
    def reset_epoch(self) -> int:
        return self.frame.reset_epoch

    def to_json(self) -> dict[str, Any]:
        return {
            "compile_id": self.compile_id,
            "frame": self.frame.to_json(),
            "failed_guards": [g.to_json() for g in self.failed_guards],
            "call_site": None if self.call_site is None else self.call_site.to_json(),
            "failed_guards_omitted": self.failed_guards_omitted,
        }

    @classmethod
    def from_json(cls, data: object, where: str) -> Recompile:
        obj = _object(data, where)
        call_site = obj.get("call_site")
        return cls(
            compile_id=_compile_id(obj, "compile_id", where),
            frame=FrameRef.from_json(obj.get("frame"), f"{where}.frame"),
            failed_guards=_list(obj, "failed_guards", where, FailedGuard.from_json),
            call_site=None if call_site is None else StackFrame.from_json(call_site, f"{where}.call_site"),
            failed_guards_omitted=_int(obj, "failed_guards_omitted", where, default=0),
        )


@dataclass(frozen=True, slots=True)
class GraphBreak:
    """A graph break at one user line, de-duplicated: ``count`` is how often Dynamo traced it.

    ``gb_id`` (``GB0124``), ``explanation`` and ``hints`` come from torch's graph-break registry when the break's
    type is in it; ``reason`` is Dynamo's own message.
    """

    compile_id: str | None
    reason: str
    gb_type: str | None = None
    gb_id: str | None = None
    explanation: str | None = None
    hints: tuple[str, ...] = ()
    context: str | None = None
    path: str | None = None
    line: int | None = None
    frame: FrameRef | None = None
    user_stack: tuple[StackFrame, ...] = ()
    compile_ids: tuple[str, ...] = ()
    count: int = 1

    def to_json(self) -> dict[str, Any]:
        return {
            "compile_id": self.compile_id,
            "reason": self.reason,
            "gb_type": self.gb_type,
            "gb_id": self.gb_id,
            "explanation": self.explanation,
            "hints": list(self.hints),
            "context": self.context,
            "path": self.path,
            "line": self.line,
            "frame": None if self.frame is None else self.frame.to_json(),
            "user_stack": [f.to_json() for f in self.user_stack],
            "compile_ids": list(self.compile_ids),
            "count": self.count,
        }

    @classmethod
    def from_json(cls, data: object, where: str) -> GraphBreak:
        obj = _object(data, where)
        frame = obj.get("frame")
        compile_id = obj.get("compile_id")
        return cls(
            compile_id=None if compile_id is None else _compile_id(obj, "compile_id", where),
            reason=_str(obj, "reason", where),
            gb_type=_opt_str(obj, "gb_type", where),
            gb_id=_opt_str(obj, "gb_id", where),
            explanation=_opt_str(obj, "explanation", where),
            hints=_str_list(obj, "hints", where),
            context=_opt_str(obj, "context", where),
            path=_opt_str(obj, "path", where),
            line=_opt_line(obj, "line", where),
            frame=None if frame is None else FrameRef.from_json(frame, f"{where}.frame"),
            user_stack=_list(obj, "user_stack", where, StackFrame.from_json),
            compile_ids=_str_list(obj, "compile_ids", where),
            count=_int(obj, "count", where, default=1),
        )


@dataclass(frozen=True, slots=True)
class LimitHit:
    """Dynamo hit a recompile limit for a frame; later calls that miss every entry run eagerly, silently.

    ``call_site`` is the user's call that ran into the limit (the first call that ran eagerly); ``eager_calls``
    estimates how many calls from that line then ran eagerly (guard misses there that did not lead to a compile;
    ``None`` without the guard-complete hook).
    """

    limit: LimitKind
    value: int | None
    last_reason: str
    frame: FrameRef | None = None
    compile_id: str | None = None
    function: str = ""
    call_site: StackFrame | None = None
    eager_calls: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "limit": self.limit,
            "value": self.value,
            "last_reason": self.last_reason,
            "frame": None if self.frame is None else self.frame.to_json(),
            "compile_id": self.compile_id,
            "function": self.function,
            "call_site": None if self.call_site is None else self.call_site.to_json(),
            "eager_calls": self.eager_calls,
        }

    @classmethod
    def from_json(cls, data: object, where: str) -> LimitHit:
        obj = _object(data, where)
        frame = obj.get("frame")
        call_site = obj.get("call_site")
        return cls(
            limit=_choice(obj, "limit", where, LimitKind),
            value=_opt_int(obj, "value", where),
            last_reason=_str(obj, "last_reason", where, default=""),
            frame=None if frame is None else FrameRef.from_json(frame, f"{where}.frame"),
            compile_id=_opt_str(obj, "compile_id", where),
            function=_str(obj, "function", where, default=""),
            call_site=None if call_site is None else StackFrame.from_json(call_site, f"{where}.call_site"),
            eager_calls=_opt_int(obj, "eager_calls", where),
        )


@dataclass(frozen=True, slots=True)
class RunError:
    """The exception that ended the user's script: type, message and the innermost user frame of its traceback."""

    type: str
    message: str
    path: str | None = None
    line: int | None = None
    traceback: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "message": self.message,
            "path": self.path,
            "line": self.line,
            "traceback": self.traceback,
        }

    @classmethod
    def from_json(cls, data: object, where: str) -> RunError:
        obj = _object(data, where)
        return cls(
            type=_str(obj, "type", where),
            message=_str(obj, "message", where, default=""),
            path=_opt_str(obj, "path", where),
            line=_opt_line(obj, "line", where),
            traceback=_str(obj, "traceback", where, default=""),
        )


@dataclass(frozen=True, slots=True)
class Summary:
    """Counts over the whole run. ``cache_hits``/``cache_misses`` count guard evaluations of every compiled frame
    (``None`` when the guard-complete hook was unavailable); ``eager_fallback_calls`` estimates the calls that ran
    without compiled code after a recompile limit was hit (misses that did not lead to a compile)."""

    frames: int = 0
    compiles: int = 0
    compiles_ok: int = 0
    recompiles: int = 0
    graph_breaks: int = 0
    limit_hits: int = 0
    skipped_frames: int = 0
    total_compile_time_s: float = 0.0
    cache_hits: int | None = None
    cache_misses: int | None = None
    eager_fallback_calls: int | None = None
    resets: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "frames": self.frames,
            "compiles": self.compiles,
            "compiles_ok": self.compiles_ok,
            "recompiles": self.recompiles,
            "graph_breaks": self.graph_breaks,
            "limit_hits": self.limit_hits,
            "skipped_frames": self.skipped_frames,
            "total_compile_time_s": self.total_compile_time_s,
            "cache_hits": self.cache_hits,
            "cache_misses": self.cache_misses,
            "eager_fallback_calls": self.eager_fallback_calls,
            "resets": self.resets,
        }

    @classmethod
    def from_json(cls, data: object, where: str) -> Summary:
        obj = _object(data, where)
        return cls(
            frames=_int(obj, "frames", where, default=0),
            compiles=_int(obj, "compiles", where, default=0),
            compiles_ok=_int(obj, "compiles_ok", where, default=0),
            recompiles=_int(obj, "recompiles", where, default=0),
            graph_breaks=_int(obj, "graph_breaks", where, default=0),
            limit_hits=_int(obj, "limit_hits", where, default=0),
            skipped_frames=_int(obj, "skipped_frames", where, default=0),
            total_compile_time_s=_float(obj, "total_compile_time_s", where, default=0.0),
            cache_hits=_opt_int(obj, "cache_hits", where),
            cache_misses=_opt_int(obj, "cache_misses", where),
            eager_fallback_calls=_opt_int(obj, "eager_fallback_calls", where),
            resets=_int(obj, "resets", where, default=0),
        )


@dataclass(frozen=True, slots=True)
class RunReport:
    """The whole ``dynamo-lens.run`` v1 document.

    ``argv`` is the target's command line as the user gave it (``["train.py", "--x"]`` or ``["-m", "pytest", ...]``).
    ``exit_code`` is the script's own exit code (``None`` if the run was killed before the shim could write it).
    ``complete`` is False for a report rebuilt from the event stream of a killed run. ``sources_ok`` names each
    data source of the shim and whether it worked; ``missing`` says in words what could not be collected and why.
    ``findings`` is empty as written by the shim; the runner adds the runtime findings it derives.
    """

    torch_version: str | None
    python: str
    argv: tuple[str, ...]
    exit_code: int | None
    error: RunError | None = None
    duration_s: float | None = None
    cwd: str = ""
    ended_by: EndedBy = "unknown"
    complete: bool = True
    config: Mapping[str, ConfigValue] = field(default_factory=dict)
    frames: tuple[Frame, ...] = ()
    recompiles: tuple[Recompile, ...] = ()
    graph_breaks: tuple[GraphBreak, ...] = ()
    limit_hits: tuple[LimitHit, ...] = ()
    summary: Summary = field(default_factory=Summary)
    sources_ok: Mapping[str, bool] = field(default_factory=dict)
    missing: tuple[str, ...] = ()
    findings: tuple[Finding, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": RUN_SCHEMA,
            "version": RUN_SCHEMA_VERSION,
            "torch_version": self.torch_version,
            "python": self.python,
            "argv": list(self.argv),
            "cwd": self.cwd,
            "exit_code": self.exit_code,
            "ended_by": self.ended_by,
            "complete": self.complete,
            "error": None if self.error is None else self.error.to_json(),
            "duration_s": self.duration_s,
            "config": dict(self.config),
            "frames": [f.to_json() for f in self.frames],
            "recompiles": [r.to_json() for r in self.recompiles],
            "graph_breaks": [g.to_json() for g in self.graph_breaks],
            "limit_hits": [h.to_json() for h in self.limit_hits],
            "summary": self.summary.to_json(),
            "sources_ok": dict(self.sources_ok),
            "missing": list(self.missing),
            "findings": [f.to_json() for f in self.findings],
        }

    @classmethod
    def from_json(cls, data: object) -> RunReport:
        """Validate and load a report document; raises :class:`ReportError` naming the first bad field."""
        obj = _object(data, "report")
        if obj.get("schema") != RUN_SCHEMA:
            raise ReportError(f"not a {RUN_SCHEMA} document: schema={obj.get('schema')!r}")
        version = obj.get("version")
        if not isinstance(version, int) or isinstance(version, bool) or version < 1:
            raise ReportError(f"version: expected a positive integer, got {version!r}")
        if version > RUN_SCHEMA_VERSION:
            raise ReportError(f"unsupported {RUN_SCHEMA} version {version} (this Dynamo Lens reads up to 1)")
        where = "report"
        error = obj.get("error")
        summary = obj.get("summary")
        return cls(
            torch_version=_opt_str(obj, "torch_version", where),
            python=_str(obj, "python", where),
            argv=_str_list(obj, "argv", where),
            exit_code=_opt_int(obj, "exit_code", where),
            error=None if error is None else RunError.from_json(error, "error"),
            duration_s=_opt_float(obj, "duration_s", where),
            cwd=_str(obj, "cwd", where, default=""),
            ended_by=_choice(obj, "ended_by", where, EndedBy, default="unknown"),
            complete=_bool(obj, "complete", where, default=True),
            config=_config(obj.get("config", {})),
            frames=_list(obj, "frames", "", Frame.from_json),
            recompiles=_list(obj, "recompiles", "", Recompile.from_json),
            graph_breaks=_list(obj, "graph_breaks", "", GraphBreak.from_json),
            limit_hits=_list(obj, "limit_hits", "", LimitHit.from_json),
            summary=Summary() if summary is None else Summary.from_json(summary, "summary"),
            sources_ok=_sources_ok(obj.get("sources_ok", {})),
            missing=_str_list(obj, "missing", where),
            findings=_list(obj, "findings", "", _finding),
        )

    def frame(self, ref: FrameRef) -> Frame | None:
        """The frame a :class:`FrameRef` names (same epoch and id, else same epoch, name, path and line)."""
        for frame in self.frames:
            if frame.reset_epoch != ref.reset_epoch:
                continue
            if ref.frame_id is not None and frame.frame_id == ref.frame_id:
                return frame
            if (frame.name, frame.path, frame.line) == (ref.name, ref.path, ref.line):
                return frame
        return None


# --------------------------------------------------------------------------------------------------------------------
# Files


def load_report(path: str | os.PathLike[str]) -> RunReport:
    """Read and validate a report file; :class:`ReportError` if it is missing, not JSON or not a valid report."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ReportError(f"cannot read run report {os.fspath(path)!r}: {exc.strerror or exc}") from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReportError(f"run report {os.fspath(path)!r} is not JSON: {exc}") from exc
    return RunReport.from_json(data)


def write_report(report: RunReport, path: str | os.PathLike[str]) -> None:
    """Write a report atomically (temporary file in the same directory, then rename)."""
    target = Path(path)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(report.to_json(), indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, target)


def events_path(report_path: str | os.PathLike[str]) -> Path:
    """The shim's event stream for a report: ``OUT.json`` → ``OUT.json.events.jsonl``."""
    return Path(os.fspath(report_path) + EVENTS_SUFFIX)


def load_partial_report(report_path: str | os.PathLike[str]) -> RunReport:
    """Rebuild the report of a run that was killed before it could write one (``complete`` is False).

    The shim streams every observation to :func:`events_path` as it happens; its own report builder is pure Python
    and imports torch only when it runs a script, so the rebuilt report says exactly what the shim would have
    written at that point. Raises :class:`ReportError` when there is no event stream either.
    """
    from dynamo_lens.runtime import shim  # a script first, a module second: loaded only when needed

    stream = events_path(report_path)
    if not stream.is_file():
        raise ReportError(f"no run report and no event stream at {os.fspath(stream)!r}")
    return RunReport.from_json(shim.rebuild_report(os.fspath(stream)))


# --------------------------------------------------------------------------------------------------------------------
# Validation helpers: each reads one field and names it in the error.

_T = TypeVar("_T")
_MISSING = object()


def _describe(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _object(value: object, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ReportError(f"{where}: expected an object, got {_describe(value)}")
    return cast(Mapping[str, Any], value)


def _get(obj: Mapping[str, Any], key: str, where: str, default: object) -> object:
    if key in obj:
        return obj[key]
    if default is _MISSING:
        raise ReportError(f"{_join(where, key)}: required field is missing")
    return default


def _join(where: str, key: str) -> str:
    return f"{where}.{key}" if where and where != "report" else key


def _str(obj: Mapping[str, Any], key: str, where: str, default: object = _MISSING) -> str:
    value = _get(obj, key, where, default)
    if not isinstance(value, str):
        raise ReportError(f"{_join(where, key)}: expected a string, got {_describe(value)}")
    return value


def _opt_str(obj: Mapping[str, Any], key: str, where: str) -> str | None:
    value = obj.get(key)
    if value is not None and not isinstance(value, str):
        raise ReportError(f"{_join(where, key)}: expected a string or null, got {_describe(value)}")
    return value


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _int(obj: Mapping[str, Any], key: str, where: str, default: object = _MISSING) -> int:
    value = _get(obj, key, where, default)
    if not _is_int(value):
        raise ReportError(f"{_join(where, key)}: expected an integer, got {_describe(value)}")
    return cast(int, value)


def _opt_int(obj: Mapping[str, Any], key: str, where: str) -> int | None:
    value = obj.get(key)
    if value is not None and not _is_int(value):
        raise ReportError(f"{_join(where, key)}: expected an integer or null, got {_describe(value)}")
    return cast("int | None", value)


def _line(obj: Mapping[str, Any], key: str, where: str) -> int:
    value = _int(obj, key, where)
    if value < 1:
        raise ReportError(f"{_join(where, key)}: lines are 1-based, got {value}")
    return value


def _opt_line(obj: Mapping[str, Any], key: str, where: str) -> int | None:
    return None if obj.get(key) is None else _line(obj, key, where)


def _float(obj: Mapping[str, Any], key: str, where: str, default: object = _MISSING) -> float:
    value = _get(obj, key, where, default)
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise ReportError(f"{_join(where, key)}: expected a number, got {_describe(value)}")
    return float(value)


def _opt_float(obj: Mapping[str, Any], key: str, where: str) -> float | None:
    return None if obj.get(key) is None else _float(obj, key, where)


def _bool(obj: Mapping[str, Any], key: str, where: str, default: object = _MISSING) -> bool:
    value = _get(obj, key, where, default)
    if not isinstance(value, bool):
        raise ReportError(f"{_join(where, key)}: expected true or false, got {_describe(value)}")
    return value


def _opt_bool(obj: Mapping[str, Any], key: str, where: str) -> bool | None:
    return None if obj.get(key) is None else _bool(obj, key, where)


def _choice(obj: Mapping[str, Any], key: str, where: str, options: Any, default: object = _MISSING) -> Any:
    value = _get(obj, key, where, default)
    allowed = get_args(options)
    if value not in allowed:
        raise ReportError(f"{_join(where, key)}: expected one of {', '.join(allowed)}, got {_describe(value)}")
    return value


def _compile_id(obj: Mapping[str, Any], key: str, where: str) -> str:
    value = _str(obj, key, where)
    if not value:
        raise ReportError(f"{_join(where, key)}: empty compile id")
    return value


def _list(obj: Mapping[str, Any], key: str, where: str, item: Callable[[object, str], _T]) -> tuple[_T, ...]:
    value = obj.get(key, [])
    path = _join(where, key)
    if not isinstance(value, Sequence) or isinstance(value, str):
        raise ReportError(f"{path}: expected a list, got {_describe(value)}")
    return tuple(item(element, f"{path}[{index}]") for index, element in enumerate(value))


def _str_list(obj: Mapping[str, Any], key: str, where: str) -> tuple[str, ...]:
    def one(value: object, at: str) -> str:
        if not isinstance(value, str):
            raise ReportError(f"{at}: expected a string, got {_describe(value)}")
        return value

    return _list(obj, key, where, one)


def _config(value: object) -> dict[str, ConfigValue]:
    obj = _object(value, "config")
    for key, item in obj.items():
        if item is not None and not isinstance(item, bool | int | float | str):
            raise ReportError(f"config.{key}: expected a JSON scalar, got {_describe(item)}")
    return dict(obj)


def _sources_ok(value: object) -> dict[str, bool]:
    obj = _object(value, "sources_ok")
    for key, item in obj.items():
        if not isinstance(item, bool):
            raise ReportError(f"sources_ok.{key}: expected true or false, got {_describe(item)}")
    return dict(obj)


def _finding(value: object, where: str) -> Finding:
    obj = _object(value, where)
    try:
        return Finding.from_json(obj)
    except (KeyError, TypeError, ValueError) as exc:
        raise ReportError(f"{where}: invalid finding: {exc}") from exc
