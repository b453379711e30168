"""The scan pipeline around the static analyzer: files → per-file summaries (cached, in parallel) → findings.

``check`` and the language server share it:

* :func:`scan` is ``dynamo-lens check``: discover files, hash their contents, reuse the cached linked result when
  the set of files is unchanged, else run the per-file pass (cached per file, in worker processes when there are
  many) and link; then apply suppression comments and the settings (select/ignore/severity).
* :func:`analyse_files` builds the per-file results (from the cache when unchanged); the
  language server keeps them, replaces an open document's entry with :func:`analyse_text` of its in-memory text on
  every change, and calls :func:`link_files` over the whole mapping.

Paths given to the analyzer are absolute; renderers make them relative for display. Nothing here raises on bad
input: unreadable, binary, undecodable and unparsable files become :class:`FileProblem` messages.
"""

from __future__ import annotations

import contextlib
import gc
import math
import multiprocessing
import os
import pickle
import platform
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from dynamo_lens import notebooks, static, torch_facts
from dynamo_lens.cache import AnalysisCache, dumps
from dynamo_lens.config import Settings
from dynamo_lens.discovery import discover
from dynamo_lens.model import Finding
from dynamo_lens.notebooks import Cell
from dynamo_lens.scan_sources import FileProblem, decode_notebook, decode_source, problem_in_cell, read_bytes
from dynamo_lens.static.summary import FileSummary
from dynamo_lens.suppression import Suppressions, find_suppressions, unsuppressed

if TYPE_CHECKING:
    from dynamo_lens.static.incremental import FileSummarizer

PARALLEL_MIN_FILES = 48
"""Below this many files to analyse, worker start-up costs more than it saves."""
CHUNKS_PER_WORKER = 8
"""Work is handed out in chunks: enough of them to balance uneven file sizes, few enough to keep overhead low."""


@dataclass(frozen=True, slots=True)
class FileAnalysis:
    """The per-file result that is cached and linked: the analyzer's summary and the file's suppression comments."""

    summary: FileSummary
    suppressions: Suppressions
    cells: tuple[Cell, ...] = ()
    """For a notebook, where its code cells lie in the module the summary is of (positions map back through it)."""

    @property
    def path(self) -> str:
        return self.summary.path


@dataclass(frozen=True, slots=True)
class Workspace:
    """Per-file results by absolute path, plus the files that could not be analysed at all."""

    files: Mapping[str, FileAnalysis]
    problems: tuple[FileProblem, ...] = ()
    cache_hits: int = 0


@dataclass(frozen=True, slots=True)
class LinkedWorkspace:
    """What ``link`` made of one exact set of files, before settings: cached whole, keyed by every path and content."""

    findings: tuple[Finding, ...]
    suppressions: Mapping[str, Suppressions]
    problems: tuple[FileProblem, ...]
    """Undecodable files and syntax errors among those files."""
    cells: Mapping[str, tuple[Cell, ...]] = field(default_factory=dict)
    """The notebooks among the files, with their code cells: findings leave :func:`scan` in cell positions."""


@dataclass(frozen=True, slots=True)
class ScanResult:
    findings: tuple[Finding, ...]
    problems: tuple[FileProblem, ...]
    """Per-file messages: unreadable, binary or undecodable files, syntax errors."""
    missing: tuple[str, ...] = ()
    """Path arguments that do not exist (a usage error)."""
    files: int = 0
    cache_hits: int = 0
    internal_errors: tuple[str, ...] = ()
    """Analyzer failures (bugs): reported, and ``check`` exits 2."""


def scan(paths: Sequence[str], settings: Settings, cache: AnalysisCache | None) -> ScanResult:
    """``dynamo-lens check``: every finding under ``paths`` after settings and suppressions.

    With a cache, the linked result of the exact set of files (every path and content) is cached as a whole, so an
    unchanged tree is answered without loading a single per-file summary.
    """
    with _collector_paused():
        return _scan(paths, settings, cache)


