"""File discovery: which files `check` analyses when given directories."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dynamo_lens.config import Settings
from dynamo_lens.discovery import discover
from dynamo_lens.discovery_patterns import PathRules, parse_patterns


def _touch(root: Path, *relative: str) -> None:
    for name in relative:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x = 1\n", encoding="utf-8")


def _found(root: Path, settings: Settings | None = None, *paths: str) -> list[str]:
    settings = settings or Settings(root=root)
    result = discover([str(root / p) for p in paths] or [str(root)], settings)
    return [os.path.relpath(f, root) for f in result.files]


def test_walk_skips_tool_directories_and_virtualenvs(tmp_path: Path) -> None:
    _touch(
        tmp_path,
        "model.py",
        "stubs/types.pyi",
        "pkg/sub/train.py",
        "README.md",
        "pkg/data.txt",
        ".git/hooks/hook.py",
        ".venv/lib/x.py",
        "venv/lib/x.py",
        "env_custom/lib/x.py",
        "node_modules/pkg/x.py",
        "pkg/__pycache__/x.py",
        "build/lib/x.py",
        "dist/x.py",
        "lib/site-packages/x.py",
    )
    (tmp_path / "env_custom" / "pyvenv.cfg").write_text("home = /usr\n", encoding="utf-8")
    assert _found(tmp_path) == ["model.py", "pkg/sub/train.py", "stubs/types.pyi"]


def test_gitignore_is_respected_and_negation_reincludes(tmp_path: Path) -> None:
    _touch(tmp_path, "keep.py", "generated/a.py", "gen_b.py", "gen_keep.py", "sub/local.py", "sub/other.py")
    (tmp_path / ".gitignore").write_text("# comment\n/generated/\ngen_*.py\n!gen_keep.py\n", encoding="utf-8")
    (tmp_path / "sub" / ".gitignore").write_text("local.py\n", encoding="utf-8")
    assert _found(tmp_path) == ["gen_keep.py", "keep.py", "sub/other.py"]
    everything = _found(tmp_path, Settings(root=tmp_path, respect_gitignore=False))
    assert everything == ["gen_b.py", "gen_keep.py", "generated/a.py", "keep.py", "sub/local.py", "sub/other.py"]


def test_gitignore_of_enclosing_repository_applies_to_a_subdirectory(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("*_pb2.py\n", encoding="utf-8")
    _touch(tmp_path, "src/model.py", "src/model_pb2.py")
    assert _found(tmp_path / "src") == ["model.py"]


def test_git_info_exclude_applies(tmp_path: Path) -> None:
    (tmp_path / ".git" / "info").mkdir(parents=True)
    (tmp_path / ".git" / "info" / "exclude").write_text("local_*.py\n", encoding="utf-8")
    (tmp_path / ".gitignore").write_text("!local_keep.py\n", encoding="utf-8")
    _touch(tmp_path, "a.py", "local_tmp.py", "local_keep.py", "sub/local_x.py")
    assert _found(tmp_path) == ["a.py", "local_keep.py"]
    assert _found(tmp_path / "sub") == []


def test_exclude_setting_is_relative_to_settings_root(tmp_path: Path) -> None:
    _touch(tmp_path, "a.py", "third_party/b.py", "pkg/third_party/c.py", "scratch_1.py")
    settings = Settings(root=tmp_path, exclude=("/third_party/", "scratch_*.py"))
    assert _found(tmp_path, settings) == ["a.py", "pkg/third_party/c.py"]


def test_explicit_files_are_always_analysed(tmp_path: Path) -> None:
    _touch(tmp_path, ".venv/lib/x.py", "notes.txt", "ignored.py")
    (tmp_path / ".gitignore").write_text("ignored.py\n", encoding="utf-8")
    settings = Settings(root=tmp_path, exclude=("ignored.py",))
    found = _found(tmp_path, settings, ".venv/lib/x.py", "notes.txt", "ignored.py")
    assert found == [".venv/lib/x.py", "ignored.py", "notes.txt"]


def test_symlink_loops_end_and_each_directory_is_walked_once(tmp_path: Path) -> None:
    _touch(tmp_path, "pkg/a.py")
    os.symlink(tmp_path / "pkg", tmp_path / "pkg" / "loop")
    os.symlink(tmp_path, tmp_path / "pkg" / "up")
    os.symlink(tmp_path / "missing", tmp_path / "dangling.py")
    assert _found(tmp_path) == ["pkg/a.py"]


def test_missing_arguments_are_reported(tmp_path: Path) -> None:
    _touch(tmp_path, "a.py")
    result = discover([str(tmp_path / "a.py"), str(tmp_path / "nope.py")], Settings(root=tmp_path))
    assert [os.path.basename(f) for f in result.files] == ["a.py"]
    assert result.missing == (str(tmp_path / "nope.py"),)


def test_unlistable_directory_is_a_problem(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _touch(tmp_path, "a.py", "locked/b.py")
    real_scandir = os.scandir

    def scandir(path: str) -> object:
        if str(path).endswith("locked"):
            raise PermissionError(13, "Permission denied")
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    result = discover([str(tmp_path)], Settings(root=tmp_path))
    assert [os.path.relpath(f, tmp_path) for f in result.files] == ["a.py"]
    assert result.problems == ((str(tmp_path / "locked"), "Permission denied"),)


@pytest.mark.parametrize(
    ("pattern", "path", "is_dir", "ignored"),
    [
        pytest.param("*.py", "a/b/c.py", False, True, id="unanchored matches at any depth"),
        pytest.param("/c.py", "a/c.py", False, False, id="leading slash anchors"),
        pytest.param("a/c.py", "a/c.py", False, True, id="inner slash anchors"),
        pytest.param("a/c.py", "x/a/c.py", False, False, id="anchored does not match deeper"),
        pytest.param("build/", "x/build", False, False, id="dir-only pattern skips files"),
        pytest.param("build/", "x/build", True, True, id="dir-only pattern matches dirs"),
        pytest.param("**/gen/*.py", "a/b/gen/x.py", False, True, id="leading double star"),
        pytest.param("a/**/x.py", "a/x.py", False, True, id="middle double star matches zero dirs"),
        pytest.param("a/**", "a/b/c", False, True, id="trailing double star"),
        pytest.param("file?.py", "file1.py", False, True, id="question mark"),
        pytest.param("file[0-9].py", "filex.py", False, False, id="character class"),
        pytest.param("file[!0-9].py", "filex.py", False, True, id="negated character class"),
    ],
)
def test_patterns(pattern: str, path: str, is_dir: bool, ignored: bool) -> None:
    base = "/base"
    rules = PathRules(tuple(parse_patterns([pattern], base)))
    assert rules.is_ignored(f"{base}/{path}", is_dir) is ignored
