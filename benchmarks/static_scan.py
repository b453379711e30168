"""Benchmark the static scan against ruff on a large real corpus, and one editor-sized file.

    .venv/bin/python benchmarks/static_scan.py [--repeat N] [--profile N]

Downloads (once) the wheels of transformers, diffusers and timm into ``benchmarks/.corpus/wheels`` with pip,
unpacks them, then in the same run times, on the same files:

* ``dynamo-lens check --no-cache``   (cold: every file parsed; target ≤ 4x ruff)
* ``dynamo-lens check``               (warm: the cache populated by a first run; target ≤ 1x ruff)
* ``ruff check --select F --no-cache``
* one ~3,000-line file in this process, the editor's two paths (medians): opened (``summarize`` + ``link`` from
  scratch), and a keystroke (a character typed on one line: the document's ``FileSummarizer`` redoes the blocks
  around it, then ``link``; target ≤ 30 ms, the keystroke budget)

and prints wall times, the ratios, and each command's peak resident memory (``wait4``; worker processes included).
``--profile N`` also profiles the per-file pass over the corpus in this process and prints the top N functions.
``--reach`` prints, instead of the timings, what a reach-first cold scan could leave out (issue 16): the files that hold
compile sites or code they reach, the files with warning/info findings, and how many files a cheap pre-pass would keep
(the import closure of the files that name ``compile`` or ``dynamo``).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
CORPUS = HERE / ".corpus"
WHEELS = CORPUS / "wheels"
SOURCES = CORPUS / "src"
BIN = Path(sys.executable).parent
PACKAGE = HERE.parent / "server" / "dynamo_lens"
PACKAGES = (("transformers", "5.24.0"), ("diffusers", "0.42.1"), ("timm", "1.0.31"))
EDITOR_FILE_LINES = 3000

COLD_TARGET = 4.0
WARM_TARGET = 1.0
EDITOR_TARGET_MS = 30.0


@dataclass(frozen=True)
class Timing:
    wall: float
    cpu: float
    """User + system seconds of the command and its workers: steadier than wall time on a shared machine."""
    peak_mb: float
    returncode: int
    stderr_lines: int


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3, help="runs per command; the median is reported")
    parser.add_argument("--profile", type=int, default=0, metavar="N", help="profile the per-file pass, show top N")
    parser.add_argument("--reach", action="store_true", help="what a reach-first scan could leave out (no timings)")
    args = parser.parse_args()

    roots = prepare_corpus()
    files = [p for root in roots for p in root.rglob("*.py")]
    lines = sum(p.read_bytes().count(b"\n") for p in files)
    print(f"corpus: {len(files)} files, {lines:,} lines in {', '.join(r.name for r in roots)}")
    print(f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}")
    if args.reach:
        reach(files)
        return 0

    targets = [str(r) for r in roots]
    lens = [sys.executable, "-m", "dynamo_lens"]
    ruff = str(BIN / "ruff")
    with (
        tempfile.TemporaryDirectory(prefix="dynamo-lens-bench-cache-") as cache_home,
        tempfile.TemporaryDirectory(prefix="dynamo-lens-bench-code-") as snapshot,
    ):
        # Run a frozen copy of the package: the cache namespace follows the package's files, and in a working
        # tree that others edit, the warm run would otherwise miss whenever a file changed between runs.
        shutil.copytree(PACKAGE, Path(snapshot) / PACKAGE.name, ignore=shutil.ignore_patterns("__pycache__"))
        env = {**os.environ, "XDG_CACHE_HOME": cache_home, "PYTHONPATH": snapshot}
        ruff_t = median_run([ruff, "check", "--select", "F", "--no-cache", "--exit-zero", "-q", *targets], env, args)
        cold = median_run([*lens, "check", "--no-cache", "--exit-zero", *targets], env, args)
        populate = run([*lens, "check", "--exit-zero", *targets], env)
        warm = median_run([*lens, "check", "--exit-zero", *targets], env, args)

    print()
    report("ruff check --select F --no-cache", ruff_t)
    report("dynamo-lens check --no-cache (cold)", cold)
    report("dynamo-lens check (first run, fills cache)", populate)
    report("dynamo-lens check (warm cache)", warm)
    print()
    verdict("cold / ruff", cold.wall / ruff_t.wall, COLD_TARGET)
    verdict("warm / ruff", warm.wall / ruff_t.wall, WARM_TARGET)
    print(f"  cpu time: cold / ruff {cold.cpu / ruff_t.cpu:.2f}x, warm / ruff {warm.cpu / ruff_t.cpu:.2f}x")
    print(f"  load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (others share this machine)")
    if cold.stderr_lines:
        print(f"  ({cold.stderr_lines} per-file messages on stderr, e.g. syntax errors)")

    editor_file, opened_ms, keystroke_ms = time_editor_file(files)
    rel = editor_file.relative_to(SOURCES)
    editor_lines = editor_file.read_bytes().count(b"\n")
    print(f"\none file, {rel} ({editor_lines} lines), medians:")
    print(f"  opened (summarize + link from scratch): {opened_ms:.1f} ms")
    verdict_ms = "PASS" if keystroke_ms <= EDITOR_TARGET_MS else "MISS"
    target = f"target ≤ {EDITOR_TARGET_MS:.0f} ms {verdict_ms}"
    print(f"  a keystroke (incremental summarize + link): {keystroke_ms:.1f} ms; {target}")

    if args.profile:
        profile(files, args.profile)
    return 0


def prepare_corpus() -> list[Path]:
    """Download and unpack the wheels (once); the unpacked directories."""
    WHEELS.mkdir(parents=True, exist_ok=True)
    roots = []
    for name, version in PACKAGES:
        wheel = next(WHEELS.glob(f"{name}-{version}-*.whl"), None) or download(name, version)
        root = SOURCES / wheel.name.removesuffix(".whl")
        if not root.is_dir():
            with zipfile.ZipFile(wheel) as archive:
                archive.extractall(root)
        roots.append(root)
    return roots


def download(name: str, version: str) -> Path:
    pip = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-d", str(WHEELS)]
    if subprocess.run([*pip, f"{name}=={version}"], capture_output=True).returncode == 0:
        return next(WHEELS.glob(f"{name}-{version}-*.whl"))
    subprocess.run([*pip, name], check=True, capture_output=True)
    wheel = max(WHEELS.glob(f"{name}-*.whl"), key=lambda p: p.stat().st_mtime)
    print(f"{name}=={version} is not available; using {wheel.name}")
    return wheel


def run(command: list[str], env: dict[str, str]) -> Timing:
    """Wall time and peak RSS of ``command`` (its waited-for children, e.g. pool workers, included)."""
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err, env=env)
        _pid, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        messages = len(err.read().splitlines())
    if process.returncode not in (0, 1):
        raise SystemExit(f"{command[0]} failed with exit code {process.returncode}")
    return Timing(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, process.returncode, messages)


def median_run(command: list[str], env: dict[str, str], args: argparse.Namespace) -> Timing:
    runs = [run(command, env) for _ in range(max(1, args.repeat))]
    return Timing(
        statistics.median(r.wall for r in runs),
        statistics.median(r.cpu for r in runs),
        max(r.peak_mb for r in runs),
        runs[0].returncode,
        runs[0].stderr_lines,
    )


def report(label: str, timing: Timing) -> None:
    print(f"  {label:<44} {timing.wall:7.2f} s wall {timing.cpu:7.2f} s cpu   peak {timing.peak_mb:6.0f} MB")


def verdict(label: str, ratio: float, target: float) -> None:
    print(f"  {label}: {ratio:5.2f}x  (target ≤ {target:g}x) {'PASS' if ratio <= target else 'MISS'}")


def time_editor_file(files: list[Path]) -> tuple[Path, float, float]:
    """The corpus file nearest 3,000 lines that defines an nn.Module, and the median wall ms of opening it
    (``scan.analyse_text`` + ``scan.link_files`` from scratch) and of a keystroke in it (the same with the
    document's ``FileSummarizer``, after a space is typed at the end of one of 21 lines spread over the file)."""
    from dynamo_lens.config import Settings
    from dynamo_lens.scan import FileAnalysis, analyse_text, link_files
    from dynamo_lens.static.incremental import FileSummarizer

    def distance(path: Path) -> int:
        data = path.read_bytes()
        return abs(data.count(b"\n") - EDITOR_FILE_LINES) if b"nn.Module" in data else 1 << 30

    def timed(text: str, summarizer: FileSummarizer | None = None) -> float:
        start = time.perf_counter()
        analysis = analyse_text(str(chosen), text, summarizer)
        assert isinstance(analysis, FileAnalysis)
        link_files([analysis], Settings())
        return (time.perf_counter() - start) * 1000

    chosen = min(files, key=distance)
    text = chosen.read_text(encoding="utf-8")
    opened = statistics.median(timed(text) for _ in range(11))
    summarizer = FileSummarizer(str(chosen))
    timed(text, summarizer)
    lines = text.splitlines(keepends=True)
    editable = [i for i, line in enumerate(lines) if line.strip() and not line.rstrip("\r\n").endswith("\\")]
    keystrokes = []
    for n in range(21):
        i = editable[n * len(editable) // 21]
        lines[i] = lines[i].rstrip("\r\n") + " \n"
        keystrokes.append(timed("".join(lines), summarizer))
    return chosen, opened, statistics.median(keystrokes)


def profile(files: list[Path], top: int) -> None:
    from dynamo_lens.static import link, summarize

    texts = [(str(p), p.read_text(encoding="utf-8", errors="replace")) for p in files]
    profiler = cProfile.Profile()
    start = time.perf_counter()
    profiler.enable()
    summaries = [summarize(path, text) for path, text in texts]
    profiler.disable()
    middle = time.perf_counter()
    profiler.enable()
    link(summaries)
    profiler.disable()
    end = time.perf_counter()
    skipped = sum(1 for s in summaries if s.skipped)
    print(f"\nprofile (one process, under cProfile): summarize {middle - start:.2f} s, link {end - middle:.2f} s;")
    print(f"prefilter skipped {skipped} of {len(summaries)} files")
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(top)
    print(out.getvalue())


SEED = re.compile(rb"(?<![\w.])compile\b|(?<!\bre)\.compile\b|dynamo")
"""A compile site or a Dynamo setting may be in a file whose text matches (``re.compile`` aside)."""


def reach(files: list[Path]) -> None:
    """The files the full analysis needs for its warning and info findings, against what an import-level pre-pass
    would have to keep: the files that name ``compile`` or ``dynamo`` and every workspace file they import, as the
    analysis resolves imports (to the defining file; the re-exporting modules in between are not counted)."""
    from dynamo_lens.model import Severity
    from dynamo_lens.static import Linker, link, summarize

    texts = {str(p): p.read_bytes() for p in files}
    summaries = [summarize(path, data.decode("utf-8", "replace")) for path, data in texts.items()]
    linker = Linker()
    findings = link(summaries, linker)
    index = linker.last
    assert index is not None
    sites = index.compile_sites()
    site_files = {s.span.path for s in sites}
    reached = {node[1][0] for site in sites for node in index.reach.reached_nodes(site)}
    loud = {f.span.path for f in findings if f.severity in (Severity.WARNING, Severity.INFO)}
    keep = {path for path, data in texts.items() if SEED.search(data.replace(b"re.compile", b""))}
    seeds, pending = len(keep), list(keep)
    while pending:
        summary = index.summary(pending.pop())
        for _, ref in summary.imports if summary is not None else ():
            symbol = index.files.resolve(summary.path, ref)
            if symbol is not None and symbol.path not in keep:
                keep.add(symbol.path)
                pending.append(symbol.path)
    print(f"\nreach ({len(files)} files): {len(site_files)} hold compile sites, {len(reached)} hold code they reach,")
    print(f"  {len(site_files | reached)} in all; warning/info findings in {len(loud)} files,")
    print(f"  {len(loud - site_files - reached)} of them outside those")
    missed = len((site_files | reached) - keep)
    print(f"  an import-level pre-pass keeps {len(keep)} files ({seeds} name compile/dynamo, and what they import),")
    print(f"  {len(keep) * 100 // max(1, len(files))} % of the corpus, and misses {missed} of the reached files")


if __name__ == "__main__":
    sys.exit(main())