def _scan(paths: Sequence[str], settings: Settings, cache: AnalysisCache | None) -> ScanResult:
    discovery = discover(paths, settings)
    walk_problems = tuple(FileProblem(path, f"cannot list directory: {msg}") for path, msg in discovery.problems)
    keys: dict[str, str] = {}
    unreadable: list[FileProblem] = []
    linked: object = None
    if cache is not None:
        keys, unreadable = _content_keys(discovery.files, cache)
        linked = cache.load(cache.combined_key(keys.values()))
    internal: tuple[str, ...] = ()
    if isinstance(linked, LinkedWorkspace):
        hits = len(keys)
        problems = tuple(unreadable) + linked.problems
    else:
        workspace = _analyse(discovery.files, cache, keys)
        hits = workspace.cache_hits
        findings, internal = _link_raw(workspace.files.values())
        problems = workspace.problems + _summary_problems(workspace.files.values())
        linked = LinkedWorkspace(
            findings=tuple(findings),
            suppressions={a.path: a.suppressions for a in workspace.files.values() if a.suppressions},
            problems=tuple(p for p in problems if p.path in keys),  # unreadable files are not part of the key
            cells={a.path: a.cells for a in workspace.files.values() if a.cells},
        )
        if cache is not None and not internal:
            cache.store(cache.combined_key(keys.values()), linked)
    findings = _in_cells(_finish(linked.findings, linked.suppressions, settings), linked.cells)
    problems = tuple(problem_in_cell(p, linked.cells[p.path]) if p.path in linked.cells else p for p in problems)
    return ScanResult(
        findings=tuple(sorted(findings, key=Finding.sort_key)),
        problems=walk_problems + tuple(sorted(problems, key=lambda p: p.path)),
        missing=discovery.missing,
        files=len(discovery.files),
        cache_hits=hits,
        internal_errors=internal,
    )


def analyse_files(paths: Sequence[str], cache: AnalysisCache | None) -> Workspace:
    """The per-file pass over ``paths`` (absolute): cached results where the content is unchanged, else analysed."""
    with _collector_paused():
        keys = _content_keys(paths, cache)[0] if cache is not None else {}
        return _analyse(paths, cache, keys)


def analyse_text(path: str, text: str, summarizer: FileSummarizer | None = None) -> FileAnalysis | FileProblem:
    """The per-file pass over in-memory ``text`` (an open editor document), never cached; ``summarizer`` (the
    document's, for successive versions) reuses what the previous version shares."""
    try:
        with _collector_paused():
            summary = summarizer.summarize(text) if summarizer is not None else static.summarize(path, text)
    except Exception as exc:  # summarize must never raise; if it does, the file is reported, not the run aborted
        return FileProblem(
            path, f"internal error in the analyzer: {type(exc).__name__}: {exc}", reason="analyzer error"
        )
    return FileAnalysis(summary, find_suppressions(text))


def link_files(
    analyses: Iterable[FileAnalysis], settings: Settings, linker: static.Linker | None = None
) -> tuple[list[Finding], tuple[str, ...]]:
    """The workspace pass over per-file results, then suppression comments and ``settings`` (``linker``: the
    editor's, for successive versions of the workspace).

    Returns the findings (unsorted) and internal errors (a failing check is reported, never raised).
    """
    analyses = list(analyses)
    findings, internal = _link_raw(analyses, linker)
    suppressions = {a.path: a.suppressions for a in analyses if a.suppressions}
    return _finish(findings, suppressions, settings), internal


def _link_raw(
    analyses: Iterable[FileAnalysis], linker: static.Linker | None = None
) -> tuple[list[Finding], tuple[str, ...]]:
    try:
        return static.link([a.summary for a in analyses], linker), ()
    except Exception as exc:  # a bug in a check must not turn into a traceback for the user
        return [], (f"internal error while linking: {type(exc).__name__}: {exc}",)


def _finish(findings: Iterable[Finding], suppressions: Mapping[str, Suppressions], settings: Settings) -> list[Finding]:
    return settings.apply(unsuppressed(findings, suppressions))


def _in_cells(findings: Iterable[Finding], cells: Mapping[str, tuple[Cell, ...]]) -> list[Finding]:
    """``findings`` with the positions in notebooks made cell-relative (the analyzer sees each as one module)."""
    return [notebooks.locate(f, cells[f.path]) if f.path in cells else f for f in findings]


def _content_keys(paths: Sequence[str], cache: AnalysisCache) -> tuple[dict[str, str], list[FileProblem]]:
    """The cache key of every readable file (path + content), and the files that cannot be read."""
    keys: dict[str, str] = {}
    unreadable: list[FileProblem] = []
    for path in paths:
        data = read_bytes(path)
        if isinstance(data, FileProblem):
            unreadable.append(data)
        else:
            keys[path] = cache.key(path, data)
    return keys, unreadable


def _analyse(paths: Sequence[str], cache: AnalysisCache | None, keys: Mapping[str, str]) -> Workspace:
    """Per-file results from the cache (by ``keys``) where present, the others analysed (and cached)."""
    results: dict[str, FileAnalysis] = {}
    misses: list[str] = []
    for path in paths:
        key = keys.get(path)
        cached = cache.load(key) if cache is not None and key is not None else None
        if isinstance(cached, FileAnalysis) and cached.path == path:
            results[path] = cached
        else:
            misses.append(path)  # unreadable files too: analysing them again reports why
    hits = len(results)
    problems: list[FileProblem] = []
    for outcome in _analyse_misses(misses, cache):
        if isinstance(outcome, FileProblem):
            problems.append(outcome)
        else:
            results[outcome.path] = outcome
    return Workspace(results, tuple(sorted(problems, key=lambda p: p.path)), cache_hits=hits)


