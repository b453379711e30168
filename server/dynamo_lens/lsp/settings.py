"""The server's settings: one frozen dataclass with defaults, read from camelCase LSP settings.

Sources, later ones win: ``initializationOptions`` at ``initialize``, then the ``dynamoLens`` section of
``workspace/configuration`` (asked after ``initialized`` and again on ``workspace/didChangeConfiguration``).
Both use the same keys (the VS Code client's ``dynamoLens.*`` settings without the prefix)::

    {"interpreter": "/usr/bin/python3", "runTimeout": 300, "enableStatic": true, "enableRuntime": true,
     "severity": {"DL112": "hint", "DL001": "off"}, "select": ["DL1"], "ignore": ["DL001"], "trusted": true,
     "debounceMs": 200}

``select``/``ignore``/``severity`` mean what they mean in ``[tool.dynamo-lens]`` and are parsed by the same code
(:meth:`dynamo_lens.config.Settings.from_mapping`); the editor's values override the workspace's ``pyproject.toml``
(:func:`effective_rules`). ``"off"`` as a severity ignores the code.

A bad value is reported (the caller logs it and shows it once) and that key keeps its default; the other keys
still apply (jedi-language-server's habit).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from dynamo_lens.config import Settings, load_settings

SECTION = "dynamoLens"


@dataclass(frozen=True, slots=True)
class ServerSettings:
    interpreter: str | None = None
    """Python used for instrumented runs; ``None`` means the interpreter that runs the server."""
    run_timeout: float = 600.0
    """Seconds before a run is killed."""
    enable_static: bool = True
    enable_runtime: bool = True
    rules: Mapping[str, Any] = field(default_factory=dict)
    """The editor's ``select``/``ignore``/``severity`` values as given (see :func:`effective_rules`)."""
    trusted: bool = True
    """False in an untrusted workspace: static analysis only, runs are refused."""
    debounce_ms: int = 200
    """Quiet time after a burst of edits before the document is analysed again."""


_KEYS = {
    "interpreter": "interpreter",
    "runTimeout": "run_timeout",
    "enableStatic": "enable_static",
    "enableRuntime": "enable_runtime",
    "trusted": "trusted",
    "debounceMs": "debounce_ms",
}


def parse_settings(raw: Any, base: ServerSettings | None = None) -> tuple[ServerSettings, list[str]]:
    """``raw`` (camelCase, or ``{"dynamoLens": {...}}``) applied over ``base``; returns (settings, problems)."""
    settings = base or ServerSettings()
    if raw is None:
        return settings, []
    if isinstance(raw, Mapping) and isinstance(raw.get(SECTION), Mapping):
        raw = raw[SECTION]
    if not isinstance(raw, Mapping):
        return settings, [f"settings must be an object, got {type(raw).__name__}"]
    problems: list[str] = []
    changes: dict[str, Any] = {}
    rules = {key: raw[key] for key in _RULE_KEYS if raw.get(key) is not None}
    if rules:
        problems.extend(Settings.from_mapping(_without_off(rules)).problems)
        changes["rules"] = {**settings.rules, **rules}
    known = {f.name for f in fields(ServerSettings)}
    for key, value in raw.items():
        name = _KEYS.get(key)
        if name is None or name not in known:
            continue
        if value is None and name != "interpreter":
            continue
        try:
            changes[name] = _PARSERS[name](value)
        except (TypeError, ValueError) as exc:
            problems.append(f"dynamoLens.{key}: {exc}; keeping the default")
    return replace(settings, **changes), problems


def _interpreter(value: Any) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise TypeError("expected a path to a Python interpreter")
    return value


def _positive_number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ValueError(f"expected a positive number, got {value!r}")
    return float(value)


def _non_negative_int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"expected a non-negative integer, got {value!r}")
    return value


def _bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"expected true or false, got {value!r}")
    return value


def _without_off(rules: Mapping[str, Any]) -> dict[str, Any]:
    """``severity: {"DL001": "off"}`` written as ``ignore: ["DL001"]``, the spelling ``config.Settings`` knows."""
    out = dict(rules)
    severity = rules.get("severity")
    if isinstance(severity, Mapping):
        off = [code for code, level in severity.items() if str(level).lower() == "off"]
        out["severity"] = {code: level for code, level in severity.items() if code not in off}
        if off:
            ignore = out.get("ignore", [])
            out["ignore"] = [*([ignore] if isinstance(ignore, str) else ignore), *off]
    return out


def effective_rules(settings: ServerSettings, root: Path | None) -> Settings:
    """The workspace's ``[tool.dynamo-lens]`` settings with the editor's ``select``/``ignore``/``severity`` on top."""
    base = load_settings(root).settings if root is not None else Settings()
    if not settings.rules:
        return base
    editor = Settings.from_mapping(_without_off(settings.rules)).settings
    return replace(
        base,
        select=editor.select if "select" in settings.rules else base.select,
        ignore=(*editor.ignore, *base.ignore),
        severity={**base.severity, **editor.severity},
    )


_RULE_KEYS = ("select", "ignore", "severity")

_PARSERS: dict[str, Any] = {
    "interpreter": _interpreter,
    "run_timeout": _positive_number,
    "enable_static": _bool,
    "enable_runtime": _bool,
    "trusted": _bool,
    "debounce_ms": _non_negative_int,
}
