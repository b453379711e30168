"""``dynamo-lens serve``: the language server on stdin/stdout.

stdout carries only LSP messages; Python's logging goes to stderr (which editors show as the server's output). The
server never imports torch: instrumented runs happen in the user's interpreter, in a subprocess.
"""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Any


def add_parser(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "serve",
        help="run the language server (LSP over stdio)",
        description="Run the Dynamo Lens language server, speaking LSP over stdin/stdout.",
    )
    parser.add_argument("--log-level", choices=("debug", "info", "warning", "error"), default="warning")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    log_format = "%(asctime)s %(levelname)s %(name)s: %(message)s"
    logging.basicConfig(stream=sys.stderr, level=args.log_level.upper(), format=log_format)
    from dynamo_lens.lsp.server import create_server

    create_server().start_io()
    return 0
