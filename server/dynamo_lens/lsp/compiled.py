"""Where compiled code lives in a file, and what the last run observed for it.

A *place* is a compile site (``torch.compile(...)``, ``@torch.compile``, ``model.compile()``), a compiled class
(an ``nn.Module`` subclass a compile site compiles) or a compiled function/method ``def``. Hover, inlay hints and code
lenses all start from :func:`places_in_file`; they differ only in what they render.

Static facts come from the workspace's semantic model (``static/semantic``: what each compile site compiles);
runtime facts from the last run report, matched to a ``def`` by
file, function name and first line (``co_firstlineno`` is the first decorator's line, so a few lines above the
``def`` still match).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

from dynamo_lens.model import plural

if TYPE_CHECKING:
    from dynamo_lens.runtime.report import Counts, Frame, FrameRef, GraphBreak, LimitHit, Recompile, RunReport
    from dynamo_lens.static.semantic.index import WorkspaceIndex
    from dynamo_lens.static.summary import ClassSummary, CompileSite, FileSummary, FunctionSummary, MethodSummary

DECORATOR_LINES = 6
"""How far above a ``def`` its code object may start (decorators)."""

_RESUME_PREFIX = "torch_dynamo_resume_in_"
TIMES = "\N{MULTIPLICATION SIGN}"

PlaceKind = Literal["site", "class", "function", "method"]


@dataclass(frozen=True, slots=True)
class Def:
    """A function or method definition: its file, 1-based ``def`` line and name."""

    path: str
    line: int
    name: str


@dataclass(frozen=True, slots=True)
class Place:
    """Something compiled, at a 1-based ``line`` of ``path``, and the ``def``\\ s whose frames belong to it."""

    kind: PlaceKind
    path: str
    line: int
    column: int
    end_line: int
    end_column: int
    name: str
    defs: tuple[Def, ...]
    site: CompileSite | None = None
    cls: ClassSummary | None = None


@dataclass(frozen=True, slots=True)
class Observed:
    """What the last run saw for one place."""

    frames: tuple[Frame, ...]
    recompiles: tuple[Recompile, ...]
    graph_breaks: tuple[GraphBreak, ...]
    limit_hits: tuple[LimitHit, ...]
    counts: Counts
    """The run's counts for these frames (and the graph breaks of their resume functions), as every view shows
    them."""
    by_rank: tuple[tuple[str, Observed], ...] = ()
    """In a multi-process run, what each rank that ran the place saw (this object is the first rank's)."""

    def stats_text(self) -> str:
        """``compiled 8x · 7 recompiles · limit hit · 30 calls ran compiled code, 4 eagerly · 2 graph breaks`` (zero
        counts left out): is it really running compiled? Per rank in a multi-process run (``rank 0: compiled 1x;
        rank 1: …``)."""
        if self.by_rank:
            return "; ".join(f"{label}: {seen.stats_text()}" for label, seen in self.by_rank)
        counts = self.counts
        if self.frames and all(frame.skipped for frame in self.frames):
            why = next((f.skipped_because for f in self.frames if f.skipped_because), None)
            return f"not compiled: Dynamo skipped it ({why}), it runs eagerly" if why else "nothing to compile"
        stats = [f"compiled {counts.compiles}{TIMES}"]
        if counts.recompiles:
            stats.append(plural(counts.recompiles, "recompile"))
        if counts.limit_hits:
            stats.append("limit hit")
        calls = counts.calls_text()
        if calls:
            stats.append(calls)
        if counts.graph_breaks:
            stats.append(plural(counts.graph_breaks, "graph break"))
        return " · ".join(stats)


def places_in_file(path: str, model: WorkspaceIndex) -> list[Place]:
    r"""Every compiled place in ``path``: its compile sites, and the classes and ``def``\ s some compile site of the
    workspace compiles (what the semantic model says each site's compiled code starts at)."""
    summary = model.summary(path)
    if summary is None:
        return []
    places = [_site_place(model, summary, site) for site in summary.compile_sites]
    classes: set[str] = set()
    methods: set[str] = set()
    functions: set[str] = set()
    for site in model.compile_sites():
        for entry in model.compiled_entries(site):
            if entry[0] == "function":
                if entry[1][0] == path:
                    functions.add(entry[1][1])
                continue
            found = model.find_method(entry[1], entry[2])
            if entry[1][0] == path and entry[2] in ("forward", "__call__"):
                classes.add(entry[1][1])
            elif found is not None and found[0][0] == path:
                methods.add(f"{found[0][1]}.{entry[2]}")
    for cls in summary.classes:
        if cls.qualname in classes:
            places.append(_class_place(path, cls))
            places.extend(
                _def_place(path, m, "method", f"{cls.qualname}.{m.name}") for m in cls.methods if m.name == "forward"
            )
        places.extend(
            _def_place(path, method, "method", f"{cls.qualname}.{method.name}")
            for method in cls.methods
            if f"{cls.qualname}.{method.name}" in methods
        )
    places.extend(
        _def_place(path, function, "function", function.qualname)
        for function in summary.functions
        if function.qualname in functions
    )
    return sorted(places, key=lambda p: (p.line, p.column))


def shown_places(places: Sequence[Place]) -> list[Place]:
    """Places that get their own hint or lens: a compiled class's ``forward`` is left to the class line."""
    classes = {p.name for p in places if p.kind == "class"}
    return [p for p in places if not (p.kind == "method" and p.name.rpartition(".")[0] in classes)]


def body_end(place: Place, summary: FileSummary | None) -> int:
    """The 1-based line where the body of a class/``def`` place ends (exclusive): the next definition that is not
    part of it (for a class, its own methods are part of it)."""
    if summary is None:
        return place.line + 1
    lines = [c.span.line for c in summary.classes] + [f.span.line for f in summary.functions]
    if place.kind != "class":
        lines += [m.span.line for c in summary.classes for m in c.methods]
    return min((line for line in lines if line > place.line), default=1 << 30)


def place_at(places: Iterable[Place], line: int, column: int) -> Place | None:
    """The innermost place whose span holds the 1-based ``line``/``column`` (a ``def``/``class`` line counts whole)."""
    hits = [
        p
        for p in places
        if p.line <= line <= p.end_line
        and (
            p.kind != "site" or ((line, column) >= (p.line, p.column) and (line, column) <= (p.end_line, p.end_column))
        )
    ]
    return min(hits, key=lambda p: (p.end_line - p.line, p.end_column - p.column), default=None)


def observed(place: Place, report: RunReport) -> Observed:
    frames = tuple(f for f in report.frames if not f.is_resume and any(_frame_matches(f, d) for d in place.defs))
    keys = {(f.name, f.path, f.line) for f in frames}
    from dynamo_lens.runtime.report import Counts  # loaded with the report this is called with

    if not frames:
        return Observed((), (), (), (), Counts())
    graph_breaks = tuple(gb for gb in report.graph_breaks if gb.frame is not None and _ref_in(gb.frame, frames))
    limit_hits = tuple(h for h in report.limit_hits if h.frame is not None and _ref_in(h.frame, frames))
    counts = sum((report.counts(frame) for frame in frames), Counts())
    return Observed(
        frames=frames,
        recompiles=tuple(r for r in report.recompiles if (r.frame.name, r.frame.path, r.frame.line) in keys),
        graph_breaks=graph_breaks,
        limit_hits=limit_hits,
        # the graph breaks and limit hits of their resume functions too: the place's code runs in them
        counts=replace(counts, graph_breaks=len(graph_breaks), limit_hits=len(limit_hits)),
    )


def _ref_in(ref: FrameRef, frames: Sequence[Frame]) -> bool:
    """Whether ``ref`` names one of ``frames``, or a resume function Dynamo made from one (after a graph break)."""
    return any(
        frame.path == ref.path
        and (
            (frame.name, frame.line) == (ref.name, ref.line) or ref.name.startswith(f"{_RESUME_PREFIX}{frame.name}_at_")
        )
        for frame in frames
    )


def _frame_matches(frame: Frame, definition: Def) -> bool:
    return (
        frame.path == definition.path
        and frame.name == definition.name.rpartition(".")[2]
        and 0 <= definition.line - frame.line <= DECORATOR_LINES
    )


def _site_place(model: WorkspaceIndex, summary: FileSummary, site: CompileSite) -> Place:
    span = site.span
    return Place(
        kind="site",
        path=summary.path,
        line=span.line,
        column=span.column,
        end_line=span.end_line,
        end_column=span.end_column,
        name=_site_name(model, site),
        defs=tuple(_target_defs(model, site)),
        site=site,
    )


def _site_name(model: WorkspaceIndex, site: CompileSite) -> str:
    """What the site compiles, named as the hover titles it: the class of a compiled instance, a method, a function,
    or the target's source text when the semantic model cannot tell."""
    from dynamo_lens.static import exprs  # the analyzer is loaded by then; importing it here keeps start-up light

    for entry in model.compiled_entries(site):
        if entry[0] == "function":
            return entry[1][1]
        if entry[2] in ("forward", "__call__") and not isinstance(site.target, exprs.Attr):
            return entry[1][1]
        return f"{entry[1][1]}.{entry[2]}"
    return site.target_text


def _target_defs(model: WorkspaceIndex, site: CompileSite) -> Iterable[Def]:
    r"""The ``def``\ s where the site's compiled code starts (the frames a run reports for it)."""
    for entry in model.compiled_entries(site):
        if entry[0] == "function":
            function = model.files.function_summary(entry[1])
            if function is not None:
                yield Def(entry[1][0], function.span.line, entry[1][1])
            continue
        found = model.find_method(entry[1], entry[2])
        if found is not None:
            owner, method = found
            yield Def(owner[0], method.span.line, f"{owner[1]}.{method.name}")


def _class_place(path: str, cls: ClassSummary) -> Place:
    span = cls.span
    defs = tuple(Def(path, m.span.line, f"{cls.qualname}.{m.name}") for m in cls.methods)
    return Place("class", path, span.line, span.column, span.line, span.end_column, cls.qualname, defs, cls=cls)


def _def_place(path: str, node: MethodSummary | FunctionSummary, kind: PlaceKind, qualname: str) -> Place:
    span = node.span
    return Place(
        kind, path, span.line, span.column, span.line, span.end_column, qualname, (Def(path, span.line, qualname),)
    )
