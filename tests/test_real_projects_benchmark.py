"""``benchmarks/real_projects.py`` end to end on a one-project corpus built from a fake bare git mirror."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "real_projects.py"

MODEL = """\
import torch
from torch import nn


class Counter(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.steps = 0

    def forward(self, x):
        self.steps += 1
        y = self.lin(x)
        print("scale", y.abs().mean().item())
        self.last = y.sum().item()
        return y
"""
TRAIN = """\
import torch

from model import Counter

model = torch.compile(Counter())
for _ in range(10):
    model(torch.randn(2, 4))
"""
# Excluded by the project's `scratch/**`: its own compiled counter must not be reported.
SCRATCH = (
    TRAIN + "\n\nclass Other(torch.nn.Module):\n    def forward(self, x):\n        self.n += 1\n        return x\n"
)

CORPUS_ENTRY = """\
name = "counter"
repository = "acme/counter"
commit = "{commit}"
kind = "a test project"
exclude = ["scratch/**"]

[[finding]]
code = "DL101"
path = "model.py"
line = 12
verdict = "true"
why = "forward of Counter, compiled in train.py, bumps an int attribute: a recompile per call"

[[finding]]
code = "DL301"
path = "model.py"
line = 14
verdict = "false"
why = "pretend the print is fine"

[[finding]]
code = "DL301"
path = "train.py"
line = 7
verdict = "false"
why = "a verdict on a finding that no longer exists"

[[hazard]]
code = "DL102"
path = "model.py"
line = 13
why = "a hazard the tool does not see"

[[hazard]]
code = "new"
path = "train.py"
line = 6
why = "a hazard no check covers yet"
"""


@dataclass(frozen=True)
class Setup:
    corpus: Path
    mirrors: Path
    home: Path
    commit: str

    @property
    def extracted(self) -> Path:
        return self.home / ".cache" / "dynamo-lens" / "corpus" / f"counter@{self.commit[:12]}"


def git(*args: str, cwd: Path) -> str:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    identity = ["-c", "user.name=Test", "-c", "user.email=test@example.com", "-c", "commit.gpgsign=false"]
    done = subprocess.run(["git", *identity, *args], cwd=cwd, env=env, capture_output=True, text=True, check=True)
    return done.stdout.strip()


@pytest.fixture
def corpus(tmp_path: Path) -> Setup:
    """A bare mirror of a two-file project (plus an excluded file and a README) and a corpus describing it."""
    work = tmp_path / "work"
    (work / "scratch").mkdir(parents=True)
    (work / "model.py").write_text(MODEL, encoding="utf-8")
    (work / "train.py").write_text(TRAIN, encoding="utf-8")
    (work / "scratch" / "other.py").write_text(SCRATCH, encoding="utf-8")
    (work / "README.md").write_text("not Python\n", encoding="utf-8")
    (work / "big.py").write_text("# stands for a file of 4 MiB or more, which mirrors leave out\n", encoding="utf-8")
    git("init", "-q", "-b", "main", cwd=work)
    git("add", ".", cwd=work)
    git("commit", "-q", "-m", "two files", cwd=work)
    commit = git("rev-parse", "HEAD", cwd=work)
    mirrors = tmp_path / "mirrors"
    bare = mirrors / "acme+counter" / "repo"
    bare.mkdir(parents=True)
    git("init", "-q", "--bare", cwd=bare)
    git("push", "-q", str(bare), "main", cwd=work)
    big = git("rev-parse", "HEAD:big.py", cwd=work)
    (bare / "objects" / big[:2] / big[2:]).unlink()  # a push this small arrives as loose objects

    entries = tmp_path / "corpus"
    entries.mkdir()
    (entries / "counter.toml").write_text(CORPUS_ENTRY.format(commit=commit), encoding="utf-8")
    home = tmp_path / "home"
    home.mkdir()
    return Setup(entries, mirrors, home, commit)


def run(setup: Setup, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "DYNAMO_LENS_MIRRORS": str(setup.mirrors),
        "HOME": str(setup.home),
        "XDG_CACHE_HOME": str(setup.home / ".cache"),
    }
    command = [sys.executable, str(SCRIPT), "--corpus", str(setup.corpus), *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)


def result(setup: Setup, *args: str) -> dict[str, Any]:
    done = run(setup, "--json", *args)
    assert done.returncode == 0, done.stderr
    document: dict[str, Any] = json.loads(done.stdout)
    return document


def test_precision_recall_and_lists(corpus: Setup) -> None:
    document = result(corpus)
    assert document["skipped"] == {}
    [project] = document["projects"]
    assert project["files"] == 2  # model.py and train.py; scratch/** excluded, README.md not Python
    assert project["absent"] == ["big.py"]
    assert project["compile_sites"] == 1
    # DL101 judged true; DL301 at line 14 (two findings, one key) judged false; DL301 at line 15 unjudged.
    assert (project["true"], project["false"]) == (1, 1)
    assert document["precision"] == pytest.approx(0.5)
    assert [(f["code"], f["path"], f["line"]) for f in project["unjudged"]] == [("DL301", "model.py", 15)]
    # Recorded: the DL101 finding judged true (found) and the DL102 hazard (missed); "new" is apart.
    assert [h["code"] for h in project["found"]] == ["DL101"]
    assert [h["code"] for h in project["missed"]] == ["DL102"]
    assert [h["path"] for h in project["needs_new_check"]] == ["train.py"]
    assert document["recall"] == pytest.approx(0.5)
    assert [(g["verdict"]["path"], g["verdict"]["line"]) for g in project["gone"]] == [("train.py", 7)]
    assert not any(f["path"].startswith("scratch/") for f in project["unjudged"])


def test_table_lists_the_unjudged_and_warns(corpus: Setup) -> None:
    done = run(corpus, "-v")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "precision 1/2 = 50.0%" in out
    assert "recall    1/2 = 50.0%" in out
    assert "precision is provisional: 1 warning/info findings have no verdict" in out
    assert "counter: DL301 model.py:15 warning: " in out
    assert "counter: DL102 model.py:13 (hazard): a hazard the tool does not see" in out
    assert "counter: new train.py:6 (hazard)" in out
    assert "counter: DL301 train.py:7 judged false, not reported: good news" in out
    assert "note: counter: 1 files absent from the mirror, not checked: big.py" in out


def test_extraction_is_reused_and_redone_when_interrupted(corpus: Setup) -> None:
    root = corpus.extracted
    assert result(corpus)["projects"][0]["extracted"] is True
    assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*.py")) == ["model.py", "train.py"]
    assert result(corpus)["projects"][0]["extracted"] is False
    (root / ".dynamo-lens-corpus.json").unlink()  # as if the last run was interrupted before the marker
    (root / "model.py").write_text("half written", encoding="utf-8")
    again = result(corpus, "--cold")
    assert again["projects"][0]["extracted"] is True
    assert again["projects"][0]["true"] == 1
    assert (root / "model.py").read_text(encoding="utf-8") == MODEL


def test_a_bad_verdict_is_one_line_naming_the_file(corpus: Setup) -> None:
    entry = corpus.corpus / "counter.toml"
    entry.write_text(entry.read_text(encoding="utf-8").replace('verdict = "true"', "verdict = true"), encoding="utf-8")
    done = run(corpus)
    assert done.returncode == 2
    [line] = done.stderr.splitlines()
    assert str(entry) in line
    assert "DL101 model.py:12" in line
    assert 'write "true" or "false"' in line


def test_a_duplicate_entry_is_rejected(corpus: Setup) -> None:
    entry = corpus.corpus / "counter.toml"
    hazard = '\n[[hazard]]\ncode = "DL101"\npath = "model.py"\nline = 12\nwhy = "again"\n'
    entry.write_text(entry.read_text(encoding="utf-8") + hazard, encoding="utf-8")
    done = run(corpus)
    assert done.returncode == 2
    assert "DL101 model.py:12 is recorded twice" in done.stderr


def test_a_missing_mirror_names_the_fetch_and_exits_2(corpus: Setup, tmp_path: Path) -> None:
    done = run(replace(corpus, mirrors=tmp_path / "nowhere"))
    assert done.returncode == 2
    assert "fetch github:acme/counter" in done.stderr


def test_a_record_in_an_excluded_file_exits_2(corpus: Setup) -> None:
    entry = corpus.corpus / "counter.toml"
    hazard = '\n[[hazard]]\ncode = "DL101"\npath = "scratch/other.py"\nline = 12\nwhy = "excluded"\n'
    entry.write_text(entry.read_text(encoding="utf-8") + hazard, encoding="utf-8")
    done = run(corpus)
    assert done.returncode == 2
    assert "counter: DL101 scratch/other.py:12 names a file that is not checked" in done.stderr
    assert "recall    1/3 = 33.3%" in done.stdout
