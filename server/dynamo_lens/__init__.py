"""Dynamo Lens: what torch.compile guards on, why it recompiles, and how to stop it."""

from __future__ import annotations

import os
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dynamo_lens.runtime.recording import Recording

__version__ = "0.1.0"


def record(report: str | os.PathLike[str] | None = None) -> AbstractContextManager[Recording]:
    """Record what Dynamo does inside a ``with`` block of this program (``dynamo_lens.runtime.recording``)::

    with dynamo_lens.record() as run:
        train_one_epoch(model)
    print(run.report.summary, run.findings)
    """
    from dynamo_lens.runtime.recording import record as recording  # the shim loads with the first recording

    return recording(report)


def load_ipython_extension(ipython: object) -> None:
    """``%load_ext dynamo_lens`` in IPython or Jupyter: record this kernel (``dynamo_lens.runtime.kernel``)."""
    from dynamo_lens.runtime.kernel import load

    load(ipython)


def unload_ipython_extension(ipython: object) -> None:
    """``%unload_ext dynamo_lens``: stop recording, keep the report."""
    from dynamo_lens.runtime.kernel import unload

    unload(ipython)
