"""The Python interpreter that runs the user's code, and the torch version installed there (asked once, cached).

The version decides which quick fixes apply (``Fix.min_torch``/``max_torch``; "Mark module dynamic" differs before
and after torch 2.5). It is read in a subprocess (``runtime.runner.torch_version``, which never imports torch) off the
event loop; until it is known, or when torch is absent, fixes assume the release the messages describe.
"""

from __future__ import annotations

import asyncio
import sys

from dynamo_lens.lsp.server import DynamoLensServer
from dynamo_lens.torch_facts import TORCH_VERSION_ASSUMED

TorchVersion = tuple[int, int]


def interpreter(server: DynamoLensServer) -> str:
    return server.settings.interpreter or sys.executable


def parse_version(text: str | None) -> TorchVersion | None:
    """``"2.13.0+cpu"`` → ``(2, 13)``; None for anything unreadable."""
    if not text:
        return None
    parts = text.split("+")[0].split(".")
    try:
        return int(parts[0]), int(parts[1])
    except (IndexError, ValueError):
        return None


ASSUMED = parse_version(TORCH_VERSION_ASSUMED) or (2, 13)


async def selected_torch(server: DynamoLensServer) -> TorchVersion:
    """The selected interpreter's torch version (the assumed release when unknown). An untrusted workspace may have
    chosen the interpreter itself, so there nothing is executed and the assumed release is used."""
    if not server.settings.trusted:
        return ASSUMED
    from dynamo_lens.runtime.runner import torch_version

    python = interpreter(server)
    loop = asyncio.get_running_loop()
    found = await loop.run_in_executor(server.thread_pool, torch_version, python)
    return parse_version(found) or ASSUMED


def in_range(version: TorchVersion, minimum: str | None, maximum: str | None) -> bool:
    """Whether ``version`` lies within ``[minimum, maximum]`` (major.minor, both inclusive, None unbounded)."""
    low = parse_version(minimum)
    high = parse_version(maximum)
    return (low is None or version >= low) and (high is None or version <= high)
