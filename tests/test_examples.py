"""The bundled examples/ say what they claim: the static scan finds exactly their hazards, at their lines, and a
real run (torch 2.13, ``backend="eager"``) observes the same hazards there.

Lines are looked up from the examples' own text (each snippet must occur once), so the tests follow the files;
the expected codes are what each example's docstring says it demonstrates.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest

from dynamo_lens.cli import main

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
COUNTER = "examples/recompiling_counter.py"
HOOK = "examples/silent_hook_after_compile.py"
BREAKS = "examples/split_graph_breaks.py"
MODEL = "examples/training_project/model.py"
TRAIN = "examples/training_project/train.py"


def line_of(path: str, snippet: str) -> int:
    """The 1-based line of the one line of ``path`` (relative to the repository) after its module docstring that
    contains ``snippet``."""
    source = (REPO / path).read_text(encoding="utf-8")
    docstring = ast.parse(source).body[0]
    assert isinstance(docstring, ast.Expr), f"{path} starts with a docstring"
    body = source.splitlines()[docstring.end_lineno or 0 :]
    lines = [n for n, text in enumerate(body, (docstring.end_lineno or 0) + 1) if snippet in text]
    assert len(lines) == 1, f"{snippet!r} is on lines {lines} of {path}, expected exactly one"
    return lines[0]


def findings(capsys: pytest.CaptureFixture[str], argv: list[str]) -> list[dict[str, Any]]:
    """The findings of one in-process CLI call with ``--format json``."""
    capsys.readouterr()
    main(argv)
    document = json.loads(capsys.readouterr().out)
    assert document["schema"] == "dynamo-lens.findings"
    found: list[dict[str, Any]] = document["findings"]
    return found


@pytest.fixture
def in_repo(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Paths relative to the repository, and a private analysis cache."""
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


EXPECTED_STATIC = {
    (COUNTER, "DL101", "self.steps += 1"),
    (COUNTER, "DL301", "logits.abs().mean().item()"),
    (HOOK, "DL401", "model.encoder.register_forward_hook("),
    (BREAKS, "DL302", "if scores.abs().amax() > self.clip:"),
    (BREAKS, "DL301", 'print(f"gate mean'),
    (MODEL, "DL101", "self.step += 1"),
    (MODEL, "DL102", "self.history.append("),
    (TRAIN, "DL111", "model.temperature = "),
    (TRAIN, "DL112", "model.eval()"),
    (TRAIN, "DL208", "val = nn.functional.cross_entropy(compiled(tokens), targets)"),
}
"""(file, code, a snippet of the flagged line): every finding `dynamo-lens check examples/` reports (hints aside)."""


@pytest.mark.usefixtures("in_repo")
def test_check_finds_exactly_the_examples_hazards_at_their_lines(capsys: pytest.CaptureFixture[str]) -> None:
    found = findings(capsys, ["check", "examples/", "--format", "json", "--exit-zero", "--no-cache"])
    assert {(f["path"], f["code"], f["line"]) for f in found} == {
        (path, code, line_of(path, snippet)) for path, code, snippet in EXPECTED_STATIC
    }
    assert {f["path"]: f["severity"] for f in found if f["code"] in {"DL101", "DL102", "DL301", "DL302", "DL401"}} == {
        COUNTER: "warning",
        HOOK: "warning",
        BREAKS: "warning",
        MODEL: "warning",
    }


@pytest.mark.usefixtures("in_repo")
def test_model_hazards_are_warnings_because_train_py_compiles_the_model(capsys: pytest.CaptureFixture[str]) -> None:
    """The cross-file link: train.py's compile site reaches TinyLM.forward and its helper in model.py."""
    found = findings(capsys, ["check", "examples/training_project", "--format", "json", "--show-hints", "--no-cache"])
    site = line_of(TRAIN, "torch.compile(model")
    in_model = [f for f in found if f["path"] == MODEL]
    assert {f["code"] for f in in_model} == {"DL101", "DL102"}
    paths = {
        "DL101": "compiled here → `TinyLM.forward`",
        "DL102": "compiled here → `TinyLM.forward` → `TinyLM._sharpen`",
    }
    for finding in in_model:
        assert finding["severity"] == "warning"
        related = {(r["path"], r["line"], r["message"]) for r in finding["related"]}
        assert related >= {(TRAIN, site, paths[finding["code"]])}
    (compile_site,) = [f for f in found if f["code"] == "DL001"]
    assert (compile_site["path"], compile_site["line"]) == (TRAIN, site)
    assert "`TinyLM` module" in str(compile_site["message"])
    assert [(r["path"], r["line"]) for r in compile_site["related"]] == [(MODEL, line_of(MODEL, "class TinyLM("))]


