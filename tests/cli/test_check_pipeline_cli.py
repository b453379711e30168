"""`dynamo-lens check` driven through `main([...])` with the stand-in analyzer: flags, exit codes, streams."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scan_fakes import FakeAnalyzer

from dynamo_lens.cli import main


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "model.py").write_text("x = 1\nMARK = 2\n", encoding="utf-8")
    (tmp_path / "clean.py").write_text("y = 2\n", encoding="utf-8")
    return tmp_path


def test_findings_exit_1_and_print_relative_paths(
    project: Path, fake_analyzer: FakeAnalyzer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check"]) == 1
    out, err = capsys.readouterr()
    assert out == "pkg/model.py:2:1: DL101 marked in model.py\nFound 1 finding (1 warning) in 2 files.\n"
    assert err == ""


def test_exit_zero(project: Path, fake_analyzer: FakeAnalyzer, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--exit-zero", "."]) == 0
    assert "pkg/model.py:2:1: DL101" in capsys.readouterr().out


def test_no_findings_exit_0(project: Path, fake_analyzer: FakeAnalyzer, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "clean.py"]) == 0
    assert capsys.readouterr().out == "No findings in 1 file.\n"


def test_ignore_and_select_flags(
    project: Path, fake_analyzer: FakeAnalyzer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", "--ignore", "DL101"]) == 0
    assert main(["check", "--select", "DL2,DL3"]) == 0
    assert main(["check", "--select", "DL2", "--select", "DL1"]) == 1
    capsys.readouterr()


def test_unknown_code_is_a_usage_error(
    project: Path, fake_analyzer: FakeAnalyzer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", "--select", "DL1,BOGUS"]) == 2
    assert "unknown code or prefix 'BOGUS'" in capsys.readouterr().err


def test_unknown_format_is_a_usage_error(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--format", "xml"]) == 2
    assert "invalid choice: 'xml'" in capsys.readouterr().err


def test_missing_path_exits_2_after_checking_the_rest(
    project: Path, fake_analyzer: FakeAnalyzer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", "nope.py", "pkg"]) == 2
    out, err = capsys.readouterr()
    assert "pkg/model.py:2:1: DL101" in out
    assert err == "dynamo-lens: nope.py: no such file or directory\n"


def test_bad_files_are_messages_not_exit_2(
    project: Path, fake_analyzer: FakeAnalyzer, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "broken.py").write_text("def f(:\n", encoding="utf-8")
    (project / "blob.py").write_bytes(b"\x00\x00")
    assert main(["check"]) == 1
    out, err = capsys.readouterr()
    assert err.splitlines() == [
        "dynamo-lens: blob.py: binary file (contains NUL bytes); skipped",
        "dynamo-lens: broken.py: SyntaxError: invalid syntax (line 1)",
    ]
    assert "pkg/model.py:2:1: DL101" in out


def test_pyproject_settings_apply(
    project: Path, fake_analyzer: FakeAnalyzer, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "pyproject.toml").write_text(
        '[tool.dynamo-lens]\nextend-exclude = ["pkg/"]\nbogus = 1\n', encoding="utf-8"
    )
    assert main(["check"]) == 0
    err = capsys.readouterr().err
    assert "dynamo-lens: warning: " in err and "unknown setting 'bogus'" in err
    (project / "pyproject.toml").write_text('[tool.dynamo-lens]\nignore = ["DL101"]\n', encoding="utf-8")
    assert main(["check"]) == 0
    # The command line replaces the configured list.
    assert main(["check", "--ignore", "DL2"]) == 1
    (project / "pyproject.toml").write_text('[tool.dynamo-lens.severity]\nDL101 = "error"\n', encoding="utf-8")
    capsys.readouterr()
    assert main(["check", "--format", "json"]) == 1
    assert [f["severity"] for f in json.loads(capsys.readouterr().out)["findings"]] == ["error"]


def test_cache_is_used_unless_no_cache(project: Path, fake_analyzer: FakeAnalyzer, cache_home: Path) -> None:
    assert main(["check", "--no-cache"]) == 1
    assert not (cache_home / "dynamo-lens").exists()
    assert len(fake_analyzer.summarized) == 2
    assert main(["check"]) == 1
    assert len(fake_analyzer.summarized) == 4
    assert main(["check"]) == 1
    assert len(fake_analyzer.summarized) == 4  # every file came from the cache
    assert (cache_home / "dynamo-lens").is_dir()
    assert main(["check", "--no-cache"]) == 1
    assert len(fake_analyzer.summarized) == 6


def test_formats(project: Path, fake_analyzer: FakeAnalyzer, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--format", "json"]) == 1
    document = json.loads(capsys.readouterr().out)
    assert [(f["path"], f["line"], f["code"]) for f in document["findings"]] == [("pkg/model.py", 2, "DL101")]
    assert main(["check", "--format", "sarif"]) == 1
    sarif = json.loads(capsys.readouterr().out)
    result = sarif["runs"][0]["results"][0]
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "pkg/model.py"
    assert result["locations"][0]["physicalLocation"]["region"]["startLine"] == 2


def test_internal_error_exits_2_with_a_message(
    project: Path, fake_analyzer: FakeAnalyzer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import dynamo_lens.scan

    def explode(*args: object) -> object:
        raise RuntimeError("discovery bug")

    monkeypatch.setattr(dynamo_lens.scan, "discover", explode)
    assert main(["check"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("dynamo-lens: internal error, please report it:")
    assert "RuntimeError: discovery bug" in err


def test_hints_are_counted_but_shown_only_on_request(
    project: Path, fake_analyzer: FakeAnalyzer, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "pkg" / "model.py").write_text("x = 1\ny = 'HINT'\n", encoding="utf-8")
    assert main(["check"]) == 0
    assert capsys.readouterr().out == "No findings in 2 files. 1 hint not shown (--show-hints).\n"
    assert main(["check", "--show-hints"]) == 0  # shown, but a hint never fails a check
    out = capsys.readouterr().out
    assert out == "pkg/model.py:2:6: DL001 marked in model.py\nFound 1 finding (1 hint) in 2 files.\n"
    assert main(["check", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["findings"] == []
