"""The analysis cache: content-addressed, namespaced by package build, and tolerant of corrupt entries."""

from __future__ import annotations

import dataclasses
import os
import pickle
from pathlib import Path

import pytest

from dynamo_lens.cache import AnalysisCache, dumps, user_cache_root


def test_user_cache_root_follows_xdg(cache_home: Path) -> None:
    assert user_cache_root() == cache_home / "dynamo-lens"


def test_user_cache_root_without_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert user_cache_root() == tmp_path / ".cache" / "dynamo-lens"


def test_key_depends_on_path_and_content(tmp_path: Path) -> None:
    cache = AnalysisCache.in_root(tmp_path)
    key = cache.key("/a.py", b"x = 1\n")
    assert key == cache.key("/a.py", b"x = 1\n")
    assert key != cache.key("/b.py", b"x = 1\n")
    assert key != cache.key("/a.py", b"x = 2\n")


def test_store_and_load(tmp_path: Path) -> None:
    cache = AnalysisCache.in_root(tmp_path)
    key = cache.key("/a.py", b"x")
    assert cache.load(key) is None
    cache.store(key, {"answer": (4, 2)})
    assert cache.load(key) == {"answer": (4, 2)}
    assert cache.directory.parent == tmp_path
    assert cache.directory.name.startswith("v")


def test_corrupt_entry_is_a_miss(tmp_path: Path) -> None:
    cache = AnalysisCache.in_root(tmp_path)
    key = cache.key("/a.py", b"x")
    cache.store(key, "value")
    entry = cache.directory / key[:2] / key[2:]
    entry.write_bytes(b"\x80\x05not a pickle")
    assert cache.load(key) is None
    entry.write_bytes(b"")
    assert cache.load(key) is None


def test_unwritable_cache_is_ignored(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory", encoding="utf-8")
    cache = AnalysisCache(blocker / "ns")
    cache.store("abcdef", 1)  # must not raise
    assert cache.load("abcdef") is None


def test_only_recent_namespaces_are_kept(tmp_path: Path) -> None:
    for age in range(5):
        old = tmp_path / f"v0.0.{age}-old"
        (old / "ab").mkdir(parents=True)
        (old / "ab" / "entry").write_bytes(b"x")
        os.utime(old, (1_000_000 - age, 1_000_000 - age))
    (tmp_path / "not-a-namespace").mkdir()
    cache = AnalysisCache.in_root(tmp_path)
    kept = sorted(d.name for d in tmp_path.iterdir())
    assert kept == sorted([cache.directory.name, "v0.0.0-old", "v0.0.1-old", "not-a-namespace"])


def test_dumps_round_trips_real_summaries_and_findings() -> None:
    from dynamo_lens.model import Finding, Fix, Related, Severity, Span
    from dynamo_lens.scan import FileAnalysis, analyse_text
    from dynamo_lens.suppression import find_suppressions

    source = (Path(__file__).parent / "test_check_command.py").read_text(encoding="utf-8")
    model = source.split('MODEL = """\\\n', 1)[1].split('"""', 1)[0]
    analysis = analyse_text("/p/model.py", model + "x = 1  # dynamo-lens: ignore[DL101]\n")
    assert isinstance(analysis, FileAnalysis)
    assert analysis.summary.classes  # something nested to rebuild
    assert pickle.loads(dumps(analysis)) == analysis
    assert find_suppressions(model + "x = 1  # dynamo-lens: ignore[DL101]\n") == analysis.suppressions

    span = Span("/p/model.py", 1, 1, 1, 5)
    finding = Finding(
        "DL101",
        Severity.WARNING,
        span,
        "m",
        related=(Related(span, "r"),),
        fixes=(Fix("t", ()),),
        data={"a": [1, 2]},
    )
    assert pickle.loads(dumps(finding)) == finding


@dataclasses.dataclass(frozen=True)
class _Normalised:
    name: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", self.name + "!")


def test_dumps_keeps_default_pickling_for_post_init() -> None:
    value = _Normalised("a")
    assert pickle.loads(dumps(value)) == value  # not "a!!": __post_init__ is not run again