def run_findings(capfd: pytest.CaptureFixture[str], script: str, report: Path) -> tuple[list[dict[str, Any]], str]:
    """The runtime findings of ``dynamo-lens run --format json SCRIPT``, and the script's own output."""
    assert main(["run", "--format", "json", "--report", str(report), "--timeout", "240", script]) == 0
    captured = capfd.readouterr()
    document = json.loads(captured.out)  # with --format json the script's prints go to stderr
    found: list[dict[str, Any]] = document["findings"]
    return found, captured.err


@pytest.mark.slow
@pytest.mark.usefixtures("in_repo")
def test_training_project_run_confirms_the_static_findings(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    found, output = run_findings(capfd, TRAIN, tmp_path / "run.json")
    assert "epoch 2  loss" in output
    counter = line_of(MODEL, "self.step += 1")
    train_call = line_of(TRAIN, "loss = nn.functional.cross_entropy(compiled(tokens), targets)")
    eval_call = line_of(TRAIN, "val = nn.functional.cross_entropy(compiled(tokens), targets)")
    assert {(f["path"], f["code"], f["line"]) for f in found} == {
        (MODEL, "DL501", counter),  # the counter's guard fails on every call ...
        (TRAIN, "DL501", train_call),  # ... the grad mode changes back after each no_grad evaluation
        (TRAIN, "DL502", train_call),  # the 9th call (epoch 2's first step) hits the limit: eager from then on
        (TRAIN, "DL501", eval_call),  # evaluation under no_grad
    }
    # Every runtime finding lands on a static one (same line, or a line it names as related) of a code it confirms.
    confirms = {(f["path"], f["code"], f["line"]): f["data"].get("confirms") for f in found}
    assert confirms[(MODEL, "DL501", counter)] == ["DL101"]
    assert confirms[(TRAIN, "DL501", eval_call)] == ["DL208"]
    for code in ("DL501", "DL502"):  # the loop's mode and temperature changes: static findings on lines of this loop
        assert confirms[(TRAIN, code, train_call)]
        assert set(confirms[(TRAIN, code, train_call)]) <= {"DL111", "DL112", "DL208"}
    # The hazards the counter masks (its guard is checked first) are in the compiled entries' guards (run report v1).
    (frame,) = json.loads((tmp_path / "run.json").read_text())["frames"]
    entries = [e["guards"] for e in frame["cache_entries"] if e["status"] == "ok"]
    assert len(entries) == 8

    def guarded(source: str, kind: str) -> list[list[str]]:
        return [[g["text"] for g in guards if g["source"] == source and g["kind"] == kind] for guards in entries]

    history = guarded("L['self'].history", "LENGTH_CHECK")
    assert all(history) and len({tuple(texts) for texts in history}) == 8  # DL102: a new length every call
    temperature = guarded("L['self'].temperature", "EQUALS_MATCH")
    assert temperature[0] == ["self.temperature == 1.0"] and temperature[-1] == []  # DL111: one recompile, then dynamic
    drop = "L['self'].__dict__['_modules']['drop'].training"  # DL112: the Dropout's mode, 3 train calls then eval
    modes = [[g["kind"] for g in guards if g["source"] == drop] for guards in entries]
    assert modes == 2 * ([["TRUE_MATCH"]] * 3 + [["FALSE_MATCH"]])


@pytest.mark.slow
@pytest.mark.usefixtures("in_repo")
def test_graph_break_example_breaks_where_the_scan_says(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    found, _ = run_findings(capfd, BREAKS, tmp_path / "run.json")
    branch = line_of(BREAKS, "if scores.abs().amax() > self.clip:")
    log = line_of(BREAKS, 'print(f"gate mean')
    assert {(f["code"], f["line"], tuple(f["data"]["confirms"])) for f in found} == {
        ("DL503", branch, ("DL302",)),
        ("DL503", log, ("DL301",)),
    }


@pytest.mark.slow
@pytest.mark.usefixtures("in_repo")
def test_hook_example_is_silently_ignored_without_a_recompile(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    found, output = run_findings(capfd, HOOK, tmp_path / "run.json")
    assert found == []  # nothing recompiles or breaks: that is what makes DL401 silent
    assert "compiled: the encoder hook fired 0 times in 5 calls" in output
    assert "eager:    the encoder hook fired 5 times in 5 calls" in output
