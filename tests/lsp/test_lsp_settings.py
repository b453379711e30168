"""settings.py: camelCase editor settings, bad values reported and replaced by defaults, editor over pyproject."""

from __future__ import annotations

from pathlib import Path

from dynamo_lens.lsp.settings import ServerSettings, effective_rules, parse_settings
from dynamo_lens.model import Severity


def test_every_key_parsed() -> None:
    settings, problems = parse_settings(
        {
            "interpreter": "/usr/bin/python3",
            "runTimeout": 30,
            "enableStatic": False,
            "enableRuntime": False,
            "trusted": False,
            "debounceMs": 0,
            "select": ["DL1"],
        }
    )
    assert problems == []
    assert settings == ServerSettings(
        interpreter="/usr/bin/python3",
        run_timeout=30.0,
        enable_static=False,
        enable_runtime=False,
        trusted=False,
        debounce_ms=0,
        rules={"select": ["DL1"]},
    )


def test_nested_section_and_unknown_keys() -> None:
    settings, problems = parse_settings({"dynamoLens": {"runTimeout": 5}, "other": 1})
    assert settings.run_timeout == 5.0 and problems == []


def test_bad_values_keep_defaults_and_are_reported() -> None:
    settings, problems = parse_settings({"runTimeout": -1, "enableStatic": "yes", "select": ["NOPE"]})
    assert settings.run_timeout == ServerSettings().run_timeout
    assert settings.enable_static is True
    assert [p.split(":")[0] for p in problems] == ["select", "dynamoLens.runTimeout", "dynamoLens.enableStatic"]


def test_editor_rules_override_pyproject(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.dynamo-lens]\nselect = ["DL1"]\nignore = ["DL204"]\n[tool.dynamo-lens.severity]\nDL101 = "info"\n'
    )
    base = effective_rules(ServerSettings(), tmp_path)
    assert base.select == ("DL1",) and base.severity == {"DL101": Severity.INFO}
    editor, _ = parse_settings({"select": ["DL2"], "severity": {"DL101": "error", "DL112": "off"}})
    rules = effective_rules(editor, tmp_path)
    assert rules.select == ("DL2",)
    assert rules.severity == {"DL101": Severity.ERROR}
    assert set(rules.ignore) == {"DL204", "DL112"}
    assert not rules.is_enabled("DL112")
