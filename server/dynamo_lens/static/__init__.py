"""Static analysis: source text in, findings out. Never imports torch.

Two passes, so that files can be summarised in parallel processes and cached by content hash:

* :func:`summarize` (per file, pure, never raises): one ``ast.parse`` and one walk record the file's imports and
  aliases, classes, functions, compile sites and each check's candidates in a picklable :class:`FileSummary`.
* :func:`link` (whole workspace, cheap): builds the semantic model (``static/semantic``: names across files,
  ``nn.Module`` subclasses, what each compile site compiles and reaches) and lets every check judge its
  candidates. Severity is the rule's when a compile site reaches the code, ``hint`` otherwise.

Suppression comments, settings, walking directories and caching live outside this package (``dynamo_lens.scan``).
"""

from __future__ import annotations

import ast
import gc
import logging
import threading
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from functools import partial
from typing import Any

from dynamo_lens import torch_facts
from dynamo_lens.codes import Check, all_checks, checks_by_code
from dynamo_lens.model import Finding
from dynamo_lens.static.context import FileContext
from dynamo_lens.static.positions import LineIndex, split_lines
from dynamo_lens.static.semantic.compile_sites import find_compile_sites
from dynamo_lens.static.semantic.index import WorkspaceIndex
from dynamo_lens.static.semantic.workspace import referenced_names
from dynamo_lens.static.summary import Candidate, FileSummary
from dynamo_lens.static.walk import Walker

__all__ = ["FileSummary", "Linker", "WorkspaceIndex", "link", "might_matter", "summarize"]

_log = logging.getLogger(__name__)

_RELEVANT_WORDS = ("import", "def", "class", "lambda", "compile", "self")


def might_matter(text: str) -> bool:
    """Cheap text prefilter: False only for files that can hold nothing any check or the index uses.

    A file matters if it can define a callable or class (``def``, ``class``, ``lambda``), bind or re-export a name
    another file imports (``import``), compile something (``compile``) or touch module state (``self``). Files with
    none of these words (data tables, constants, empty ``__init__.py``) are skipped without parsing.
    """
    return any(word in text for word in _RELEVANT_WORDS)


def summarize(path: str, text: str) -> FileSummary:
    """The per-file facts of ``text`` (the content of ``path``). Never raises.

    A syntax error gives a summary with ``error`` set that keeps what the lines above the error define (the
    editor calls this while the user types).
    """
    text = text.removeprefix("\ufeff")  # a byte-order mark: invisible to editors, fatal to ast.parse
    if not might_matter(text):
        return FileSummary(path, skipped=True)
    # The walk allocates many small objects and creates no reference cycles: pausing the cyclic collector
    # halves the time per file once a worker holds thousands of summaries (measured on the benchmark corpus).
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _summarize(path, text)
    finally:
        if collecting:
            gc.enable()


def _summarize(path: str, text: str) -> FileSummary:
    error: str | None = None
    tree: ast.Module | None
    try:
        with warnings.catch_warnings():  # SyntaxWarnings about the user's code are not ours to print
            warnings.simplefilter("ignore")
            tree = ast.parse(text, filename=path)
    except SyntaxError as exc:
        error = f"SyntaxError: {exc.msg} (line {exc.lineno})"
        tree = _parse_prefix(text, exc.lineno)
    except (ValueError, MemoryError, RecursionError) as exc:  # null bytes, absurd nesting
        return FileSummary(path, error=f"{type(exc).__name__}: {exc}")
    if tree is None:
        return FileSummary(path, error=error)
    try:
        return _summarize_tree(path, text, tree, error)
    except RecursionError:
        return FileSummary(path, error="RecursionError: expression nested too deeply to analyse")


def _summarize_tree(path: str, text: str, tree: ast.Module, error: str | None) -> FileSummary:
    ctx = FileContext(path, text, tree, LineIndex(path, text))
    walker = Walker(ctx)
    walker.run()
    return summarize_walked(ctx, walker, error)


