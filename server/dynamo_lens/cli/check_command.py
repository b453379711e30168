"""``dynamo-lens check [PATH ...]``: the static scan, printed as text, JSON or SARIF.

Exit codes: 0 no findings (or ``--exit-zero``), 1 findings, 2 usage or internal error. A file that cannot be read,
decoded or parsed is a message on stderr; the other files are still analysed and the exit code is not 2.

Hints (hazards in code that no compile site in the checked files reaches, and compile-site notes) are the editor's
quiet layer: ``check`` counts them in its summary and lists them only with ``--show-hints``; they never change the
exit code.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dynamo_lens.cli import EXIT_CLOSED_PIPE, quiet_closed_stdout
from dynamo_lens.output import FORMATS

if TYPE_CHECKING:  # loaded by `check` itself: `dynamo-lens serve` builds this parser too, and starts fast
    from dynamo_lens.config import LoadedSettings, Settings

EXIT_CLEAN = 0
EXIT_FINDINGS = 1
EXIT_ERROR = 2


def add_parser(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "check",
        help="statically scan Python files for torch.compile recompile and graph-break hazards",
        description="Statically scan Python files for torch.compile recompile and graph-break hazards "
        "(no torch import, nothing is run).",
    )
    parser.add_argument("paths", nargs="*", metavar="PATH", help="files or directories to check (default: .)")
    parser.add_argument("--format", choices=FORMATS, default="text", help="output format (default: text)")
    parser.add_argument(
        "--select", action="append", metavar="CODES", help="comma-separated codes or prefixes to report (e.g. DL1)"
    )
    parser.add_argument("--ignore", action="append", metavar="CODES", help="comma-separated codes or prefixes to skip")
    parser.add_argument(
        "--show-hints",
        action="store_true",
        help="also report hints (hazards in code no compile site reaches, compile sites); the editor shows them",
    )
    parser.add_argument(
        "--torch-version",
        metavar="X.Y",
        help="the torch release the messages describe (default: the one installed in this environment)",
    )
    parser.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings")
    parser.add_argument("--no-cache", action="store_true", help="neither read nor write the analysis cache")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    try:
        return _check(args)
    except BrokenPipeError:  # `dynamo-lens check | head`: before the handler below turns it into an internal error
        quiet_closed_stdout()
        return EXIT_CLOSED_PIPE
    except Exception:  # the contract: never a bare traceback from check, exit 2 for our own bugs
        print("dynamo-lens: internal error, please report it:", file=sys.stderr)
        traceback.print_exc(file=sys.stderr)
        return EXIT_ERROR


def _check(args: argparse.Namespace) -> int:
    # Imported here so that `dynamo-lens serve`, `explain` and `--help` do not pay for the analyzer's import.
    from dynamo_lens import torch_facts
    from dynamo_lens.cache import AnalysisCache
    from dynamo_lens.config import load_settings
    from dynamo_lens.model import Severity
    from dynamo_lens.output import render
    from dynamo_lens.output.text import render_problem
    from dynamo_lens.scan import scan

    cwd = Path.cwd()
    paths: list[str] = args.paths or ["."]
    loaded = load_settings(_settings_start(paths))
    for message in loaded.problems:
        print(f"dynamo-lens: warning: {message}", file=sys.stderr)
    overridden = _with_flags(loaded, args)
    if overridden is None:
        return EXIT_ERROR

    torch_facts.use(torch_facts.target_for(overridden.torch_version))
    cache = None if args.no_cache else AnalysisCache.in_root()
    result = scan(paths, overridden, cache)

    for problem in result.problems:
        print(render_problem(problem, cwd), file=sys.stderr)
    for missing in result.missing:
        print(f"dynamo-lens: {missing}: no such file or directory", file=sys.stderr)
    for error in result.internal_errors:
        print(f"dynamo-lens: {error}", file=sys.stderr)
    shown = [f for f in result.findings if args.show_hints or f.severity is not Severity.HINT]
    hidden = len(result.findings) - len(shown)
    sys.stdout.write(render(args.format, shown, result.problems, result.files, cwd, hidden_hints=hidden))
    sys.stdout.flush()

    if result.missing or result.internal_errors:
        return EXIT_ERROR
    failing = any(f.severity is not Severity.HINT for f in shown)
    return EXIT_FINDINGS if failing and not args.exit_zero else EXIT_CLEAN


def _with_flags(loaded: LoadedSettings, args: argparse.Namespace) -> Settings | None:
    """The settings with ``--select``/``--ignore``/``--torch-version`` applied, or None (after a message) for an
    unknown code or an unreadable release."""
    from dynamo_lens.config import parse_code_list

    select = [c for value in args.select for c in parse_code_list(value)] if args.select else None
    ignore = [c for value in args.ignore for c in parse_code_list(value)] if args.ignore else None
    flagged = loaded.settings.with_overrides(select=select, ignore=ignore, torch_version=args.torch_version)
    if flagged.problems:
        for problem in flagged.problems:
            print(f"dynamo-lens: error: {problem}", file=sys.stderr)
        return None
    return flagged.settings


def _settings_start(paths: list[str]) -> Path:
    """Settings come from the ``pyproject.toml`` nearest to what is checked (the paths' common directory)."""
    absolute = [os.path.abspath(p) for p in paths]
    try:
        common = os.path.commonpath(absolute)
    except ValueError:  # paths on different drives
        common = os.getcwd()
    return Path(common)
