"""What recording every rank costs: a two-rank torchrun job (``workloads/ddp_training.py``: DDP over gloo on CPU,
compiled) run plain and under ``dynamo-lens run``, which records each rank through the bootstrap ``sitecustomize``.

Each repetition runs both configurations back to back, in alternating order; the figures are medians over the
repetitions, per rank as the rank measures itself (``process``: from its first line to its last; ``loop``: its
training loop) and for the whole job as the user waits for it (``wall``: torchrun, or the CLI with the merged
report and summary). Ratios divide the ``dynamo-lens run`` median by the plain one.

    .venv/bin/python benchmarks/rank_overhead.py [--reps 5] [--steps 200] [--ranks 2]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORKLOAD = HERE / "workloads" / "ddp_training.py"
CONFIGS = ("plain", "dynamo-lens run")


def measure(config: str, ranks: int, steps: int, scratch: Path) -> dict[str, float]:
    """One run of ``config``: the job's wall time and, per rank, what the rank measured."""
    torchrun = ["-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(ranks), str(WORKLOAD)]
    if config == "plain":
        command = [sys.executable, *torchrun]
    else:
        report = scratch / "run.json"
        command = [sys.executable, "-m", "dynamo_lens", "run", "--report", str(report), *torchrun]
    results = scratch / "ranks"
    results.mkdir(exist_ok=True)
    for stale in results.iterdir():
        stale.unlink()
    env = {**os.environ, "STEPS": str(steps), "OMP_NUM_THREADS": "1", "RESULTS": str(results)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    for attempt in range(3):  # gloo on a loaded 2-core machine now and then aborts a plain job too
        started = time.perf_counter()
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - started
        if done.returncode == 0:
            break
        print(f"{config} failed ({done.returncode}), attempt {attempt + 1}: {done.stderr[-300:]}", file=sys.stderr)
    else:
        raise SystemExit(f"{config} failed three times")
    figures = {"wall": wall}
    for written in sorted(results.iterdir()):
        rank = json.loads(written.read_text())
        figures[f"rank {rank['rank']} process"] = rank["process_s"]
        figures[f"rank {rank['rank']} loop"] = rank["loop_s"]
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--ranks", type=int, default=2)
    args = parser.parse_args()
    results: dict[str, dict[str, list[float]]] = {config: {} for config in CONFIGS}
    with tempfile.TemporaryDirectory() as scratch:
        for rep in range(args.reps):
            for config in CONFIGS if rep % 2 == 0 else CONFIGS[::-1]:
                for name, value in measure(config, args.ranks, args.steps, Path(scratch)).items():
                    results[config].setdefault(name, []).append(value)
    print(f"{args.ranks} ranks, {args.steps} steps, {args.reps} repetitions (medians, seconds)")
    print(f"{'':<18}{'plain':>10}{'dynamo-lens':>13}{'ratio':>8}")
    for name in results["plain"]:
        plain = statistics.median(results["plain"][name])
        ours = statistics.median(results["dynamo-lens run"][name])
        print(f"{name:<18}{plain:>10.2f}{ours:>13.2f}{ours / plain:>8.2f}")


if __name__ == "__main__":
    main()
