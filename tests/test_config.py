"""Settings: `[tool.dynamo-lens]` in pyproject.toml, editor settings, and command-line overrides."""

from __future__ import annotations

from pathlib import Path

import pytest

from dynamo_lens.config import Settings, find_pyproject, load_settings
from dynamo_lens.model import Finding, Severity, Span


def _finding(code: str, severity: Severity = Severity.WARNING) -> Finding:
    return Finding(code=code, severity=severity, span=Span("m.py", 3, 5, 3, 9), message="m")


def _write(tmp_path: Path, text: str) -> Path:
    (tmp_path / "pyproject.toml").write_text(text, encoding="utf-8")
    return tmp_path


def test_defaults_report_every_code_at_its_severity() -> None:
    settings = Settings()
    assert settings.is_enabled("DL101")
    assert settings.is_enabled("DL301")
    assert settings.severity_of(_finding("DL101")) is Severity.WARNING


@pytest.mark.parametrize(
    ("select", "ignore", "code", "enabled"),
    [
        pytest.param(("DL1",), (), "DL101", True, id="prefix selects"),
        pytest.param(("DL1",), (), "DL204", False, id="not selected"),
        pytest.param((), ("DL101",), "DL101", False, id="ignored"),
        pytest.param((), ("DL2",), "DL101", True, id="other prefix ignored"),
        pytest.param(("DL101",), ("DL1",), "DL101", True, id="longer select beats shorter ignore"),
        pytest.param(("DL1",), ("DL101",), "DL101", False, id="longer ignore beats shorter select"),
        pytest.param(("DL1",), ("DL1",), "DL101", False, id="ignore wins a tie"),
        pytest.param(("ALL",), ("DL3",), "DL301", False, id="ALL then ignore"),
    ],
)
def test_select_and_ignore(select: tuple[str, ...], ignore: tuple[str, ...], code: str, enabled: bool) -> None:
    assert Settings(select=select, ignore=ignore).is_enabled(code) is enabled


def test_pyproject_table_is_read(tmp_path: Path) -> None:
    root = _write(
        tmp_path,
        """
[project]
name = "x"

[tool.dynamo-lens]
select = ["DL1", "DL204"]
ignore = ["dl101"]
extend-exclude = ["scratch/"]

[tool.dynamo-lens.severity]
DL204 = "error"
""",
    )
    loaded = load_settings(root)
    assert loaded.problems == ()
    settings = loaded.settings
    assert settings.select == ("DL1", "DL204")
    assert settings.ignore == ("DL101",)
    assert settings.exclude == ("scratch/",)
    assert settings.root == tmp_path
    assert settings.severity_of(_finding("DL204")) is Severity.ERROR
    assert not settings.is_enabled("DL101")


def test_nearest_pyproject_with_the_table_wins(tmp_path: Path) -> None:
    _write(tmp_path, '[tool.dynamo-lens]\nignore = ["DL204"]\n')
    inner = tmp_path / "pkg" / "sub"
    inner.mkdir(parents=True)
    (tmp_path / "pkg" / "pyproject.toml").write_text('[project]\nname = "no-table"\n', encoding="utf-8")
    assert find_pyproject(inner) == tmp_path / "pyproject.toml"
    assert load_settings(inner).settings.ignore == ("DL204",)


def test_no_pyproject_gives_defaults_rooted_at_start(tmp_path: Path) -> None:
    loaded = load_settings(tmp_path)
    assert loaded.settings == Settings(root=tmp_path)
    assert loaded.problems == ()


@pytest.mark.parametrize(
    ("table", "expected_problem"),
    [
        pytest.param('select = "DL1"\nbogus = 1', "unknown setting 'bogus'", id="unknown key"),
        pytest.param("select = [1, 2]", "select must be a list of strings", id="select not strings"),
        pytest.param('ignore = ["XX9"]', "unknown code or prefix 'XX9'", id="unknown code"),
        pytest.param('respect-gitignore = "yes"', "respect-gitignore must be true or false", id="bad bool"),
        pytest.param('severity = "loud"', "severity must be a table", id="severity not a table"),
        pytest.param('[tool.dynamo-lens.severity]\nDL101 = "loud"', "is not one of error, warning", id="bad level"),
        pytest.param(
            'torch-version = "latest"', 'torch-version: expected a torch release such as "2.14"', id="release"
        ),
    ],
)
def test_bad_values_are_reported_and_defaults_used(tmp_path: Path, table: str, expected_problem: str) -> None:
    header = "" if table.startswith("[tool") else "[tool.dynamo-lens]\n"
    loaded = load_settings(_write(tmp_path, header + table + "\n"))
    assert any(expected_problem in p for p in loaded.problems), loaded.problems
    assert all(p.startswith(str(tmp_path / "pyproject.toml")) for p in loaded.problems)
    assert loaded.settings.severity_of(_finding("DL101")) is Severity.WARNING


def test_broken_toml_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    loaded = load_settings(_write(tmp_path, "[tool.dynamo-lens\nselect = \n"))
    assert len(loaded.problems) == 1
    assert "cannot read settings" in loaded.problems[0]
    assert loaded.settings.select == ()


def test_editor_settings_use_camel_case() -> None:
    loaded = Settings.from_mapping(
        {"select": ["DL1"], "extendExclude": ["gen/"], "respectGitignore": False, "severity": {"DL101": "hint"}}
    )
    assert loaded.problems == ()
    assert loaded.settings.exclude == ("gen/",)
    assert loaded.settings.respect_gitignore is False
    assert loaded.settings.severity_of(_finding("DL101")) is Severity.HINT


def test_severity_override_keeps_analyzer_downgrades() -> None:
    settings = Settings(severity={"DL101": Severity.ERROR})
    assert settings.severity_of(_finding("DL101", Severity.WARNING)) is Severity.ERROR
    # A hint (nothing compiles the code) stays a hint under a louder override...
    assert settings.severity_of(_finding("DL101", Severity.HINT)) is Severity.HINT
    # ...and a quieter override still applies to it.
    quiet = Settings(severity={"DL101": Severity.HINT})
    assert quiet.severity_of(_finding("DL101", Severity.INFO)) is Severity.HINT


def test_apply_filters_and_overrides() -> None:
    settings = Settings(ignore=("DL204",), severity={"DL101": Severity.ERROR})
    out = settings.apply([_finding("DL101"), _finding("DL204")])
    assert [(f.code, f.severity) for f in out] == [("DL101", Severity.ERROR)]


def test_command_line_overrides_replace_configured_lists() -> None:
    base = Settings(select=("DL2",), ignore=("DL204",))
    loaded = base.with_overrides(select=["DL101", "dl3"], ignore=None)
    assert loaded.problems == ()
    assert loaded.settings.select == ("DL101", "DL3")
    assert loaded.settings.ignore == ("DL204",)
    bad = base.with_overrides(select=["NOPE"])
    assert bad.problems and "unknown code or prefix 'NOPE'" in bad.problems[0]
    assert "ignored" not in bad.problems[0]  # on the command line it stops the check: saying "ignored" would lie


def test_an_unknown_code_in_the_settings_file_is_ignored_and_says_so(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.dynamo-lens]\nignore = ["XX9", "DL101"]\n', encoding="utf-8")
    loaded = load_settings(tmp_path)
    assert loaded.settings.ignore == ("DL101",)
    assert loaded.problems[0].endswith("unknown code or prefix 'XX9' (`dynamo-lens explain` lists them); ignored")
