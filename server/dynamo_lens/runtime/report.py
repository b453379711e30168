"""The run report (``dynamo-lens.run`` v2): what one instrumented run of a user's script observed.

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
* A multi-process run (``torchrun``, ``torch.multiprocessing.spawn``) has one report per process: the run's own
  (the launcher, or the program that spawned the workers) holds the others in ``ranks``, each a whole report of its
  own with its ``process`` identity (v2; a v1 document reads as a run without ``ranks``).
* A killed run leaves only the shim's event stream (``<report>.events.jsonl``, see :func:`events_path`);
  :func:`load_partial_report` rebuilds a report from it with ``complete = False``.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar, Union, cast, get_args, get_origin, get_type_hints

from dynamo_lens.model import Finding, plural

RUN_SCHEMA = "dynamo-lens.run"
RUN_SCHEMA_VERSION = 2
EVENTS_SUFFIX = ".events.jsonl"

CompileStatus = Literal["ok", "skipped", "recompile_limit", "failed"]
EndedBy = Literal["returned", "sys_exit", "exception", "keyboard_interrupt", "signal", "unknown"]
GuardsFrom = Literal["cache_entry", "trace", "none"]
AttributedTo = Literal["guard", "call", "frame", "none"]
LimitKind = Literal["recompile_limit", "accumulated_recompile_limit"]
ConfigValue = bool | int | float | str | None


class ReportError(ValueError):
    """The document is not a valid ``dynamo-lens.run`` report; the message names the field."""


_R = TypeVar("_R", bound="_Record")


class _Record:
    """JSON for the frozen dataclasses below, driven by their field types (see :func:`_decode`): the JSON keys are
    the field names, absent optional fields take their defaults, and every value is checked against its type."""

    __slots__ = ()

    def to_json(self) -> dict[str, Any]:
        return _encode_record(self)

    @classmethod
    def from_json(cls: type[_R], data: object, where: str = "") -> _R:
        return _decode_record(cls, data, where)


# --------------------------------------------------------------------------------------------------------------------
# The data


@dataclass(frozen=True, slots=True)
class StackFrame(_Record):
    """One frame of a Python stack (absolute ``path``, 1-based ``line``, function ``name``)."""

    path: str
    line: int
    name: str


@dataclass(frozen=True, slots=True)
class FrameRef(_Record):
    """Names a compiled frame from elsewhere in the report (a recompile, a graph break, a limit hit)."""

    name: str
    path: str
    line: int
    frame_id: int | None = None
    reset_epoch: int = 0


@dataclass(frozen=True, slots=True)
class Guard(_Record):
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


@dataclass(frozen=True, slots=True)
class GuardCost(_Record):
    """What checking a cache entry's guards cost per call, in steady state (``dynamo-lens run --guard-cost``).

    Measured as PyTorch documents: ``torch.profiler``'s ``TorchDynamo Cache Lookup`` event, paired with the
    ``Torch-Compiled Region`` of the entry it chose; ``lookup_us`` and ``call_us`` are medians over the ``calls``
    that hit this entry (the lookup includes the entries tried before it), ``call_us`` the compiled call itself.
    Measured under the profiler, which slows the operators in ``call_us`` more than the guard checks.
    """

    calls: int
    lookup_us: float
    call_us: float

    @property
    def share(self) -> float:
        """The guard checks' part of a call: lookup / (lookup + call)."""
        total = self.lookup_us + self.call_us
        return self.lookup_us / total if total > 0 else 0.0