def summarize_walked(ctx: FileContext, walker: Walker, error: str | None = None) -> FileSummary:
    """The rest of :func:`summarize` once every block of ``ctx.tree`` has been added to ``walker``: names resolved,
    compile sites found, every check's candidates collected."""
    facts = walker.finish()
    ctx.module_bindings = facts.bindings
    ctx.compile_sites = find_compile_sites(ctx, walker.decorated, walker.lowering())
    candidates: list[Candidate] = []
    try:
        for check in all_checks():
            if check.collect is None:
                continue
            try:
                with torch_facts.checking(check.code):
                    candidates.extend(check.collect(ctx))
            except RecursionError:
                raise
            except Exception:  # a bug in one check must not cost the user every other finding
                _log.exception("check %s failed on %s", check.code, ctx.path)
    finally:
        # What checks keep with the blocks (function bodies) refers back to ctx; without this edge no reference
        # cycle outlives the summary (the collector is paused while files are analysed).
        ctx.blocks = ()
    summary = FileSummary(
        path=ctx.path,
        error=error,
        imports=tuple(ctx.aliases.items()),
        classes=tuple(facts.classes),
        functions=tuple(facts.functions),
        bindings=tuple(facts.bindings),
        calls=tuple(facts.calls),
        switches=tuple(facts.switches),
        writes=tuple(sorted(facts.writes, key=lambda write: (write.span.line, write.span.column))),
        resets=tuple(facts.resets),
        settings=tuple(facts.settings),
        compile_sites=ctx.compile_sites,
        candidates=tuple(candidates),
        import_end=walker.import_end,
    )
    return replace(summary, names=referenced_names(summary))


def _parse_prefix(text: str, error_line: int | None) -> ast.Module | None:
    """Parse the lines above a syntax error, dropping the unfinished top-level statement if needed."""
    if not error_line or error_line <= 1:
        return None
    lines = split_lines(text)[: error_line - 1]
    for _ in range(2):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return ast.parse("".join(lines))
        except (SyntaxError, ValueError, RecursionError):
            # Drop back to the start of the last top-level statement and try once more.
            starts = [
                i for i, line in enumerate(lines) if line[:1] not in ("", " ", "\t", "\n", "\r", "#", ")", "]", "}")
            ]
            if not starts:
                return None
            lines = lines[: starts[-1]]
    return None


def link(summaries: Sequence[FileSummary], linker: Linker | None = None) -> list[Finding]:
    """Every finding for the workspace made of ``summaries``, sorted by path, line, column and code; ``linker``
    (the editor's, for successive versions of one workspace) reuses what the previous version shares."""
    collecting = gc.isenabled()
    gc.disable()  # as in summarize: millions of live summary objects make every full collection expensive
    try:
        if linker is None:
            return _link(summaries, WorkspaceIndex(summaries))
        with linker.lock:  # an index hands its state over to the next one: never two at once
            index = WorkspaceIndex(summaries, linker.last)
            index.track_changes()
            linker.last = index
            return _link(summaries, index)
    finally:
        if collecting:
            gc.enable()


def _judge_all(
    judge: Callable[[Any, WorkspaceIndex], Iterable[Finding]], candidates: list[Candidate], index: WorkspaceIndex
) -> list[Finding]:
    return [finding for candidate in candidates for finding in judge(candidate, index)]


class Linker:
    """Links successive versions of one workspace: each link keeps what the files it did not change allow (their
    tables, and results that only depend on what such files reach: :meth:`WorkspaceIndex.carried`). Links of one
    linker run one at a time."""

    def __init__(self) -> None:
        self.last: WorkspaceIndex | None = None
        self.lock = threading.Lock()


def _link(summaries: Sequence[FileSummary], index: WorkspaceIndex) -> list[Finding]:
    by_code: dict[str, dict[str, list[Candidate]]] = {}
    for summary in summaries:
        for candidate in summary.candidates:
            by_code.setdefault(candidate.code, {}).setdefault(summary.path, []).append(candidate)
    findings: dict[tuple[str, str, int, int, int, int], Finding] = {}
    checks = checks_by_code()
    for check in checks.values():
        try:
            with torch_facts.checking(check.code):
                produced = _produce(check, by_code.get(check.code, {}), index)
        except Exception:  # one broken check must not hide the others
            _log.exception("check %s failed while linking", check.code)
            continue
        for finding in produced:
            s = finding.span
            findings.setdefault((finding.code, s.path, s.line, s.column, s.end_line, s.end_column), finding)
    return sorted(findings.values(), key=Finding.sort_key)


def _produce(check: Check, by_path: Mapping[str, list[Candidate]], index: WorkspaceIndex) -> list[Finding]:
    """One check's findings over the whole workspace: its candidates judged, then its workspace judge."""
    produced: list[Finding] = []
    judge = check.judge
    if judge is not None:
        for path, candidates in by_path.items():
            fresh = candidates
            if check.judged_locally:
                reads = check.reads_workspace
                fresh = [c for c in candidates if reads is not None and reads(c, index)]
                judged_fresh = {id(c) for c in fresh}
                local = [c for c in candidates if id(c) not in judged_fresh]
                key = ("judged", check.code, path, index.sites_version)
                produced.extend(index.carried(key, path, partial(_judge_all, judge, local, index)))
            produced.extend(_judge_all(judge, fresh, index))
    if check.judge_workspace is not None:
        produced.extend(check.judge_workspace(index))
    return produced
