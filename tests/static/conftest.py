"""Fixtures for the static tests: the oracle tests analyse for the torch their fixtures run under."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from oracle import oracle_torch

from dynamo_lens import torch_facts


@pytest.fixture
def describe_oracle_torch() -> Iterator[None]:
    """The analyses of an oracle test describe the torch its fixtures run under (``pytestmark`` in its module)."""
    with torch_facts.targeting(oracle_torch()):
        yield
