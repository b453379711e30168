"""``dynamo-lens run``: run a script or module under the shim, then show what Dynamo compiled and why it recompiled.

Everything after the script (or after ``-m MODULE``) belongs to the target: ``dynamo-lens run --timeout 60 train.py
--epochs 2`` passes ``--epochs 2`` to ``train.py``; ``dynamo-lens run -m pytest -x tests/test_model.py``; a leading
``--`` is allowed (``dynamo-lens run -- train.py``).

Errors (a script that is not found, a timeout, a run that left no report) go to standard error; the summary of
what ran goes to standard output.

Exit code: the script's own, except that a script that exited 0 but exceeded a ``--max-*`` budget exits 1 (a
failing script keeps its code, so a crash is never reported as a mere budget problem); 2 when the run could not
start (no interpreter, no script, bad usage); 128+N when the script was killed by signal N.

With ``--format json`` or ``sarif`` our standard output carries only that document; the script's own standard
output is forwarded to standard error.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dynamo_lens.cli import quiet_closed_stdout

# Only argparse at import time: `dynamo-lens serve` builds this parser too, and must answer `initialize` fast. The
# runner, the attribution, the static scan and the renderers are imported by the functions that use them.
if TYPE_CHECKING:
    from dynamo_lens.model import Finding
    from dynamo_lens.runtime.attribution import FrameStats
    from dynamo_lens.runtime.report import RunReport
    from dynamo_lens.runtime.runner import RunOutcome, Target

DEFAULT_REPORT = Path(".dynamo-lens") / "last-run.json"
EXIT_BUDGET = 1
EXIT_USAGE = 2


def add_parser(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "run",
        help="run a script under Dynamo Lens and report recompiles and graph breaks",
        description=(
            "Run SCRIPT (or -m MODULE) with the given interpreter under Dynamo Lens' shim, print the script's output "
            "as it runs, then a summary per compiled frame: compiles, recompiles with the culprit line and guard, "
            "graph breaks, recompile-limit hits (and the calls that then ran eagerly), the calls that ran its "
            "compiled code and compile time."
        ),
        usage="dynamo-lens run [options] (SCRIPT | -m MODULE) [ARGS ...]",
    )
    parser.add_argument(
        "--report",
        type=Path,
        default=DEFAULT_REPORT,
        metavar="FILE",
        help=f"where to write the run report (dynamo-lens.run v2 JSON); default: {DEFAULT_REPORT} in the current "
        "directory",
    )
    parser.add_argument(
        "--python",
        default=sys.executable,
        metavar="EXE",
        help="the interpreter to run the script with (it needs torch); default: the one running dynamo-lens",
    )
    parser.add_argument("--timeout", type=_positive_float, metavar="SECONDS", help="stop the run after this long")
    parser.add_argument(
        "--max-recompiles",
        type=_count,
        metavar="N",
        help="exit 1 if the run recompiled more than N times in all (any rank, in a multi-process run)",
    )
    parser.add_argument(
        "--max-graph-breaks", type=_count, metavar="N", help="exit 1 if more than N distinct graph breaks occurred"
    )
    parser.add_argument("--format", choices=("text", "json", "sarif"), default="text", help="output format")
    parser.add_argument(
        "--torch-trace",
        type=Path,
        metavar="DIR",
        help="also keep Dynamo's structured trace in DIR (open it with tlparse)",
    )
    parser.add_argument(
        "--guard-cost",
        action="store_true",
        help="also measure what checking guards costs per call, with torch.profiler over the calls after each "
        "compile (torch 2.8 and later; the figures are steady-state medians)",
    )
    parser.add_argument(
        "-m",
        dest="module",
        nargs=argparse.REMAINDER,
        metavar="MODULE",
        help="run a library module as a script, like python -m (everything after it is passed on)",
    )
    parser.add_argument("target", nargs=argparse.REMAINDER, metavar="SCRIPT [ARGS ...]", help=argparse.SUPPRESS)
    parser.set_defaults(handler=handle)


def _positive_float(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text}")
    return value


def _count(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a count >= 0, got {text}")
    return value


def parse_target(script_argv: list[str] | None, module_argv: list[str] | None) -> Target:
    """The run target from argparse's two remainders; raises ValueError with a usage message."""
    from dynamo_lens.runtime.runner import Target

    if module_argv is not None:
        if not module_argv:
            raise ValueError("-m needs a module name")
        return Target(module=module_argv[0], args=tuple(module_argv[1:]))
    argv = list(script_argv or [])
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if argv[:1] == ["-m"]:
        return parse_target(None, argv[1:])
    if not argv:
        raise ValueError("give a script to run (or -m MODULE)")
    return Target(script=argv[0], args=tuple(argv[1:]))


