"""``dynamo-lens`` command line: one module per subcommand (``<name>_command.py``), each with ``add_parser``.

``add_parser(subparsers)`` registers the subcommand and sets ``handler`` (args -> exit code) as its default.

Exit codes (DESIGN.md §2): 0 nothing found / success, 1 findings or a budget exceeded, 2 usage or internal error.
``run`` exits with the user's script's own code unless a budget is exceeded.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys
from collections.abc import Sequence

from dynamo_lens import __version__

# Order of appearance in --help.
SUBCOMMAND_ORDER = ("check", "run", "serve", "explain")
EXIT_USAGE = 2
EXIT_CLOSED_PIPE = 1
"""``dynamo-lens explain | head``: the reader left before the output ended, as with ``check`` (not a usage error)."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dynamo-lens",
        description="See what torch.compile guards on, why it recompiles, and how to stop it.",
    )
    parser.add_argument("--version", action="version", version=f"dynamo-lens {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in _subcommand_names():
        module = importlib.import_module(f"dynamo_lens.cli.{name}_command")
        module.add_parser(subparsers)
    return parser


def _subcommand_names() -> list[str]:
    names = [m.name.removesuffix("_command") for m in pkgutil.iter_modules(__path__) if m.name.endswith("_command")]
    rank = {name: i for i, name in enumerate(SUBCOMMAND_ORDER)}
    return sorted(names, key=lambda n: (rank.get(n, len(rank)), n))


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on usage errors and 0 on --help/--version
        return int(exc.code or 0)
    try:
        return int(args.handler(args))
    except BrokenPipeError:
        quiet_closed_stdout()
        return EXIT_CLOSED_PIPE
    except KeyboardInterrupt:
        print("dynamo-lens: interrupted", file=sys.stderr)
        return 130


def quiet_closed_stdout() -> None:
    """After ``BrokenPipeError`` on standard output (``dynamo-lens explain | head``): point it at the null device,
    so that the interpreter's final flush does not print a second traceback. The reader has gone, which is not an
    error of ours."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
