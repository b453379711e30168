"""What the processes of a multi-process run compiled, side by side, and where they diverged (DL504).

A run under ``torchrun`` (or ``torch.multiprocessing.spawn``) has one report per rank (``RunReport.ranks``). Ranks
run the same program, so they should compile the same frames the same number of times in the same order; when one
rank recompiles and the others do not, it falls behind and every collective waits for it (and a collective inside
code that only one rank compiles can hang). This module lines the ranks' frames up by code location, and finds
where their compiles differ: in which frames, in how many entries, or in the order of first compiles.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from dynamo_lens.model import Finding, plural
from dynamo_lens.runtime.report import Frame, RunReport

FrameKey = tuple[int, str, str, int]
"""A frame as every rank names it: (reset epoch, function name, path, line)."""


@dataclass(frozen=True, slots=True)
class RankFrames:
    """One compiled frame across the ranks: the frame of each rank that compiled it, in rank order."""

    key: FrameKey
    frames: tuple[tuple[RunReport, Frame | None], ...]
    """(rank report, its frame or None when that rank never compiled it), for every rank of the run."""

    def compiles(self, rank: RunReport) -> int:
        return next((f.compiles_ok for r, f in self.frames if r is rank and f is not None), 0)

    @property
    def diverges(self) -> bool:
        return len({self.compiles(rank) for rank, _ in self.frames}) > 1


def frames_by_rank(ranks: Sequence[RunReport]) -> list[RankFrames]:
    """Every frame any rank compiled (Dynamo's skipped frames left out), in the order the first rank to compile it
    did, with each rank's copy."""
    order: dict[FrameKey, None] = {}
    found: dict[tuple[int, FrameKey], Frame] = {}
    for index, rank in enumerate(ranks):
        for frame in rank.frames:
            if frame.skipped:
                continue
            key = (frame.reset_epoch, frame.name, frame.path, frame.line)
            order.setdefault(key, None)
            found[(index, key)] = frame
    return [
        RankFrames(key, tuple((rank, found.get((index, key))) for index, rank in enumerate(ranks))) for key in order
    ]


@dataclass(frozen=True, slots=True)
class Divergence:
    """A frame that ranks compiled a different number of times, or in another order than the others."""

    frames: RankFrames
    ahead: tuple[RunReport, ...]
    """The ranks that compiled it more often than the fewest (or, for an order difference, the ranks out of order)."""
    behind: tuple[RunReport, ...]
    order_only: bool = False


def divergences(processes: Sequence[RunReport]) -> list[Divergence]:
    """Frames whose compiles differ between the ranks of ``processes`` (those without a rank, a test runner's
    workers or helper scripts, are not ranks of one job and are not compared); when the counts agree everywhere, the
    first frame whose first compile came in another order on some ranks (by Dynamo's frame ids, which count first
    compiles)."""
    ranks = [p for p in processes if p.process is not None and p.process.rank is not None]
    if len(ranks) < 2:
        return []
    lined_up = frames_by_rank(ranks)
    found: list[Divergence] = []
    for frames in lined_up:
        if not frames.diverges:
            continue
        fewest = min(frames.compiles(rank) for rank in ranks)
        ahead = tuple(rank for rank in ranks if frames.compiles(rank) > fewest)
        behind = tuple(rank for rank in ranks if frames.compiles(rank) == fewest)
        found.append(Divergence(frames, ahead, behind))
    if found:
        return found
    shared = [f for f in lined_up if all(frame is not None for _, frame in f.frames)]
    orders = [_first_compile_order(rank, shared) for rank in ranks]
    usual = max(orders, key=orders.count)
    out_of_order = tuple(rank for rank, order in zip(ranks, orders, strict=True) if order != usual)
    if not out_of_order:
        return []
    theirs = _first_compile_order(out_of_order[0], shared)
    first = next((mine for mine, other in zip(usual, theirs, strict=True) if mine != other), None)
    place = next((f for f in shared if f.key == first), None)
    if place is None:
        return []
    behind = tuple(rank for rank in ranks if rank not in out_of_order)
    return [Divergence(place, out_of_order, behind, order_only=True)]


def _first_compile_order(rank: RunReport, frames: list[RankFrames]) -> list[FrameKey]:
    """The frames, all of which ``rank`` compiled, in the order it first compiled them (Dynamo numbers frames in
    that order, anew after each reset)."""
    mine = [(frame.reset_epoch, frame.frame_id, f.key) for f in frames for r, frame in f.frames if r is rank and frame]
    return [key for *_, key in sorted(mine, key=lambda item: (item[0], -1 if item[1] is None else item[1]))]


def rank_labels(ranks: Sequence[RunReport]) -> str:
    """``rank 1``, ``ranks 0 and 2``, ``ranks 0, 1 and 3`` (processes without a rank by pid)."""
    labels = [rank.rank_label for rank in ranks]
    if len(labels) == 1:
        return labels[0]
    numbers = [label.removeprefix("rank ") for label in labels]
    if all(label.startswith("rank ") for label in labels):
        return f"ranks {', '.join(numbers[:-1])} and {numbers[-1]}"
    return f"{', '.join(labels[:-1])} and {labels[-1]}"


def compile_counts(frames: RankFrames, ranks: Sequence[RunReport]) -> str:
    """``1 compile on ranks 0 and 2, 3 compiles on rank 1``: ranks with the same count together."""
    groups: dict[int, list[RunReport]] = {}
    for rank in ranks:
        groups.setdefault(frames.compiles(rank), []).append(rank)
    return ", ".join(f"{plural(count, 'compile')} on {rank_labels(group)}" for count, group in groups.items())


def on_ranks(per_rank: Sequence[tuple[RunReport, Sequence[Finding]]]) -> list[Finding]:
    """The runtime findings of each rank, the same finding of several ranks once: its message starts with the ranks
    (``rank 1: recompiled 2 times…``, ``ranks 0 and 1: graph break…``) and ``data["ranks"]`` lists them."""
    groups: dict[tuple[str, object, str], tuple[Finding, list[RunReport]]] = {}
    for rank, findings in per_rank:
        for finding in findings:
            key = (finding.code, finding.span, finding.message)
            groups.setdefault(key, (finding, []))[1].append(rank)
    merged: list[Finding] = []
    for finding, ranks in groups.values():
        data = {**finding.data, "ranks": [rank.rank_label for rank in ranks]}
        merged.append(replace(finding, message=f"{rank_labels(ranks)}: {finding.message}", data=data))
    return merged
