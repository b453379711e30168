"""User settings: which codes to report, how loudly, and which files to skip.

Read from ``[tool.dynamo-lens]`` in the nearest ``pyproject.toml`` (like ruff's ``[tool.ruff]``), then overridden by
command-line flags; the language server builds the same :class:`Settings` from its client settings with
:meth:`Settings.from_mapping`. Keys may be written kebab-case (``extend-exclude``), snake_case or camelCase.

```toml
[tool.dynamo-lens]
select = ["DL1", "DL201"]      # codes or code prefixes; default: every code
ignore = ["DL105"]
exclude = ["third_party/"]     # gitignore-style patterns, relative to the pyproject.toml directory
extend-exclude = ["scratch_*.py"]
respect-gitignore = true
torch-version = "2.14"         # the torch the messages describe; default: the one installed where the scan runs

[tool.dynamo-lens.severity]
DL101 = "error"                # error | warning | info | hint
```

A bad value never stops a run: it becomes a message in :attr:`LoadedSettings.problems` and the default is used.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from dynamo_lens.codes import all_rules
from dynamo_lens.model import Finding, Severity
from dynamo_lens.torch_facts import Release

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]

PYPROJECT = "pyproject.toml"
TOOL_TABLE = "dynamo-lens"

_CODE_PREFIX = re.compile(r"^DL\d{0,3}$")


@dataclass(frozen=True, slots=True)
class Settings:
    """What to report and where to look. The defaults report every code at its catalogue severity."""

    select: tuple[str, ...] = ()
    """Codes or code prefixes (``DL1``) to report; empty means every code."""
    ignore: tuple[str, ...] = ()
    """Codes or prefixes never reported; wins over ``select`` when both match (the longer prefix wins, as in ruff)."""
    severity: Mapping[str, Severity] = field(default_factory=dict)
    """Per-code severity for findings reached by a compile site (see :meth:`severity_of`)."""
    exclude: tuple[str, ...] = ()
    """gitignore-style patterns of paths not to walk into (explicit file arguments are still analysed)."""
    respect_gitignore: bool = True
    torch_version: Release | None = None
    """The torch release the messages describe; None: the torch installed where the scan runs."""
    root: Path | None = None
    """The directory patterns are relative to: where the ``pyproject.toml`` was found, else the working directory."""

    def is_enabled(self, code: str) -> bool:
        """Whether findings of ``code`` are reported under ``select``/``ignore``."""
        selected = _longest_prefix(code, self.select) if self.select else 0
        if self.select and selected < 0:
            return False
        ignored = _longest_prefix(code, self.ignore)
        return ignored < 0 or selected > ignored

    def severity_of(self, finding: Finding) -> Severity:
        """The severity to show: the override replaces the catalogue default.

        A finding the analyzer already made quieter than its rule's default (e.g. a hint because nothing compiles the
        code) keeps its grade unless the override is quieter still.
        """
        override = self.severity.get(finding.code)
        if override is None:
            return finding.severity
        rule = all_rules().get(finding.code)
        if rule is None or finding.severity == rule.default_severity:
            return override
        return max(finding.severity, override, key=lambda s: s.rank)

    def apply(self, findings: Iterable[Finding]) -> list[Finding]:
        """``findings`` filtered by select/ignore, with severity overrides applied."""
        out: list[Finding] = []
        for finding in findings:
            if not self.is_enabled(finding.code):
                continue
            severity = self.severity_of(finding)
            out.append(finding if severity is finding.severity else replace(finding, severity=severity))
        return out

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any], root: Path | None = None) -> LoadedSettings:
        """Settings from a ``[tool.dynamo-lens]`` table or an editor's settings object; bad values are reported."""
        problems: list[str] = []
        known: dict[str, Callable[[Any], Any]] = {
            "select": lambda v: _codes(v, "select", problems),
            "ignore": lambda v: _codes(v, "ignore", problems),
            "severity": lambda v: _severities(v, problems),
            "exclude": lambda v: _strings(v, "exclude", problems),
            "extend-exclude": lambda v: _strings(v, "extend-exclude", problems),
            "respect-gitignore": lambda v: _boolean(v, "respect-gitignore", problems),
            "torch-version": lambda v: _release(v, "torch-version", problems),
        }
        parsed: dict[str, Any] = {}
        for raw_key, value in values.items():
            key = _kebab(str(raw_key))
            if key not in known:
                problems.append(f"unknown setting {raw_key!r} (known: {', '.join(sorted(known))})")
                continue
            result = known[key](value)
            if result is not None:
                parsed[key] = result
        settings = cls(
            select=parsed.get("select", ()),
            ignore=parsed.get("ignore", ()),
            severity=parsed.get("severity", {}),
            exclude=(*parsed.get("exclude", ()), *parsed.get("extend-exclude", ())),
            respect_gitignore=parsed.get("respect-gitignore", True),
            torch_version=parsed.get("torch-version"),
            root=root,
        )
        return LoadedSettings(settings, tuple(problems))

    def with_overrides(
        self,
        *,
        select: Iterable[str] | None = None,
        ignore: Iterable[str] | None = None,
        torch_version: str | None = None,
    ) -> LoadedSettings:
        """Command-line ``--select``/``--ignore`` replace the configured lists, as in ruff, and ``--torch-version``
        the configured release. An unknown code or an unreadable release there is a problem the caller stops on (a
        typo on the command line must not check something else)."""
        problems: list[str] = []
        settings = self
        if torch_version is not None:
            settings = replace(settings, torch_version=_release(torch_version, "--torch-version", problems))
        if select is not None:
            settings = replace(settings, select=_codes(list(select), "--select", problems, unknown_dropped=False) or ())
        if ignore is not None:
            settings = replace(settings, ignore=_codes(list(ignore), "--ignore", problems, unknown_dropped=False) or ())
        return LoadedSettings(settings, tuple(problems))