def handle(args: argparse.Namespace) -> int:
    from dynamo_lens.runtime.runner import passthrough, run

    try:
        target = parse_target(args.target, args.module)
    except ValueError as exc:
        print(f"dynamo-lens run: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    machine = args.format != "text"
    outcome = run(
        target,
        report_path=args.report,
        python=args.python,
        timeout_s=args.timeout,
        torch_trace_dir=args.torch_trace,
        guard_cost=args.guard_cost,
        on_stdout=passthrough(sys.stderr if machine else sys.stdout),
        on_stderr=passthrough(sys.stderr),
        # What the summary needs is imported while the script starts up, on an otherwise idle thread; only once
        # the script is started, since the import would otherwise compete with starting it.
        on_started=threading.Thread(target=_import_summary_modules, daemon=True).start,
    )
    findings = shown_findings(outcome.report) if outcome.report is not None else []
    budget = budget_problems(outcome.report, args.max_recompiles, args.max_graph_breaks)
    try:
        if machine:
            sys.stdout.write(_document(findings, args.format))
        elif outcome.exit_code is not None or outcome.timed_out or outcome.cancelled:
            sys.stdout.flush()
            print(render_text(outcome, target, findings, budget, torch_trace=args.torch_trace))
        sys.stdout.flush()
    except BrokenPipeError:  # `dynamo-lens run train.py | head`: the script's exit code still decides ours
        quiet_closed_stdout()
    for line in [*(budget if machine else ()), *([f"error: {outcome.error}"] if outcome.error else [])]:
        print(f"dynamo-lens: {line}", file=sys.stderr)
    return exit_code(outcome, exceeded=bool(budget))


def _import_summary_modules() -> None:
    import dynamo_lens.codes
    import dynamo_lens.config
    import dynamo_lens.output.json_document
    import dynamo_lens.output.paths
    import dynamo_lens.output.sarif
    import dynamo_lens.runtime.attribution
    import dynamo_lens.scan
    import dynamo_lens.suppression

    dynamo_lens.codes.all_rules()  # imports every rule's module


def exit_code(outcome: RunOutcome, *, exceeded: bool) -> int:
    """The command's exit code for one outcome (see the module docstring)."""
    if outcome.exit_code is None:
        return EXIT_USAGE
    if outcome.exit_code < 0:
        return 128 - outcome.exit_code
    if outcome.exit_code == 0 and exceeded:
        return EXIT_BUDGET
    return outcome.exit_code


def budget_problems(report: RunReport | None, max_recompiles: int | None, max_graph_breaks: int | None) -> list[str]:
    """One message per exceeded ``--max-*`` budget (an empty list when every budget holds). Without a report the
    budgets cannot be checked, which counts as exceeded: a CI gate must not pass on a run it could not see."""
    if report is None:
        if max_recompiles is None and max_graph_breaks is None:
            return []
        return ["budget not checked: the run left no report"]
    problems: list[str] = []
    for process in (report, *report.ranks):  # every rank on its own: one rank over budget fails the gate
        where = f" on {process.rank_label}" if report.ranks else ""
        recompiles = len(process.recompiles)
        if max_recompiles is not None and recompiles > max_recompiles:
            problems.append(f"budget exceeded{where}: {recompiles} recompiles > --max-recompiles {max_recompiles}")
        breaks = len(process.graph_breaks)
        if max_graph_breaks is not None and breaks > max_graph_breaks:
            problems.append(f"budget exceeded{where}: {breaks} graph breaks > --max-graph-breaks {max_graph_breaks}")
    return problems


def shown_findings(report: RunReport) -> list[Finding]:
    """The run's findings as the user configured them (``[tool.dynamo-lens]`` select/ignore/severity, suppression
    comments), each confirmed against the static scan of the files the run touched where they agree."""
    if not report.findings:
        return []  # nothing to filter or confirm: skip loading the static analyzer
    from dynamo_lens.config import load_settings
    from dynamo_lens.runtime.attribution import merge_findings
    from dynamo_lens.scan import scan
    from dynamo_lens.suppression import find_suppressions, unsuppressed

    loaded = load_settings(Path.cwd())
    files = sorted({f.span.path for f in report.findings} | {f.path for f in report.frames})
    files = [path for path in files if Path(path).is_file() and not _is_installed(path)]
    static = scan(files, loaded.settings, None).findings if files else ()
    merged = merge_findings(static, report.findings)
    suppressions = {path: find_suppressions(_read(path)) for path in files}
    runtime = [f for f in merged if f.source == "runtime" and loaded.settings.is_enabled(f.code)]
    return [
        dataclasses.replace(f, severity=loaded.settings.severity_of(f)) for f in unsuppressed(runtime, suppressions)
    ]


def _is_installed(path: str) -> bool:
    return any(part in ("site-packages", "dist-packages") for part in Path(path).parts)


def _read(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _document(findings: list[Finding], fmt: str) -> str:
    """The same documents as ``check --format json|sarif`` (one writer for both commands)."""
    from dynamo_lens.output.json_document import render_json
    from dynamo_lens.output.sarif import render_sarif

    if fmt == "json":
        return render_json(findings, Path.cwd())
    return render_sarif(findings, (), Path.cwd())


# --------------------------------------------------------------------------------------------------------------------
# Text


def render_text(
    outcome: RunOutcome,
    target: Target,
    findings: list[Finding],
    budget: list[str],
    *,
    torch_trace: Path | None = None,
) -> str:
    """The summary printed after the script's own output (standard output); why a run failed goes to standard
    error, and a run that never started has no summary."""
    from dynamo_lens.runtime.attribution import frame_stats

    lines = ["", _headline(outcome, target)]
    report = outcome.report
    if report is not None:
        stats = frame_stats(report)
        if stats:
            lines += frame_table(stats)
            lines.append(f"in all: {report.counts().describe()}")
        elif not report.ranks:
            lines.append("no frame was compiled" + ("" if report.frames else " (torch.compile never ran)"))
        lines += guard_cost_lines(report)
        lines += _skipped_frames(report)
        if report.ranks:
            lines += rank_table(report.ranks)
        if findings:
            lines.append("")
            lines += [finding_line(f) for f in findings]
        if not report.complete:
            lines.append("the report is partial: the run was stopped before the shim could finish it")
    lines += [f"note: {note}" for note in outcome.notes]
    lines += budget
    if torch_trace is not None:
        lines.append(f"structured trace: {_display(str(torch_trace))} (open it with `tlparse`)")
    if report is not None or outcome.report_path.exists():
        lines.append(f"report: {_display(str(outcome.report_path))}")
    return "\n".join(lines)


def guard_cost_lines(report: RunReport, display: Callable[[str], str] | None = None) -> list[str]:
    """Per measured cache entry what its guard checks cost (``run --guard-cost``)."""
    from dynamo_lens.runtime import guard_cost
    from dynamo_lens.runtime.attribution import frame_label

    display = display or _display
    return [
        f"`{frame_label(m.frame)}` {display(m.frame.path)}:{m.frame.line} entry {m.entry.compile_id}: "
        f"{guard_cost.describe(m.entry, m.cost)}"
        for m in guard_cost.measured(report)
    ]


def _skipped_frames(report: RunReport, prefix: str = "") -> list[str]:
    """Is it really compiled? A frame Dynamo gave up on runs eagerly every time."""
    from dynamo_lens.model import plural

    lines = []
    for frame in report.frames:
        if frame.skipped_because is not None:
            where = f"{_display(frame.path)}:{frame.line}"
            lines.append(f"{prefix}`{frame.name}` {where} runs eagerly: Dynamo skipped it ({frame.skipped_because})")
    skipped = sum(1 for f in report.frames if f.skipped and f.skipped_because is None)
    if skipped:
        lines.append(f"{prefix}{plural(skipped, 'frame')} skipped by Dynamo (nothing to compile)")
    return lines


def rank_table(ranks: Sequence[RunReport], display: Callable[[str], str] | None = None) -> list[str]:
    """The processes of a multi-process run: per compiled frame the compiles of each rank (a column each), then per
    rank how it ended, its totals and the culprits of its recompiles."""
    from dynamo_lens.runtime.attribution import frame_label, frame_stats
    from dynamo_lens.runtime.ranks import frames_by_rank

    display = display or _display
    lines = ["", f"{len(ranks)} processes recorded (compiles per frame and rank):"]
    columns = ("compiled frame", *(rank.rank_label for rank in ranks))
    rows = []
    for frames in frames_by_rank(ranks):
        frame = next(f for _, f in frames.frames if f is not None)
        place = f"{frame_label(frame)}  {display(frame.path)}:{frame.line}"
        rows.append((place, *(str(frames.compiles(rank)) for rank in ranks)))
    widths = [max(len(r[i]) for r in [columns, *rows]) for i in range(len(columns))]
    for row in [columns, *rows]:
        lines.append("  ".join(_cell(text, width, i) for i, (text, width) in enumerate(zip(row, widths, strict=True))))
    for rank in ranks:
        process = rank.process
        ended = "killed before it finished" if not rank.complete else f"exit {rank.exit_code}"
        pid = f"pid {process.pid}, " if process is not None else ""
        lines.append(f"{rank.rank_label} ({pid}{ended}): {rank.counts().describe()}")
        for stat in frame_stats(rank):
            lines += _culprit_lines(stat, display)
        lines += _skipped_frames(rank, prefix="    ")
    return lines


def _headline(outcome: RunOutcome, target: Target) -> str:
    status = "timed out" if outcome.timed_out else "cancelled" if outcome.cancelled else f"exit {outcome.exit_code}"
    torch = outcome.report.torch_version if outcome.report is not None else None
    return f"dynamo-lens: ran {target.display} in {outcome.duration_s:.1f} s ({status}, torch {torch or 'unknown'})"


_COLUMNS = ("compiled frame", "compiles", "recompiles", "graph breaks", "limit", "compiled calls", "compile s")


def frame_table(stats: list[FrameStats], display: Callable[[str], str] | None = None) -> list[str]:
    """Per compiled frame its compiles, recompiles, graph breaks, limit (and the calls that then ran eagerly), the
    calls that ran its compiled code and its compile time, with the recompiles' culprits under it; ``display`` names
    a file (default: relative to the working directory)."""
    display = display or _display
    rows = [
        (
            f"{s.label}  {display(s.frame.path)}:{s.frame.line}",
            str(s.compiles),
            str(s.recompiles),
            str(s.graph_breaks),
            _limit_cell(s),
            "-" if s.compiled_calls is None else f"{'≥' if s.calls_at_least else ''}{s.compiled_calls}",
            f"{s.compile_time_s:.2f}",
        )
        for s in stats
    ]
    widths = [max(len(r[i]) for r in [_COLUMNS, *rows]) for i in range(len(_COLUMNS))]
    lines = ["  ".join(_cell(text, width, i) for i, (text, width) in enumerate(zip(_COLUMNS, widths, strict=True)))]
    for stat, row in zip(stats, rows, strict=True):
        lines.append("  ".join(_cell(text, width, i) for i, (text, width) in enumerate(zip(row, widths, strict=True))))
        lines += _culprit_lines(stat, display)
    return lines


def _limit_cell(stat: FrameStats) -> str:
    """``hit``, with the calls that then ran eagerly where they were counted (``hit, 4 eager``; ``≥4`` where some
    calls could not be attributed to a frame); ``-`` if not hit."""
    if not stat.limit_hit:
        return "-"
    if not stat.eager_calls:
        return "hit"
    return f"hit, {'≥' if stat.calls_at_least else ''}{stat.eager_calls} eager"


def _culprit_lines(stat: FrameStats, display: Callable[[str], str]) -> list[str]:
    lines = []
    for blame in stat.culprits:
        guard = f"`{blame.shown}`" if blame.failed is not None else "reason not recorded"
        kind = f" ({blame.failed.kind})" if blame.failed is not None and blame.failed.kind else ""
        how = {"call": "triggered by the call at", "frame": "at"}.get(blame.attributed_to, "guard installed at")
        lines.append(f"    recompile culprit: {guard}{kind}, {how} {display(blame.path)}:{blame.line}")
    return lines


def _cell(text: str, width: int, column: int) -> str:
    return text.ljust(width) if column == 0 else text.rjust(width)


def finding_line(finding: Finding, display: Callable[[str], str] | None = None) -> str:
    span = finding.span
    return f"{(display or _display)(span.path)}:{span.line}:{span.column}: {finding.code} {finding.message}"


def _display(path: str) -> str:
    from dynamo_lens.output.paths import display_path

    return display_path(path, Path.cwd())
