"""Ranks side by side (``runtime/ranks.py``), DL504 from reports built by hand, and what the CLI prints for them."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from dynamo_lens.cli.run_command import budget_problems, rank_table
from dynamo_lens.runtime.attribution import findings_from_report
from dynamo_lens.runtime.ranks import divergences, rank_labels
from dynamo_lens.runtime.report import CacheEntry, FailedGuard, Frame, Process, Recompile, RunReport

SOURCE = "def forward(self, x):\n    return x * self.scale\n\ndef loss(y):\n    return y.sum()\n"


def _frame(name: str, line: int, frame_id: int, compiles: int, path: str) -> Frame:
    entries = tuple(CacheEntry(f"{frame_id}/{n}", "ok") for n in range(compiles))
    return Frame(name, path, line, frame_id=frame_id, cache_entries=entries)


def _rank(rank: int, *frames: Frame, recompiles: tuple[Recompile, ...] = ()) -> RunReport:
    return RunReport(
        torch_version="2.13.0",
        python="3.11",
        argv=("train.py",),
        exit_code=0,
        frames=frames,
        recompiles=recompiles,
        process=Process(pid=100 + rank, rank=rank, world_size=3),
    )


def _run(*ranks: RunReport) -> RunReport:
    return RunReport(
        torch_version="2.13.0",
        python="3.11",
        argv=("-m", "torch.distributed.run"),
        exit_code=0,
        process=Process(pid=99),
        ranks=ranks,
    )


def test_the_rank_that_recompiled_is_blamed_at_its_failing_guard(tmp_path: Path) -> None:
    path = str(tmp_path / "train.py")
    Path(path).write_text(SOURCE)
    twice = _frame("forward", 1, 0, 2, path)
    failed = FailedGuard(
        "0/0",
        "self.scale == 1.0",
        kind="EQUALS_MATCH",
        source="L['self'].scale",
        path=path,
        line=2,
        attributed_to="guard",
    )
    ahead = _rank(1, twice, recompiles=(Recompile("0/1", twice.ref, (failed,)),))
    run = _run(_rank(0, _frame("forward", 1, 0, 1, path)), ahead, _rank(2, _frame("forward", 1, 0, 1, path)))
    (finding,) = [f for f in findings_from_report(run) if f.code == "DL504"]
    assert (finding.span.line, finding.span.column) == (2, 16)  # `self.scale`
    assert finding.message.startswith(
        "`forward` compiled differently across ranks (1 compile on ranks 0 and 2, 2 compiles on rank 1): on rank 1 "
        "`self.scale == 1.0` failed and it recompiled, while ranks 0 and 2 did not"
    )
    assert [r.message for r in finding.related] == [
        "rank 0 compiled `forward` 1\N{MULTIPLICATION SIGN}",
        "rank 2 compiled `forward` 1\N{MULTIPLICATION SIGN}",
    ]
    (recompiled,) = [f for f in findings_from_report(run) if f.code == "DL501"]
    assert recompiled.message.startswith("rank 1: recompiled 1\N{MULTIPLICATION SIGN}")


def test_a_frame_only_some_ranks_compile_is_shown_at_its_def(tmp_path: Path) -> None:
    path = str(tmp_path / "train.py")
    Path(path).write_text(SOURCE)
    run = _run(
        _rank(0, _frame("forward", 1, 0, 1, path), _frame("loss", 4, 1, 1, path)),
        _rank(1, _frame("forward", 1, 0, 1, path)),
    )
    (finding,) = [f for f in findings_from_report(run) if f.code == "DL504"]
    assert finding.span.line == 4
    assert finding.message.startswith("`loss` compiled on rank 0 only (1 compile on rank 0, 0 compiles on rank 1)")


def test_ranks_that_compile_alike_in_another_order_differ_and_alike_ones_do_not(tmp_path: Path) -> None:
    path = str(tmp_path / "train.py")
    forward_first = _rank(0, _frame("forward", 1, 0, 1, path), _frame("loss", 4, 1, 1, path))
    same = _rank(1, _frame("forward", 1, 0, 1, path), _frame("loss", 4, 1, 1, path))
    loss_first = _rank(2, _frame("forward", 1, 1, 1, path), _frame("loss", 4, 0, 1, path))
    assert divergences([forward_first, same]) == []
    (found,) = divergences([forward_first, same, loss_first])
    assert found.order_only and [r.rank_label for r in found.ahead] == ["rank 2"]


def test_labels_and_the_per_rank_table_and_budgets(tmp_path: Path) -> None:
    path = str(tmp_path / "train.py")
    ranks = (_rank(0, _frame("forward", 1, 0, 1, path)), _rank(1, _frame("forward", 1, 0, 3, path)))
    assert rank_labels(ranks) == "ranks 0 and 1"
    assert rank_labels([*ranks, replace(ranks[0], process=Process(pid=7))]) == "rank 0, rank 1 and process 7"
    table = rank_table(ranks, display=lambda p: Path(p).name)
    assert table[1:3] == [
        "2 processes recorded (compiles per frame and rank):",
        "compiled frame       rank 0  rank 1",
    ]
    assert table[3].split() == ["forward", "train.py:1", "1", "3"]
    recompiled = replace(ranks[1], recompiles=(Recompile("0/1", ranks[1].frames[0].ref),) * 2)
    assert budget_problems(_run(ranks[0], recompiled), 1, None) == [
        "budget exceeded on rank 1: 2 recompiles > --max-recompiles 1"
    ]


def test_processes_without_a_rank_are_not_compared(tmp_path: Path) -> None:
    path = str(tmp_path / "train.py")
    Path(path).write_text(SOURCE)
    worker = replace(_rank(0, _frame("forward", 1, 0, 1, path)), process=Process(pid=501))
    other = replace(_rank(1, _frame("loss", 4, 0, 1, path)), process=Process(pid=502))
    assert divergences([worker, other]) == []
    assert [f.code for f in findings_from_report(_run(worker, other))] == []


def test_ranks_holding_different_frames_with_equal_counts_do_not_break_the_order_check(tmp_path: Path) -> None:
    path = str(tmp_path / "train.py")
    failed = Frame("loss", path, 4, frame_id=1, cache_entries=(CacheEntry("1/0", "failed"),))
    with_failed = _rank(0, _frame("forward", 1, 0, 1, path), failed)
    assert divergences([with_failed, _rank(1, _frame("forward", 1, 0, 1, path))]) == []
    assert divergences([_rank(1, _frame("forward", 1, 0, 1, path)), with_failed]) == []


def test_a_frame_the_others_never_compiled_is_not_blamed_on_a_guard(tmp_path: Path) -> None:
    path = str(tmp_path / "train.py")
    Path(path).write_text(SOURCE)
    twice = _frame("loss", 4, 1, 2, path)
    failed = FailedGuard("1/0", "y.size()[0] == 4", path=path, line=5, attributed_to="guard")
    ahead = _rank(0, _frame("forward", 1, 0, 1, path), twice, recompiles=(Recompile("1/1", twice.ref, (failed,)),))
    (finding,) = [
        f for f in findings_from_report(_run(ahead, _rank(1, _frame("forward", 1, 0, 1, path)))) if f.code == "DL504"
    ]
    assert finding.message.startswith("`loss` compiled on rank 0 only (2 compiles on rank 0, 0 compiles on rank 1)")
    assert finding.span.line == 4