def _summary_problems(analyses: Iterable[FileAnalysis]) -> tuple[FileProblem, ...]:
    return tuple(
        _summary_problem(a.path, a.summary.error) for a in sorted(analyses, key=lambda a: a.path) if a.summary.error
    )


def _summary_problem(path: str, error: str) -> FileProblem:
    """A file the analyzer could not parse: a syntax error (the lines above it are analysed), or source too deeply
    nested or with a NUL byte (nothing is)."""
    if error.startswith("SyntaxError"):
        return FileProblem(path, error, reason="syntax error", partial=True)
    return FileProblem(path, error, reason="not parsable")


def _analyse_misses(paths: Sequence[str], cache: AnalysisCache | None) -> list[FileAnalysis | FileProblem]:
    cache_dir = cache.directory if cache is not None else None
    workers = min(os.cpu_count() or 1, max(1, len(paths) // (PARALLEL_MIN_FILES // 2)))
    if len(paths) < PARALLEL_MIN_FILES or workers < 2:
        return [_store(cache, path, *_analyse_path(path)) for path in paths]
    size = math.ceil(len(paths) / (workers * CHUNKS_PER_WORKER))
    chunks = [paths[i : i + size] for i in range(0, len(paths), size)]
    outcomes: list[FileAnalysis | FileProblem] = []
    try:
        with ProcessPoolExecutor(
            max_workers=workers,
            mp_context=_process_context(),
            initializer=torch_facts.use,  # a forkserver worker starts afresh: describe the same torch
            initargs=(torch_facts.current(),),
        ) as pool:
            for blobs in pool.map(_analyse_chunk, chunks, [cache_dir] * len(chunks)):
                outcomes.extend(pickle.loads(blob) for blob in blobs)
    except BrokenProcessPool:  # a worker died (out of memory, killed): finish the remaining files here
        done = {outcome.path for outcome in outcomes}
        outcomes.extend(_store(cache, path, *_analyse_path(path)) for path in paths if path not in done)
    return outcomes


def _analyse_chunk(paths: Sequence[str], cache_dir: Path | None) -> list[bytes]:
    """A worker process's unit of work: analyse files, cache them, return them pickled.

    Each result is pickled once, here, for both the cache entry and the trip back to the parent process (pickling
    a summary costs about as much as a tenth of analysing it).
    """
    cache = AnalysisCache(cache_dir) if cache_dir is not None else None
    blobs: list[bytes] = []
    for path in paths:  # the collector is paused per file (analyse_text), not per chunk: summarize leaves cycles
        data, outcome = _analyse_path(path)
        blob = dumps(outcome)
        if cache is not None and data is not None and isinstance(outcome, FileAnalysis):
            cache.store_pickled(cache.key(path, data), blob)
        blobs.append(blob)
    return blobs


def _analyse_path(path: str) -> tuple[bytes | None, FileAnalysis | FileProblem]:
    """Read, decode and analyse one file: its content (None when unreadable) and the outcome."""
    data = read_bytes(path)
    if isinstance(data, FileProblem):
        return None, data
    if notebooks.is_notebook(path):
        module = decode_notebook(path, data)
        if isinstance(module, FileProblem):
            return data, module
        outcome = analyse_text(path, module.text)
        return data, replace(outcome, cells=module.cells) if isinstance(outcome, FileAnalysis) else outcome
    text = decode_source(path, data)
    return data, text if isinstance(text, FileProblem) else analyse_text(path, text)


def _store(
    cache: AnalysisCache | None, path: str, data: bytes | None, outcome: FileAnalysis | FileProblem
) -> FileAnalysis | FileProblem:
    if cache is not None and data is not None and isinstance(outcome, FileAnalysis):
        cache.store(cache.key(path, data), outcome)
    return outcome


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector: ``ast.parse`` and unpickling summaries allocate millions of objects, none
    of them in cycles, and the collections they trigger cost a lot (measured: 50,000 lines parse in 1.3 s instead
    of 3.0 s; unpickling summaries 30 % faster)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _process_context() -> multiprocessing.context.BaseContext:
    """``fork`` where it is cheap and safe (Linux, single-threaded caller: the CLI); ``forkserver`` on Linux when
    the caller has threads (the language server: forking a threaded process can deadlock); else the default."""
    if platform.system() == "Linux":
        return multiprocessing.get_context("fork" if threading.active_count() == 1 else "forkserver")
    return multiprocessing.get_context()
