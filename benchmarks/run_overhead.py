"""What ``dynamo-lens run`` costs: a compile-heavy training script run plain, under Dynamo Lens, and with TORCH_LOGS.

The workload (``workloads/transformer_block.py``) trains a small transformer LM under ``torch.compile`` and
recompiles for realistic reasons (sequence lengths, a list read in ``forward``, eval under ``no_grad``, a graph
break). Each repetition runs the three configurations back to back, in a rotating order so that none always runs
first; the figures are medians over the repetitions, and the ratios divide each configuration's median by plain's.

* ``wall``: the whole process, as the user waits for it (for Dynamo Lens: the CLI, the shim, the report, the summary);
* ``loop``: the training loop as the script measures it (compile-dominated);
* ``step``: the median step time over the second half of the loop (no compiles: the per-call cost);
* the ``cpu`` variants are CPU time (process tree, or the script's own process), which other load barely moves.

    .venv/bin/python benchmarks/run_overhead.py [--reps 5] [--steps 60] [--backend eager]

Target: ``dynamo-lens run`` wall ratio ≤ 1.05. Threads are pinned (``OMP_NUM_THREADS=1``) to cut noise.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORKLOAD = HERE / "workloads" / "transformer_block.py"
CONFIGS = ("plain", "dynamo-lens run", "TORCH_LOGS")
TORCH_LOGS = "recompiles,guards,graph_breaks"


def command(config: str, report: Path) -> tuple[list[str], dict[str, str]]:
    # Bytecode caching on, as in a real installation (pip writes .pyc files); a dev shell with
    # PYTHONDONTWRITEBYTECODE=1 would otherwise charge every `dynamo-lens run` for compiling our sources again.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["OMP_NUM_THREADS"] = "1"
    if config == "plain":
        return [sys.executable, str(WORKLOAD)], env
    if config == "TORCH_LOGS":
        return [sys.executable, str(WORKLOAD)], {**env, "TORCH_LOGS": TORCH_LOGS}
    return [sys.executable, "-m", "dynamo_lens", "run", "--report", str(report), str(WORKLOAD)], env


def measure(config: str, report: Path) -> dict[str, float]:
    argv, env = command(config, report)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode != 0:
        raise SystemExit(f"{config} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    figures = next(json.loads(line) for line in done.stdout.splitlines() if line.startswith('{"loop_s"'))
    return {
        "wall": wall,
        "cpu": cpu,
        "loop": figures["loop_s"],
        "loop cpu": figures["loop_cpu_s"],
        "steady": figures["steady_step_ms"],
        "steady cpu": figures["steady_step_cpu_ms"],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5, help="repetitions of each configuration (default 5)")
    parser.add_argument("--steps", type=int, default=60, help="training steps of the workload (default 60)")
    parser.add_argument("--backend", default="eager", help="torch.compile backend of the workload (default eager)")
    args = parser.parse_args()
    os.environ["STEPS"] = str(args.steps)
    os.environ["BACKEND"] = args.backend

    results: dict[str, list[dict[str, float]]] = {config: [] for config in CONFIGS}
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "report.json"
        measure("plain", report)  # warm the page cache and torch's own caches; not counted
        for rep in range(args.reps):
            order = CONFIGS[rep % len(CONFIGS) :] + CONFIGS[: rep % len(CONFIGS)]
            for config in order:
                results[config].append(measure(config, report))
            print(f"rep {rep + 1}/{args.reps}: " + "  ".join(f"{c} {results[c][-1]['wall']:.2f}s" for c in CONFIGS))
        summary = json.loads(report.read_text())["summary"]

    print(
        f"\nworkload: {WORKLOAD.name}, {args.steps} steps, backend={args.backend}; dynamo-lens saw "
        f"{summary['compiles']} compiles, {summary['recompiles']} recompiles, {summary['graph_breaks']} graph breaks"
    )
    print(f"medians of {args.reps} interleaved repetitions (ratio = config / plain)\n")
    keys = ("wall", "cpu", "loop", "loop cpu", "steady", "steady cpu")
    names = ("wall s", "cpu s", "loop s", "loop cpu s", "step ms", "step cpu ms")
    header = "".join(f"{name:>12}{'ratio':>7}" for name in names)
    print(f"{'config':<17}{header}")
    base = {key: statistics.median(r[key] for r in results["plain"]) for key in keys}
    for config in CONFIGS:
        med = {key: statistics.median(r[key] for r in results[config]) for key in keys}
        print(f"{config:<17}" + "".join(f"{med[k]:>12.2f}{med[k] / base[k]:>7.3f}" for k in keys))
    for key in ("wall", "cpu"):
        spread = [r[key] for r in results["plain"]]
        print(f"plain {key} min/max: {min(spread):.2f}/{max(spread):.2f} s", end="; " if key == "wall" else "\n")
    print(f"load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs (cpu s is robust to load)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
