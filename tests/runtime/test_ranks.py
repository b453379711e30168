"""Multi-process runs for real: two gloo ranks on CPU under ``dynamo-lens run -m torch.distributed.run``, and two
workers of ``torch.multiprocessing.spawn``, recorded without a change to the script (``worker_site``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from dynamo_lens.cli import main
from dynamo_lens.runtime.report import RunReport, load_report

pytestmark = pytest.mark.slow

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "runtime"


def _run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *target: str) -> tuple[int, RunReport, list[str]]:
    for name in FIXTURES.glob("ranks_*.py"):
        shutil.copy(name, tmp_path / name.name)
    monkeypatch.chdir(tmp_path)
    code = main(["run", "--report", "run.json", *target])
    return code, load_report(tmp_path / "run.json"), json.loads((tmp_path / "run.json").read_text())["findings"]


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _rank(report: RunReport, rank: int) -> RunReport:
    return next(r for r in report.ranks if r.process is not None and r.process.rank == rank)


def test_torchrun_records_both_ranks_and_names_the_rank_that_recompiled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    torchrun = ["-m", "torch.distributed.run", "--nproc-per-node", "2", "ranks_float_attribute.py"]
    code, report, findings = _run(tmp_path, monkeypatch, *torchrun)
    assert code == 0
    assert [(r.process.rank, r.process.local_rank, r.process.world_size) for r in report.ranks if r.process] == [
        (0, 0, 2),
        (1, 1, 2),
    ]
    assert [(r.exit_code, r.complete) for r in report.ranks] == [(0, True), (0, True)]
    assert [len(_rank(report, n).recompiles) for n in (0, 1)] == [0, 1]
    (recompile,) = _rank(report, 1).recompiles
    culprit = recompile.failed_guards[0]
    assert (culprit.text, Path(culprit.path or "").name, culprit.line) == (
        "self.scale == 1.0",
        "ranks_float_attribute.py",
        21,
    )
    diverged = next(f for f in findings if f["code"] == "DL504")
    assert (Path(diverged["path"]).name, diverged["line"]) == ("ranks_float_attribute.py", 21)
    assert diverged["message"].startswith(
        "`forward` compiled differently across ranks (1 compile on rank 0, 2 compiles on rank 1): on rank 1 "
        "`self.scale == 1.0` failed"
    )
    assert diverged["data"]["compiles"] == {"rank 0": 1, "rank 1": 2}
    assert [r["message"] for r in diverged["related"]] == ["rank 0 compiled `forward` 1\N{MULTIPLICATION SIGN}"]
    recompiled = next(f for f in findings if f["code"] == "DL501")
    assert recompiled["message"].startswith("rank 1: recompiled 1\N{MULTIPLICATION SIGN}: `self.scale == 1.0`")
    out = capfd.readouterr().out.splitlines()
    assert out[out.index("compiled frame                        rank 0  rank 1") + 1].split() == [
        "forward",
        "ranks_float_attribute.py:20",
        "1",
        "2",
    ]
    assert not (tmp_path / "run.json.workers").exists()  # merged into the report
    assert not any(_alive(r.process.pid) for r in report.ranks if r.process)


def test_a_rank_killed_with_sigkill_keeps_what_it_saw_and_nothing_is_left_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `torchrun` as a command: the console script next to the interpreter
    torchrun = ["torchrun", "--standalone", "--nproc-per-node", "2", "ranks_float_attribute.py", "--kill-rank-1"]
    code, report, findings = _run(tmp_path, monkeypatch, *torchrun)
    assert code != 0  # torchrun fails the job
    killed, stopped = _rank(report, 1), _rank(report, 0)
    assert (killed.complete, killed.exit_code) == (False, None)
    assert [f.compiles_ok for f in killed.frames] == [2]  # its compiles up to the kill
    # torchrun stopped rank 0 with SIGTERM, which a rank leaves at its default (a rank blocked in a collective would
    # never run a Python handler): its events up to then are kept as well
    assert (stopped.complete, [f.compiles_ok for f in stopped.frames]) == (False, [1])
    assert any(f["code"] == "DL504" for f in findings)
    assert not any(_alive(r.process.pid) for r in report.ranks if r.process)


def test_hung_ranks_stopped_by_the_timeout_keep_what_they_saw(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    torchrun = ["torchrun", "--standalone", "--nproc-per-node", "2", "ranks_float_attribute.py", "--hang-rank-1"]
    code, report, findings = _run(tmp_path, monkeypatch, "--timeout", "10", *torchrun)
    assert code != 0
    assert [(r.complete, [f.compiles_ok for f in r.frames]) for r in report.ranks] == [(False, [1]), (False, [2])]
    assert any(f["code"] == "DL504" for f in findings)
    assert not any(_alive(r.process.pid) for r in report.ranks if r.process)


def test_torch_multiprocessing_spawn_records_both_workers_with_their_process_group_ranks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, report, findings = _run(tmp_path, monkeypatch, "ranks_spawned.py")
    assert code == 0
    assert [(r.process.rank, r.process.local_rank) for r in report.ranks if r.process] == [(0, None), (1, None)]
    assert [[f.compiles_ok for f in r.frames] for r in report.ranks] == [[1], [2]]
    assert report.process is not None and report.process.pid not in {r.process.pid for r in report.ranks if r.process}
    diverged = next(f for f in findings if f["code"] == "DL504")
    assert (Path(diverged["path"]).name, diverged["line"]) == ("ranks_spawned.py", 20)  # the call: a size has no line
    assert "tensor 'x' size mismatch at index 0. expected 4, actual 5" in diverged["message"]


def test_other_processes_are_kept_when_they_compile_and_named_by_pid(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "compiles.py").write_text(
        "import torch\ntorch.compile(lambda x: x + 1, backend='eager')(torch.ones(2))\nexit(3)\n"
    )
    (tmp_path / "main.py").write_text(
        "import subprocess, sys\n"
        "subprocess.run([sys.executable, '-c', 'pass'], check=True)\n"  # no rank, compiles nothing: left out
        "assert subprocess.run([sys.executable, 'compiles.py']).returncode == 3\n"
    )
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--report", "run.json", "main.py"]) == 0
    report = load_report(tmp_path / "run.json")
    (child,) = report.ranks
    assert child.process is not None and child.process.rank is None
    assert child.rank_label == f"process {child.process.pid}"
    assert [Path(f.path).name for f in child.frames] == ["compiles.py"]
    assert (child.ended_by, child.exit_code) == ("sys_exit", 3)  # the site module's exit(), as sys.exit


def test_compiled_code_that_reads_the_rank_compiles_a_graph_of_its_own_on_each_rank(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What DL212 says: Dynamo specialises on the rank, one compile per function on each rank, graphs that differ."""
    monkeypatch.setenv("GRAPHS", str(tmp_path))
    code, report, _ = _run(
        tmp_path,
        monkeypatch,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc-per-node",
        "2",
        "ranks_specialised.py",
    )
    assert code == 0
    graphs = [json.loads((tmp_path / f"rank-{rank}.json").read_text()) for rank in (0, 1)]
    assert [len(g) for g in graphs] == [3, 3]
    assert graphs[0][0] == graphs[1][0] + 1  # `step`: rank 0's graph has the `x + 1` rank 1's has not
    for rank in (0, 1):
        frames = {frame.name: frame for frame in _rank(report, rank).frames}
        assert {name: frame.compiles_ok for name, frame in frames.items()} == {"step": 1, "scaled": 1, "forward": 1}
        guards = {guard.text for frame in frames.values() for guard in frame.cache_entries[0].guards}
        assert f"self.rank == {rank}" in guards
        assert f"os.environ._data[b'RANK'] == b'{rank}'" in guards


def test_a_helper_a_rank_starts_inherits_its_rank_variable_but_is_no_rank(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    torchrun = ["-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", "ranks_with_helpers.py"]
    code, report, findings = _run(tmp_path, monkeypatch, *torchrun)
    assert code == 0
    assert [r.process.rank for r in report.ranks if r.process] == [0, 1, None, None]
    assert [len(r.frames) for r in report.ranks] == [0, 0, 1, 1]  # the helpers compiled, the ranks did not
    assert not [f for f in findings if f["code"] == "DL504"]  # helpers are not ranks of the job
