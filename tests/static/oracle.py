"""The interpreter the oracle tests run their fixtures in under real ``torch.compile``.

The probes (``torch_probe.py``, ``usage_probe.py``) need only torch and the standard library, so the same claims can
be checked against another torch: ``DYNAMO_LENS_ORACLE_PYTHON=/path/to/python`` (``make oracle TORCH=2.14.1`` makes
such an environment and runs them); by default, the interpreter running the tests (the pinned torch).
"""

from __future__ import annotations

import functools
import os
import sys

from dynamo_lens.runtime.runner import torch_of
from dynamo_lens.torch_facts import TorchTarget

ORACLE_PYTHON = os.environ.get("DYNAMO_LENS_ORACLE_PYTHON") or sys.executable


@functools.cache
def oracle_torch() -> TorchTarget:
    """The torch the fixtures run under: the static side describes it while its claims are compared."""
    return torch_of(ORACLE_PYTHON)
