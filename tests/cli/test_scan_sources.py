"""Reading files for the scan: every kind of bad file becomes a message, never an exception."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dynamo_lens.scan_sources import FileProblem, decode_source, read_bytes


def test_utf8_with_and_without_bom(tmp_path: Path) -> None:
    assert decode_source("a.py", "x = 'é'\n".encode()) == "x = 'é'\n"
    assert decode_source("a.py", b"\xef\xbb\xbfx = 1\n") == "x = 1\n"


def test_declared_encoding_is_honoured() -> None:
    data = "# -*- coding: latin-1 -*-\nname = 'café'\n".encode("latin-1")
    assert decode_source("a.py", data) == "# -*- coding: latin-1 -*-\nname = 'café'\n"


def test_invalid_utf8_is_located() -> None:
    problem = decode_source("a.py", b"x = 1\ny = '\xe9t\xe9'\n")
    assert isinstance(problem, FileProblem)
    assert (problem.line, problem.column) == (2, 6)
    assert "not valid UTF-8 (byte 0xe9)" in problem.message


def test_unknown_declared_encoding() -> None:
    problem = decode_source("a.py", b"# coding: klingon\nx = '\xff'\n")
    assert isinstance(problem, FileProblem)
    assert "declared encoding 'klingon'" in problem.message


def test_binary_is_skipped() -> None:
    problem = decode_source("a.py", b"\x7fELF\x02\x01\x00\x00")
    assert isinstance(problem, FileProblem)
    assert problem.message.startswith("binary file")


def test_fifo_and_directory_are_not_regular_files(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.py"
    os.mkfifo(fifo)
    (tmp_path / "dir.py").mkdir()
    for path in (fifo, tmp_path / "dir.py"):
        problem = read_bytes(str(path))
        assert isinstance(problem, FileProblem)
        assert problem.message == "not a regular file; skipped"


def test_unreadable_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Tests run as root, for whom chmod 000 changes nothing: make open() fail the way it does for other users.
    target = tmp_path / "secret.py"
    target.write_text("x = 1\n", encoding="utf-8")
    real_open = open

    def deny(file: object, *args: object, **kwargs: object) -> object:
        if str(file) == str(target):
            raise PermissionError(13, "Permission denied", str(file))
        return real_open(file, *args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr("builtins.open", deny)
    problem = read_bytes(str(target))
    assert problem == FileProblem(str(target), "cannot read: Permission denied", reason="unreadable")


def test_vanished_file(tmp_path: Path) -> None:
    problem = read_bytes(str(tmp_path / "gone.py"))
    assert isinstance(problem, FileProblem)
    assert problem.message == "cannot read: No such file or directory"
