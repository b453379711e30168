"""Start the Dynamo Lens language server from the libraries bundled in the VS Code extension.

The extension runs ``<the user's python> bootstrap.py``. Layout of the installed extension::

    extension/bootstrap/bootstrap.py     this file (sys.path[0] is its folder; left as it is)
    extension/bundled/libs/              pygls, lsprotocol and their pure-Python dependencies, built for Python 3.10
    extension/bundled/server/            the dynamo_lens package

The bundled folders go right after ``sys.path[0]``, ahead of the interpreter's site-packages, so the server uses
the versions it was tested with whatever the user's environment holds. Entries that came from ``PYTHONPATH`` are
removed from the *server's* ``sys.path`` so a user's path cannot shadow the server; ``os.environ`` is left alone,
so the instrumented run (a child process the server spawns) sees the user's environment exactly as a terminal
would, and never the bundled folders, which live only in this process's ``sys.path``.

Running from a source checkout without a bundle (``npm run bundle:server`` not run yet) falls back to the
repository's ``server/`` folder and the interpreter's own pygls.

Nothing is printed to stdout: it carries the protocol.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence

HERE = os.path.dirname(os.path.abspath(__file__))
BUNDLED = os.path.join(os.path.dirname(HERE), "bundled")
CHECKOUT_SERVER = os.path.join(os.path.dirname(os.path.dirname(HERE)), "server")


def server_paths(bundled: str = BUNDLED, checkout_server: str = CHECKOUT_SERVER) -> list[str]:
    """The folders to put first on the server's path: the bundle's, or a checkout's ``server/`` without one."""
    server = os.path.join(bundled, "server")
    if os.path.isdir(os.path.join(server, "dynamo_lens")):
        return [server, os.path.join(bundled, "libs")]
    return [checkout_server]


def server_sys_path(path: Sequence[str], environ: Mapping[str, str], first: Sequence[str]) -> list[str]:
    """``path`` with ``first`` inserted after ``path[0]`` and the ``PYTHONPATH`` entries removed."""
    from_env = {entry for entry in environ.get("PYTHONPATH", "").split(os.pathsep) if entry}
    from_env |= {os.path.abspath(entry) for entry in from_env}
    rest = [entry for entry in path[1:] if entry not in from_env and entry not in first]
    return [*path[:1], *first, *rest]


def main() -> int:
    sys.path[:] = server_sys_path(sys.path, os.environ, server_paths())
    from dynamo_lens.cli import main as cli_main

    return cli_main(["serve"])


if __name__ == "__main__":
    sys.exit(main())
