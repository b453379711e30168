"""Fixtures for the `check` pipeline tests: an isolated cache directory, and a small stand-in analyzer.

The stand-in lets the pipeline (reading, caching, parallelism, suppression, settings, rendering) be tested apart
from what the real analyzer flags: it reports `DL101` at every occurrence of the word `MARK`, and a syntax error
for text that does not compile. The end-to-end tests in `test_check_command.py` use the real analyzer.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from scan_fakes import FakeAnalyzer

from dynamo_lens import static


@pytest.fixture(autouse=True)
def cache_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own `$XDG_CACHE_HOME`: the user's real cache is never read or written."""
    home = tmp_path_factory.mktemp("cache-home")
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    return home


@pytest.fixture
def fake_analyzer(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeAnalyzer]:
    fake = FakeAnalyzer()
    monkeypatch.setattr(static, "summarize", fake.summarize, raising=False)
    monkeypatch.setattr(static, "link", fake.link, raising=False)
    yield fake
