"""The Python interpreter that runs the user's code, and the torch installed there (asked once, cached).

That torch decides what the analysis describes (messages, hovers: ``torch_facts.use``) and which quick fixes apply
(``Fix.works_on``: the int-attribute setting of "Mark module dynamic" exists from torch 2.7). It is read in a
subprocess (``runtime.runner.torch_of``, which never imports torch) off the event loop; until it is known, or when
the workspace is not trusted, the analysis describes the torch installed beside the server.
"""

from __future__ import annotations

import asyncio
import sys

from dynamo_lens.lsp.server import DynamoLensServer
from dynamo_lens.torch_facts import TorchTarget, installed_target


def interpreter(server: DynamoLensServer) -> str:
    return server.settings.interpreter or sys.executable


async def selected_torch(server: DynamoLensServer) -> TorchTarget:
    """The selected interpreter's torch. An untrusted workspace may have chosen the interpreter itself, so there
    nothing is executed and the torch beside the server stands in."""
    if not server.settings.trusted:
        return installed_target()
    from dynamo_lens.runtime.runner import torch_of

    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(server.thread_pool, torch_of, interpreter(server))