@dataclass(frozen=True, slots=True)
class CacheEntry(_Record):
    """One compile attempt of a frame and, when it produced code, the guards of the cache entry it installed.

    ``call_site`` is the user's call that made Dynamo compile (the last user frame of ``call_stack``).
    ``fail_count`` is how often the live entry's guards rejected a call (``None`` when unknown).
    ``guards_omitted`` counts guards left out because the entry exceeded the shim's per-entry cap.
    ``compiled_at`` is the user's line that asked for the compile (``torch.compile(...)``, ``.compile()``, the
    decorator); ``guard_cost`` is set in runs that measured it.
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
    compiled_at: StackFrame | None = None
    guard_cost: GuardCost | None = None

    @property
    def produced_code(self) -> bool:
        return self.status == "ok"


@dataclass(frozen=True, slots=True)
class Frame(_Record):
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
    compiled_calls: int | None = None
    """Calls that ran this frame's compiled code: the compiles that produced an entry (their call runs it) and the
    cache hits attributed to the frame; None where the run could not count calls per frame."""

    @property
    def ref(self) -> FrameRef:
        return FrameRef(self.name, self.path, self.line, self.frame_id, self.reset_epoch)

    @property
    def compiles_ok(self) -> int:
        return sum(1 for e in self.cache_entries if e.produced_code)

    @property
    def produced_ids(self) -> frozenset[str]:
        """The compile ids of the entries that hold code: a recompile with one of them made an entry, one without
        was refused (at the recompile limit) or failed."""
        return frozenset(e.compile_id for e in self.cache_entries if e.produced_code)

    @property
    def skipped(self) -> bool:
        """True when every attempt was skipped: Dynamo runs this frame without compiled code."""
        return bool(self.cache_entries) and all(e.status == "skipped" for e in self.cache_entries)

    @property
    def skipped_because(self) -> str | None:
        """For a skipped frame that had something to compile, why Dynamo gave up on it (the first line of its
        reason: a graph break inside a loop, which Dynamo cannot resume from); None otherwise (nothing to compile)."""
        if not self.skipped:
            return None
        reason = next((e.fail_reason for e in self.cache_entries if e.fail_type and e.fail_reason), None)
        return reason.strip().splitlines()[0] if reason and reason.strip() else None


@dataclass(frozen=True, slots=True)
class FailedGuard(_Record):
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


@dataclass(frozen=True, slots=True)
class Recompile(_Record):
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


@dataclass(frozen=True, slots=True)
class GraphBreak(_Record):
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


@dataclass(frozen=True, slots=True)
class LimitHit(_Record):
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


@dataclass(frozen=True, slots=True)
class RunError(_Record):
    """The exception that ended the user's script: type, message and the innermost user frame of its traceback."""

    type: str
    message: str
    path: str | None = None
    line: int | None = None
    traceback: str = ""


@dataclass(frozen=True, slots=True)
class ShownWarning(_Record):
    """A Python warning shown during the run, each distinct one once: what torch (or a library, or the program) said
    that the run's output scrolled past. ``path``/``line`` are the line the warning names: for torch's warnings
    from C++ (``torch.tensor(t)`` on a tensor) the user's call into torch, for ``warnings.warn`` in torch's Python
    code a line inside torch."""

    category: str
    message: str
    path: str | None = None
    line: int | None = None


@dataclass(frozen=True, slots=True)
class SilentHook(_Record):
    """A forward hook (``hook``: ``forward_hook`` or ``forward_pre_hook``) registered at ``path``/``line`` on a
    ``module`` inside the compiled ``root`` after the compile, that never ran while the compiled module ran
    ``root_calls`` times: Dynamo does not guard the hooks of submodules, so compiled code skips hooks added later."""

    hook: str
    module: str
    root: str
    root_calls: int
    path: str | None = None
    line: int | None = None


@dataclass(frozen=True, slots=True)
class Process(_Record):
    """The process a report is about, and its place in a distributed job: ``rank``, ``local_rank`` and
    ``world_size`` from the environment ``torchrun`` sets, else from the process group it initialised (``None``
    when neither said)."""

    pid: int
    rank: int | None = None
    local_rank: int | None = None
    world_size: int | None = None


@dataclass(frozen=True, slots=True)
class Summary(_Record):
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
    unattributed_calls: int | None = None
    """Guard checks of calls the shim could not attribute to a frame (a caller Dynamo skipped, another hook in
    between): where this is not 0, the frames' counts of calls are lower bounds. None where calls were not counted
    per frame."""


