"""The interpreter the oracle tests run their fixtures in under real ``torch.compile``.

The probes (``torch_probe.py``, ``usage_probe.py``) need only torch and the standard library, so the same claims can
be checked against another torch: ``DYNAMO_LENS_ORACLE_PYTHON=/path/to/python`` (``make oracle TORCH=2.14.1`` makes
such an environment and runs them); by default, the interpreter running the tests (the pinned torch).
"""

from __future__ import annotations

import os
import sys

ORACLE_PYTHON = os.environ.get("DYNAMO_LENS_ORACLE_PYTHON") or sys.executable
