"""The interpreter the oracle tests run their fixtures in under real ``torch.compile``.

The probes (``torch_probe.py``, ``usage_probe.py``) need only torch and the standard library, so the same claims can
be checked against another torch: ``DYNAMO_LENS_ORACLE_PYTHON=/path/to/python`` (``make oracle TORCH=2.14.1`` makes
such an environment and runs them); by default, the interpreter running the tests (the pinned torch).
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass

import pytest

from dynamo_lens.runtime.runner import torch_of
from dynamo_lens.torch_facts import (
    FLOAT_DYNAMIC_SINCE,
    FLOAT_POLICY_SINCE,
    INT_MODULE_ATTR_STATIC_SINCE,
    PINNED,
    RECOMPILE_LIMIT,
    Release,
    TorchTarget,
)

ORACLE_PYTHON = os.environ.get("DYNAMO_LENS_ORACLE_PYTHON") or sys.executable


@functools.cache
def oracle_torch() -> TorchTarget:
    """The torch the fixtures run under: the static side describes it while its claims are compared."""
    return torch_of(ORACLE_PYTHON)


@dataclass(frozen=True, slots=True)
class Differs:
    """What torch does instead of what an oracle case says: on the releases before ``release`` (a case's ``before``)
    or from it on (its ``since``)."""

    release: Release
    compiles: int
    limit_hit: bool = False
    severity: str | None = None
    """The finding's severity there, for cases that state one."""
    lines: frozenset[int] | None = None
    """The lines the finding is on there (None: the fixture's marks; empty: none)."""


def earliest_before(release: Release | None, before: Iterable[Differs], needs: Release | None = None) -> Differs | None:
    """What differs on ``release`` (the oracle's torch): the ``before`` entry with the lowest bound above it, or None
    when the case holds as written. Skips the test on a release older than ``needs``, which lacks what the fixture
    uses (a setting, a keyword)."""
    release = release or PINNED
    if needs is not None and release < needs:
        pytest.skip(f"needs torch {needs}")
    older = [b for b in before if release < b.release]
    return min(older, key=lambda b: b.release) if older else None


INT_AS_INPUT = Differs(INT_MODULE_ATTR_STATIC_SINCE, 2, severity="info")
"""Before 2.8 an int attribute of a module the compiled frame gets as an input is made dynamic after one recompile."""
FLOAT_ANY_POLICY = (
    Differs(FLOAT_DYNAMIC_SINCE, RECOMPILE_LIMIT, limit_hit=True, severity="warning"),
    Differs(FLOAT_POLICY_SINCE, 2, severity="info"),
)
"""A changing float attribute: static before 2.6, made dynamic after one recompile whatever the site says on 2.6
and 2.7."""