@dataclass(frozen=True, slots=True)
class Counts:
    """What a run, or one frame of it, compiled: the one set of numbers every view shows (the CLI's table and
    summary line, lenses, inlay hints, the Compiled Frames view, the status bar, DL501 and DL502). The report's
    ``summary`` keeps Dynamo's raw tallies (``compiles`` counts refused attempts too, ``recompiles`` every recompile
    event); these are what users read as "compiled N times"."""

    compiles: int = 0
    """Compiles that produced a cache entry."""
    recompiles: int = 0
    """Of those, the ones made because the guards of the frame's earlier entries failed."""
    refused: int = 0
    """Compiles refused at the recompile limit: the calls that needed them ran eagerly."""
    graph_breaks: int = 0
    limit_hits: int = 0
    eager_calls: int | None = None
    """Calls that ran eagerly because no entry matched and the limit refused a new one (an estimate from the guard
    misses at the limit's call site; None where the shim could not count calls)."""
    compiled_calls: int | None = None
    """Calls that ran the frame's compiled code (:attr:`Frame.compiled_calls`); None for a whole run (a call that
    graph-breaks runs a frame and its resume functions: frames' runs are no count of calls) and where the shim could
    not count them."""
    calls_at_least: bool = False
    """The counts of calls are lower bounds: some calls of the run could not be attributed to a frame."""

    def __add__(self, other: Counts) -> Counts:
        """The counts of two frames together (a compiled place with several frames)."""
        eager = (self.eager_calls or 0) + (other.eager_calls or 0)
        compiled = None
        if self.compiled_calls is not None or other.compiled_calls is not None:
            compiled = (self.compiled_calls or 0) + (other.compiled_calls or 0)
        return Counts(
            compiles=self.compiles + other.compiles,
            recompiles=self.recompiles + other.recompiles,
            refused=self.refused + other.refused,
            graph_breaks=self.graph_breaks + other.graph_breaks,
            limit_hits=self.limit_hits + other.limit_hits,
            eager_calls=eager or None,
            compiled_calls=compiled,
            calls_at_least=self.calls_at_least or other.calls_at_least,
        )

    def describe(self) -> str:
        """``16 compiles · 14 recompiles · limit hit · 1 graph break · 40 calls ran compiled code, 4 eagerly``."""
        parts = [plural(self.compiles, "compile"), plural(self.recompiles, "recompile")]
        if self.limit_hits:
            parts.append("limit hit")
        parts.append(plural(self.graph_breaks, "graph break"))
        calls = self.calls_text()
        if calls:
            parts.append(calls)
        return " · ".join(parts)

    def calls_text(self) -> str:
        """``40 calls ran compiled code, 4 eagerly`` (either half alone where the other is not known or zero), or
        ``""`` when neither was counted."""
        ran: list[str] = []
        least = "at least " if self.calls_at_least else ""
        if self.compiled_calls is not None:
            ran.append(f"{least}{plural(self.compiled_calls, 'call')} ran compiled code")
        if self.eager_calls:
            eager = f"{self.eager_calls} eagerly" if ran else f"{plural(self.eager_calls, 'call')} ran eagerly"
            ran.append(f"{least}{eager}")
        return ", ".join(ran)


