"""The workspace as the server sees it: one per-file analysis per Python file, linked into findings on demand.

Files on disk come from the background workspace scan (``scan.analyse_files``, cached by content); an open
document's analysis is replaced on every analysed version (``scan.analyse_text``), so unsaved text in one editor
takes part in linking another. Linking runs over all of them: a compile site typed in ``train.py`` turns the hazards
in ``model.py`` into warnings at once. This module only keeps state and calls ``scan``; it judges nothing.

Imports: ``scan`` (and through it the analyzer and its checks) is imported on first use, in a worker thread, so that
the server answers ``initialize`` without paying for it.

Thread safety: the methods run in worker threads. Each analysis is stored with a generation number taken on the
event loop when the work was scheduled, and an older result never replaces a newer one. A file open in the editor is
*pinned*: results read from disk never replace its in-memory analysis, whenever they arrive. Links run in parallel
with updates, so each link says which snapshot of the analyses it read (:class:`Linked`): the event loop installs a
file's findings only from a snapshot at least as new as the one it shows.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, NamedTuple

from dynamo_lens.config import Settings
from dynamo_lens.model import Finding

if TYPE_CHECKING:
    from dynamo_lens.scan import FileAnalysis
    from dynamo_lens.scan_sources import FileProblem
    from dynamo_lens.static import Linker
    from dynamo_lens.static.incremental import FileSummarizer
    from dynamo_lens.static.semantic.index import WorkspaceIndex
    from dynamo_lens.static.summary import FileSummary


class Linked(NamedTuple):
    """The findings of one link, by path; the internal errors it hit; and the snapshot of the analyses it read
    (numbered in the order snapshots are taken)."""

    grouped: dict[str, list[Finding]]
    internal_errors: tuple[str, ...]
    snapshot: int


class WorkspaceAnalysis:
    def __init__(self) -> None:
        self._files: dict[str, tuple[int, FileAnalysis]] = {}
        self._pinned: dict[str, FileSummarizer | None] = {}
        """Open documents, each with the summarizer of its successive versions (made on first analysis)."""
        self._lock = threading.Lock()
        self._linker: Linker | None = None
        """Reuses the tables of unchanged files from one link to the next (imported with the analyzer)."""
        self._generations = itertools.count(1)
        self._snapshots = itertools.count(1)

    def next_generation(self) -> int:
        """Taken on the event loop when an analysis is scheduled, so that results can be ordered."""
        return next(self._generations)

    def pin(self, path: str) -> None:
        """``path`` is open in the editor: only :meth:`update` (its in-memory text) may change it from now on."""
        with self._lock:
            self._pinned.setdefault(path, None)

    def unpin(self, path: str) -> None:
        with self._lock:
            self._pinned.pop(path, None)

    def update(self, path: str, text: str, generation: int) -> None:
        """Analyse ``text`` as the content of ``path`` (an open document: reusing what its last version shares)."""
        from dynamo_lens import scan
        from dynamo_lens.static.incremental import FileSummarizer

        with self._lock:
            summarizer = self._pinned.get(path)
            if summarizer is None and path in self._pinned:
                summarizer = self._pinned[path] = FileSummarizer(path)
        outcome = scan.analyse_text(path, text, summarizer)
        if isinstance(outcome, scan.FileAnalysis):
            self._store([outcome], generation)
        else:
            self.forget(path)

    def update_from_disk(self, paths: Sequence[str], generation: int) -> list[FileProblem]:
        """Analyse files as they are on disk (cached by content); returns the files that could not be analysed."""
        from dynamo_lens import scan
        from dynamo_lens.cache import AnalysisCache

        workspace = scan.analyse_files(paths, AnalysisCache.in_root())
        self._store(workspace.files.values(), generation, from_disk=True)
        return list(workspace.problems)

    def _store(self, analyses: Iterable[FileAnalysis], generation: int, *, from_disk: bool = False) -> None:
        with self._lock:
            for analysis in analyses:
                if from_disk and analysis.path in self._pinned:
                    continue
                current = self._files.get(analysis.path)
                if current is None or current[0] <= generation:
                    self._files[analysis.path] = (generation, analysis)

    def forget(self, path: str) -> None:
        with self._lock:
            self._files.pop(path, None)

    def summary(self, path: str) -> FileSummary | None:
        entry = self._files.get(path)
        return entry[1].summary if entry is not None else None

    def summaries(self) -> list[FileSummary]:
        with self._lock:
            return [analysis.summary for _generation, analysis in self._files.values()]

    def model(self) -> WorkspaceIndex:
        """The semantic model of the last link (hover, lenses and inlay hints ask it what is compiled); one of the
        current summaries when nothing was linked yet (static findings turned off)."""
        linker = self._linker
        if linker is not None:
            with linker.lock:
                if linker.last is not None:
                    return linker.last
        from dynamo_lens.static.semantic.index import WorkspaceIndex

        return WorkspaceIndex(self.summaries())

    def file_count(self) -> int:
        return len(self._files)

    def update_and_link(self, path: str, text: str, generation: int, rules: Settings | None) -> Linked:
        """:meth:`update` then :meth:`findings`, in one trip to a worker thread (the keystroke path)."""
        self.update(path, text, generation)
        return self.findings(rules)

    def findings(self, rules: Settings | None) -> Linked:
        """Every finding in the workspace by path, after suppression comments and ``rules``; and internal errors.
        Nothing when ``rules`` is None (static analysis turned off)."""
        with self._lock:
            snapshot = next(self._snapshots)
            analyses = [analysis for _generation, analysis in self._files.values()]
        if rules is None:
            return Linked({}, (), snapshot)
        from dynamo_lens import scan, static

        if self._linker is None:
            self._linker = static.Linker()
        linked, internal_errors = scan.link_files(analyses, rules, self._linker)
        grouped: dict[str, list[Finding]] = {}
        for finding in linked:
            grouped.setdefault(finding.path, []).append(finding)
        return Linked(grouped, internal_errors, snapshot)