@dataclass(frozen=True, slots=True)
class LoadedSettings:
    """Settings plus the messages about values that were rejected (and replaced by defaults)."""

    settings: Settings
    problems: tuple[str, ...] = ()


def find_pyproject(start: Path) -> Path | None:
    """The nearest ``pyproject.toml`` at or above ``start`` that has a ``[tool.dynamo-lens]`` table."""
    directory = start if start.is_dir() else start.parent
    for candidate_dir in (directory, *directory.parents):
        candidate = candidate_dir / PYPROJECT
        if candidate.is_file() and _has_tool_table(candidate):
            return candidate
    return None


def load_settings(start: Path) -> LoadedSettings:
    """Settings from the nearest ``pyproject.toml`` with a ``[tool.dynamo-lens]`` table, else the defaults."""
    start = start.absolute()
    pyproject = find_pyproject(start)
    if pyproject is None:
        return LoadedSettings(Settings(root=start if start.is_dir() else start.parent))
    try:
        table = _read_tool_table(pyproject)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        return LoadedSettings(Settings(root=pyproject.parent), (f"{pyproject}: cannot read settings: {exc}",))
    if not isinstance(table, Mapping):
        problem = f"{pyproject}: [tool.{TOOL_TABLE}] must be a table"
        return LoadedSettings(Settings(root=pyproject.parent), (problem,))
    loaded = Settings.from_mapping(table, root=pyproject.parent)
    return LoadedSettings(loaded.settings, tuple(f"{pyproject}: {p}" for p in loaded.problems))


def parse_code_list(text: str) -> list[str]:
    """``"DL101, DL2"`` (a command-line value) as a list of codes."""
    return [part.strip() for part in text.split(",") if part.strip()]


def _has_tool_table(pyproject: Path) -> bool:
    try:
        return _read_tool_table(pyproject) is not None
    except (OSError, tomllib.TOMLDecodeError):
        return True  # report the broken file rather than silently skipping to a parent's settings


def _read_tool_table(pyproject: Path) -> Any:
    with pyproject.open("rb") as handle:
        document = tomllib.load(handle)
    tool = document.get("tool")
    return tool.get(TOOL_TABLE) if isinstance(tool, dict) else None


def _longest_prefix(code: str, prefixes: Iterable[str]) -> int:
    """Length of the longest prefix of ``code`` among ``prefixes`` (``ALL`` counts as 0), or -1 when none."""
    best = -1
    for prefix in prefixes:
        if prefix == "ALL":
            best = max(best, 0)
        elif code.startswith(prefix):
            best = max(best, len(prefix))
    return best


def _kebab(key: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"-\1", key).replace("_", "-").lower()


def _strings(value: Any, name: str, problems: list[str]) -> tuple[str, ...] | None:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        problems.append(f"{name} must be a list of strings, got {value!r}; using the default")
        return None
    return tuple(value)


def _codes(value: Any, name: str, problems: list[str], *, unknown_dropped: bool = True) -> tuple[str, ...] | None:
    """The codes and prefixes of ``value``; an unknown one is a problem, and (``unknown_dropped``, for settings
    files) left out while the others apply."""
    if isinstance(value, str):
        value = parse_code_list(value)
    strings = _strings(value, name, problems)
    if strings is None:
        return None
    known = all_rules()
    codes: list[str] = []
    for raw in strings:
        code = raw.strip().upper()
        if code == "ALL" or code in known or (_CODE_PREFIX.match(code) and any(k.startswith(code) for k in known)):
            codes.append(code)
        else:
            consequence = "; ignored" if unknown_dropped else ""
            problems.append(f"{name}: unknown code or prefix {raw!r} (`dynamo-lens explain` lists them){consequence}")
    return tuple(codes)


def _severities(value: Any, problems: list[str]) -> dict[str, Severity] | None:
    if not isinstance(value, Mapping):
        problems.append(f"severity must be a table of CODE = level, got {value!r}; using the defaults")
        return None
    known = all_rules()
    levels = ", ".join(s.value for s in Severity)
    out: dict[str, Severity] = {}
    for raw_code, raw_level in value.items():
        code = str(raw_code).strip().upper()
        if code not in known:
            problems.append(f"severity: unknown code {raw_code!r}; ignored")
            continue
        try:
            out[code] = Severity(str(raw_level).strip().lower())
        except ValueError:
            problems.append(f"severity: {raw_code} = {raw_level!r} is not one of {levels}; using the default")
    return out


def _release(value: Any, name: str, problems: list[str]) -> Release | None:
    release = Release.parse(value) if isinstance(value, str) else None
    if release is None:
        problems.append(f'{name}: expected a torch release such as "2.14", got {value!r}')
    return release


def _boolean(value: Any, name: str, problems: list[str]) -> bool | None:
    if isinstance(value, bool):
        return value
    problems.append(f"{name} must be true or false, got {value!r}; using the default")
    return None