@dataclass(frozen=True, slots=True)
class RunReport(_Record):
    """The whole ``dynamo-lens.run`` document.

    ``argv`` is the target's command line as the user gave it (``["train.py", "--x"]`` or ``["-m", "pytest", ...]``).
    ``exit_code`` is the script's own exit code (``None`` if the run was killed before the shim could write it).
    ``complete`` is False for a report rebuilt from the event stream of a killed run. ``sources_ok`` names each
    data source of the shim and whether it worked; ``missing`` says in words what could not be collected and why.
    ``findings`` is empty as written by the shim; the runner adds the runtime findings it derives. ``ranks`` holds
    the reports of the run's other processes (:class:`Process` says which rank each is), ordered by rank.
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
    warnings: tuple[ShownWarning, ...] = ()
    silent_hooks: tuple[SilentHook, ...] = ()
    summary: Summary = field(default_factory=Summary)
    sources_ok: Mapping[str, bool] = field(default_factory=dict)
    missing: tuple[str, ...] = ()
    findings: tuple[Finding, ...] = ()
    process: Process | None = None
    ranks: tuple[RunReport, ...] = ()

    @property
    def rank_label(self) -> str:
        """How messages name this process: ``rank 1``, else ``process 4242``."""
        if self.process is None:
            return "the main process"
        if self.process.rank is not None:
            return f"rank {self.process.rank}"
        return f"process {self.process.pid}"

    def to_json(self) -> dict[str, Any]:
        return {"schema": RUN_SCHEMA, "version": RUN_SCHEMA_VERSION, **_encode_record(self)}

    @classmethod
    def from_json(cls, data: object, where: str = "") -> RunReport:
        """Validate and load a report document; raises :class:`ReportError` naming the first bad field."""
        if not isinstance(data, Mapping):
            raise ReportError(f"report: expected an object, got {_describe(data)}")
        obj = cast(Mapping[str, Any], data)
        if obj.get("schema") != RUN_SCHEMA:
            raise ReportError(f"not a {RUN_SCHEMA} document: schema={obj.get('schema')!r}")
        version = obj.get("version")
        if not _is_int(version) or cast(int, version) < 1:
            raise ReportError(f"version: expected a positive integer, got {version!r}")
        if cast(int, version) > RUN_SCHEMA_VERSION:
            raise ReportError(
                f"unsupported {RUN_SCHEMA} version {version} (this Dynamo Lens reads up to {RUN_SCHEMA_VERSION})"
            )
        return _decode_record(cls, obj, where)

    def counts(self, frame: Frame | None = None) -> Counts:
        """The :class:`Counts` of one frame, or (``None``) of the whole run."""
        frames = self.frames if frame is None else (frame,)
        recompiles = 0
        for recompile in self.recompiles:
            found = self.frame(recompile.frame)
            if found is not None and (frame is None or found is frame) and recompile.compile_id in found.produced_ids:
                recompiles += 1
        hits = [h for h in self.limit_hits if frame is None or self._of(h.frame, frame)]
        eager = [h.eager_calls for h in hits]
        return Counts(
            compiles=sum(f.compiles_ok for f in frames),
            recompiles=recompiles,
            refused=sum(1 for f in frames for e in f.cache_entries if e.status == "recompile_limit"),
            graph_breaks=sum(1 for g in self.graph_breaks if frame is None or self._of(g.frame, frame)),
            limit_hits=len(hits),
            eager_calls=self.summary.eager_fallback_calls if frame is None else sum(e for e in eager if e) or None,
            compiled_calls=frame.compiled_calls if frame is not None else None,
            calls_at_least=frame is not None and bool(self.summary.unattributed_calls),
        )

    def _of(self, ref: FrameRef | None, frame: Frame) -> bool:
        return ref is not None and self.frame(ref) is frame

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


_COMPACT = (",", ":")
"""Reports are written without indentation: a few MB for a big run, and ``json.dumps`` is several times faster
without it (pretty-print one with ``python -m json.tool``)."""


def write_report(report: RunReport, path: str | os.PathLike[str]) -> None:
    """Write a report atomically (temporary file in the same directory, then rename)."""
    target = Path(path)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(report.to_json(), separators=_COMPACT) + "\n", encoding="utf-8")
    os.replace(tmp, target)


def map_locations(node: Any, change: Callable[[dict[str, Any]], dict[str, Any]]) -> Any:
    """A copy of report JSON ``node`` with every location (an object with a string ``path``: a frame, a guard, a
    recompile's culprit, a finding, ...) passed through ``change`` (a notebook kernel's cells named, or moved into
    the notebook's module)."""
    if isinstance(node, list):
        return [map_locations(item, change) for item in node]
    if not isinstance(node, dict):
        return node
    copied = {key: map_locations(value, change) for key, value in node.items()}
    return change(copied) if isinstance(copied.get("path"), str) else copied


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
# The codec: one encoder and one validating decoder for every record, driven by the dataclass field types.

_MISSING = object()


def _encode_record(record: object) -> dict[str, Any]:
    return {name: _encode(getattr(record, name)) for name in _field_names(cast(Any, type(record)))}


@functools.cache
def _field_names(cls: Any) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cast(Any, cls)))


