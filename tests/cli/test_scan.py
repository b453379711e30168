"""The scan pipeline with a stand-in analyzer: caching, parallel workers, suppression, settings, bad files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from scan_fakes import FakeAnalyzer

from dynamo_lens import scan as scan_module
from dynamo_lens.cache import AnalysisCache
from dynamo_lens.config import Settings
from dynamo_lens.scan import FileAnalysis, analyse_files, analyse_text, link_files, scan


def _tree(root: Path, files: dict[str, str | bytes]) -> None:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")


def p_text(path: str) -> str:
    return Path(path).read_text(encoding="utf-8")


def _lines(result: scan_module.ScanResult, root: Path) -> list[tuple[str, int, int, str]]:
    return [(os.path.relpath(f.path, root), f.span.line, f.span.column, f.code) for f in result.findings]


def test_findings_come_sorted_with_absolute_paths(tmp_path: Path, fake_analyzer: FakeAnalyzer) -> None:
    _tree(tmp_path, {"b.py": "x = 1\ny = 'MARK'\n", "a.py": "if 1:\n    MARK = 2\n"})
    result = scan([str(tmp_path)], Settings(root=tmp_path), cache=None)
    assert _lines(result, tmp_path) == [("a.py", 2, 5, "DL101"), ("b.py", 2, 6, "DL101")]
    assert all(os.path.isabs(f.path) for f in result.findings)
    assert result.files == 2
    assert result.problems == ()


def test_bad_files_are_problems_and_the_rest_is_analysed(
    tmp_path: Path, fake_analyzer: FakeAnalyzer, monkeypatch: pytest.MonkeyPatch
) -> None:
    _tree(
        tmp_path,
        {
            "good.py": "MARK = 1\n",
            "typing.py": "def f(:\n",
            "latin.py": b"s = '\xe9'\n",
            "blob.py": b"\x00\x01\x02",
            "locked.py": "MARK = 2\n",
        },
    )
    (tmp_path / "dir.py").mkdir()  # a directory named like a module is walked, not read
    real_read = scan_module.read_bytes

    def read_bytes(path: str) -> bytes | scan_module.FileProblem:
        if path.endswith("locked.py"):
            return scan_module.FileProblem(path, "cannot read: Permission denied")
        return real_read(path)

    monkeypatch.setattr(scan_module, "read_bytes", read_bytes)
    result = scan([str(tmp_path)], Settings(root=tmp_path), cache=None)
    assert _lines(result, tmp_path) == [("good.py", 1, 1, "DL101")]
    problems = {os.path.basename(p.path): p.message for p in result.problems}
    assert problems == {
        "blob.py": "binary file (contains NUL bytes); skipped",
        "latin.py": "not valid UTF-8 (byte 0xe9) and no coding declaration; skipped",
        "locked.py": "cannot read: Permission denied",
        "typing.py": "SyntaxError: invalid syntax (line 1)",
    }


def test_second_run_reads_the_cache(tmp_path: Path, fake_analyzer: FakeAnalyzer) -> None:
    _tree(tmp_path, {"a.py": "MARK\n", "b.py": "x = 1\n", "bad.py": "def (\n"})
    cache = AnalysisCache.in_root(tmp_path / "cache")
    first = scan([str(tmp_path / "a.py"), str(tmp_path / "b.py"), str(tmp_path / "bad.py")], Settings(), cache)
    assert first.cache_hits == 0
    assert len(fake_analyzer.summarized) == 3

    assert fake_analyzer.linked == 1

    fake_analyzer.summarized.clear()
    second = scan([str(tmp_path / "a.py"), str(tmp_path / "b.py"), str(tmp_path / "bad.py")], Settings(), cache)
    assert second.cache_hits == 3
    assert fake_analyzer.summarized == []
    assert fake_analyzer.linked == 1  # the unchanged set of files was not even linked again
    assert second.findings == first.findings
    assert second.problems == first.problems  # syntax errors are cached too

    (tmp_path / "b.py").write_text("x = 2  # MARK\n", encoding="utf-8")
    third = scan([str(tmp_path / "a.py"), str(tmp_path / "b.py"), str(tmp_path / "bad.py")], Settings(), cache)
    assert third.cache_hits == 2
    assert fake_analyzer.summarized == [str(tmp_path / "b.py")]
    assert fake_analyzer.linked == 2
    assert [f.span.line for f in third.findings] == [1, 1]


def test_without_cache_everything_is_analysed_again(tmp_path: Path, fake_analyzer: FakeAnalyzer) -> None:
    _tree(tmp_path, {"a.py": "MARK\n"})
    scan([str(tmp_path)], Settings(), cache=None)
    scan([str(tmp_path)], Settings(), cache=None)
    assert fake_analyzer.summarized == [str(tmp_path / "a.py")] * 2


def test_corrupt_cache_entry_is_reanalysed(tmp_path: Path, fake_analyzer: FakeAnalyzer) -> None:
    _tree(tmp_path, {"a.py": "MARK\n"})
    cache = AnalysisCache.in_root(tmp_path / "cache")
    scan([str(tmp_path / "a.py")], Settings(), cache)
    for entry in cache.directory.rglob("*"):
        if entry.is_file():
            entry.write_bytes(b"garbage")
    again = scan([str(tmp_path / "a.py")], Settings(), cache)
    assert again.cache_hits == 0
    assert len(fake_analyzer.summarized) == 2
    assert [f.span.line for f in again.findings] == [1]


def test_many_files_are_analysed_in_worker_processes(
    tmp_path: Path, fake_analyzer: FakeAnalyzer, monkeypatch: pytest.MonkeyPatch
) -> None:
    count = scan_module.PARALLEL_MIN_FILES + 10
    _tree(tmp_path, {f"m{i:03}.py": "x = 1\n" * i + "MARK = 1\n" for i in range(count)})
    cache = AnalysisCache.in_root(tmp_path / "cache")
    if (os.cpu_count() or 1) < 2:
        monkeypatch.setattr(os, "cpu_count", lambda: 2)
    parallel = scan([str(tmp_path)], Settings(), cache)
    # The work happened in other processes: this process's analyzer saw none of it.
    assert fake_analyzer.summarized == []
    assert [(os.path.basename(f.path), f.span.line) for f in parallel.findings] == [
        (f"m{i:03}.py", i + 1) for i in range(count)
    ]
    # ...and the workers filled the per-file cache (analyse_files reads it; scan would use the linked result).
    paths = sorted(str(p) for p in tmp_path.glob("m*.py"))
    again = analyse_files(paths, cache)
    assert again.cache_hits == count
    assert [a.summary for a in again.files.values()] == [fake_analyzer.summarize(p, p_text(p)) for p in paths]
    assert scan([str(tmp_path)], Settings(), cache).findings == parallel.findings


def test_suppression_comments_and_settings_apply(tmp_path: Path, fake_analyzer: FakeAnalyzer) -> None:
    _tree(
        tmp_path,
        {
            "a.py": "MARK\n"
            "MARK  # dynamo-lens: ignore[DL101]\n"
            "MARK  # dynamo-lens: ignore[DL204]\n"
            "MARK  # dynamo-lens: ignore\n"
        },
    )
    result = scan([str(tmp_path)], Settings(), cache=None)
    assert [f.span.line for f in result.findings] == [1, 3]
    ignored = scan([str(tmp_path)], Settings(ignore=("DL1",)), cache=None)
    assert ignored.findings == ()


def test_link_failure_is_an_internal_error(
    tmp_path: Path, fake_analyzer: FakeAnalyzer, monkeypatch: pytest.MonkeyPatch
) -> None:
    _tree(tmp_path, {"a.py": "MARK\n"})

    def broken_link(summaries: object, linker: object = None) -> list[object]:
        raise RuntimeError("boom")

    monkeypatch.setattr(scan_module.static, "link", broken_link)
    result = scan([str(tmp_path)], Settings(), cache=None)
    assert result.findings == ()
    assert result.internal_errors == ("internal error while linking: RuntimeError: boom",)


def test_summarize_failure_is_a_file_problem(
    tmp_path: Path, fake_analyzer: FakeAnalyzer, monkeypatch: pytest.MonkeyPatch
) -> None:
    _tree(tmp_path, {"a.py": "MARK\n", "b.py": "MARK\n"})
    real = fake_analyzer.summarize

    def flaky(path: str, text: str) -> object:
        if path.endswith("a.py"):
            raise RecursionError("too deep")
        return real(path, text)

    monkeypatch.setattr(scan_module.static, "summarize", flaky)
    result = scan([str(tmp_path)], Settings(), cache=None)
    assert [os.path.basename(f.path) for f in result.findings] == ["b.py"]
    assert [p.message for p in result.problems] == ["internal error in the analyzer: RecursionError: too deep"]


def test_an_open_document_replaces_its_file_in_the_workspace(tmp_path: Path, fake_analyzer: FakeAnalyzer) -> None:
    _tree(tmp_path, {"a.py": "MARK\n", "b.py": "x = 1\n"})
    workspace = analyse_files([str(tmp_path / "a.py"), str(tmp_path / "b.py")], cache=None)
    assert set(workspace.files) == {str(tmp_path / "a.py"), str(tmp_path / "b.py")}
    assert all(isinstance(a, FileAnalysis) for a in workspace.files.values())
    fake_analyzer.summarized.clear()

    typed = "x = 1\n\ny = MARK  # dynamo-lens: ignore[DL999]\nMARK  # dynamo-lens: ignore\n"
    edited = analyse_text(str(tmp_path / "b.py"), typed)
    assert isinstance(edited, FileAnalysis)
    files = {**workspace.files, edited.path: edited}
    findings, internal = link_files(files.values(), Settings())
    assert internal == ()
    assert sorted((os.path.basename(f.path), f.span.line) for f in findings) == [("a.py", 1), ("b.py", 3)]
    assert fake_analyzer.summarized == [str(tmp_path / "b.py")]  # only the edited document is re-analysed


def test_linked_cache_is_not_stale_about_unreadable_or_removed_files(
    tmp_path: Path, fake_analyzer: FakeAnalyzer, monkeypatch: pytest.MonkeyPatch
) -> None:
    _tree(tmp_path, {"a.py": "MARK\n", "locked.py": "MARK\n"})
    cache = AnalysisCache.in_root(tmp_path / "cache")
    real_read = scan_module.read_bytes
    locked = {str(tmp_path / "locked.py")}

    def read_bytes(path: str) -> bytes | scan_module.FileProblem:
        if path in locked:
            return scan_module.FileProblem(path, "cannot read: Permission denied")
        return real_read(path)

    monkeypatch.setattr(scan_module, "read_bytes", read_bytes)
    first = scan([str(tmp_path)], Settings(), cache)
    assert [p.message for p in first.problems] == ["cannot read: Permission denied"]
    assert [os.path.basename(f.path) for f in first.findings] == ["a.py"]

    (tmp_path / "locked.py").unlink()
    second = scan([str(tmp_path)], Settings(), cache)  # same readable files: served from the linked cache
    assert fake_analyzer.linked == 1
    assert second.problems == ()
    assert [os.path.basename(f.path) for f in second.findings] == ["a.py"]

    locked.clear()
    (tmp_path / "locked.py").write_text("MARK\n", encoding="utf-8")
    third = scan([str(tmp_path)], Settings(), cache)
    assert fake_analyzer.linked == 2
    assert [os.path.basename(f.path) for f in third.findings] == ["a.py", "locked.py"]


def test_settings_apply_to_the_cached_linked_result(tmp_path: Path, fake_analyzer: FakeAnalyzer) -> None:
    _tree(tmp_path, {"a.py": "MARK\nMARK  # dynamo-lens: ignore\n"})
    cache = AnalysisCache.in_root(tmp_path / "cache")
    assert [f.span.line for f in scan([str(tmp_path)], Settings(), cache).findings] == [1]
    assert scan([str(tmp_path)], Settings(ignore=("DL101",)), cache).findings == ()
    assert [f.span.line for f in scan([str(tmp_path)], Settings(), cache).findings] == [1]
    assert fake_analyzer.linked == 1


def test_a_dead_worker_does_not_lose_files(
    tmp_path: Path, fake_analyzer: FakeAnalyzer, monkeypatch: pytest.MonkeyPatch
) -> None:
    count = scan_module.PARALLEL_MIN_FILES + 10
    _tree(tmp_path, {f"m{i:03}.py": "MARK = 1\n" for i in range(count)})
    if (os.cpu_count() or 1) < 2:
        monkeypatch.setattr(os, "cpu_count", lambda: 2)
    monkeypatch.setattr(scan_module, "_analyse_chunk", _dying_chunk)
    result = scan([str(tmp_path)], Settings(), cache=None)
    assert [os.path.basename(f.path) for f in result.findings] == [f"m{i:03}.py" for i in range(count)]
    assert str(tmp_path / "m003.py") in fake_analyzer.summarized  # finished in this process


_REAL_CHUNK = scan_module._analyse_chunk


def _dying_chunk(paths: list[str], cache_dir: Path | None) -> list[bytes]:
    """A worker's unit of work that dies on the chunk holding m003.py, as if the kernel had killed it."""
    if any(p.endswith("m003.py") for p in paths):
        os._exit(1)
    return _REAL_CHUNK(paths, cache_dir)