def _encode(value: object) -> Any:
    if isinstance(value, Finding):
        return value.to_json()
    if isinstance(value, _Record):
        return value.to_json()  # a rank's report nested in the run's is a whole document of its own
    if isinstance(value, tuple):
        return [_encode(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _encode(v) for k, v in value.items()}
    return value


# Decoding checks every value against its field's type. The checks are built once per type (:func:`_decoder`), and
# a bad value's place in the document (``frames[0].line``) is put together only when there is one to report.

_Decoder = Callable[[object], Any]


class _Invalid(Exception):
    """A value that does not fit its type; ``steps`` is its path, innermost first (``.line``, ``[0]``, ``.frames``)."""

    def __init__(self, problem: str, *steps: str) -> None:
        super().__init__(problem)
        self.problem = problem
        self.steps = list(steps)

    def located(self, where: str) -> ReportError:
        path = where + "".join(reversed(self.steps))
        return ReportError(f"{path.removeprefix('.') or 'report'}: {self.problem}")


def _decode_record(cls: type[_R], data: object, where: str) -> _R:
    try:
        return cast(_R, _decoder(cast(Any, cls))(data))
    except _Invalid as exc:
        raise exc.located(where) from None


@functools.cache
def _decoder(hint: Any, name: str = "", nullable: bool = False) -> _Decoder:
    """The check and conversion of a value of type ``hint`` (lists to tuples, nested objects to records); ``name``
    is the field's, for the checks that depend on it (1-based ``line``, non-empty ``compile_id``)."""
    origin, args = get_origin(hint), get_args(hint)
    if origin in (Union, types.UnionType):
        members = [a for a in args if a is not type(None)]
        decode = _decoder(members[0], name, True) if len(members) == 1 else _json_scalar
        return _optional(decode) if len(members) < len(args) else decode
    if origin is Literal:
        return _literal(args)
    if origin is tuple:
        return _tuple_of(_decoder(args[0], name))
    if origin in (Mapping, dict):
        return _mapping_of(_decoder(args[1]))
    if hint is Finding:
        return _finding
    if isinstance(hint, type) and issubclass(hint, _Record):
        return _record(hint)
    return _scalar(hint, name, nullable)


def _optional(decode: _Decoder) -> _Decoder:
    def optional(value: object) -> Any:
        return None if value is None else decode(value)

    return optional


def _json_scalar(value: object) -> Any:
    if isinstance(value, str | int | float | bool):  # the only wider union is a JSON scalar (config values)
        return value
    raise _Invalid(f"expected a JSON scalar, got {_describe(value)}")


def _literal(allowed: tuple[Any, ...]) -> _Decoder:
    def literal(value: object) -> Any:
        if value not in allowed:
            raise _Invalid(f"expected one of {', '.join(map(str, allowed))}, got {_describe(value)}")
        return value

    return literal


def _tuple_of(decode: _Decoder) -> _Decoder:
    def items(value: object) -> tuple[Any, ...]:
        if not isinstance(value, list | tuple):
            raise _Invalid(f"expected a list, got {_describe(value)}")
        decoded = []
        for index, item in enumerate(value):
            try:
                decoded.append(decode(item))
            except _Invalid as exc:
                exc.steps.append(f"[{index}]")
                raise
        return tuple(decoded)

    return items


def _mapping_of(decode: _Decoder) -> _Decoder:
    def mapping(value: object) -> dict[str, Any]:
        decoded: dict[str, Any] = {}
        for key, item in _object(value).items():
            try:
                decoded[key] = decode(item)
            except _Invalid as exc:
                exc.steps.append(f".{key}")
                raise
        return decoded

    return mapping


def _finding(value: object) -> Finding:
    try:
        return Finding.from_json(_object(value))
    except (KeyError, TypeError, ValueError) as exc:
        raise _Invalid(f"invalid finding: {exc}") from exc


def _record(cls: type[_Record]) -> _Decoder:
    plan: tuple[tuple[str, bool, bool, _Decoder], ...] | None = None  # on first use: a record may hold its own kind

    def record(value: object) -> _Record:
        nonlocal plan
        if plan is None:
            plan = _fields_plan(cls)  # whole before it is shared: reports are decoded on several threads
        obj = _object(value)
        values: dict[str, Any] = {}
        for name, has_default, nullable, decode in plan:
            item = obj.get(name, _MISSING)
            if item is _MISSING or (item is None and has_default and not nullable):
                if has_default:
                    continue
                if not nullable:
                    raise _Invalid("required field is missing", f".{name}")
                item = None
            try:
                values[name] = decode(item)
            except _Invalid as exc:
                exc.steps.append(f".{name}")
                raise
        return cls(**values)

    return record


def _fields_plan(cls: type[_Record]) -> tuple[tuple[str, bool, bool, _Decoder], ...]:
    """Per field: its name, whether it has a default, whether it may be null, and its decoder."""
    hints = get_type_hints(cls)
    plan = []
    for spec in dataclasses.fields(cast(Any, cls)):
        has_default = spec.default is not dataclasses.MISSING or spec.default_factory is not dataclasses.MISSING
        hint = hints[spec.name]
        plan.append((spec.name, has_default, _nullable(hint), _decoder(hint, spec.name)))
    return tuple(plan)


def _nullable(hint: Any) -> bool:
    return get_origin(hint) in (Union, types.UnionType) and type(None) in get_args(hint)


def _scalar(hint: Any, name: str, nullable: bool) -> _Decoder:
    expected = _EXPECTED.get(hint, "an object") + (" or null" if nullable else "")

    def scalar(value: object) -> Any:
        if hint is bool and isinstance(value, bool):
            return value
        if hint is int and _is_int(value):
            if name == "line" and cast(int, value) < 1:
                raise _Invalid(f"lines are 1-based, got {value}")
            return value
        if hint is float and isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        if hint is str and isinstance(value, str):
            if name == "compile_id" and not value:
                raise _Invalid("empty compile id")
            return value
        raise _Invalid(f"expected {expected}, got {_describe(value)}")

    return scalar


_EXPECTED = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}


def _describe(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _object(value: object) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise _Invalid(f"expected an object, got {_describe(value)}")
    return cast(Mapping[str, Any], value)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
