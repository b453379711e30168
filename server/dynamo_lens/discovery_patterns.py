"""gitignore-style path patterns, used for ``.gitignore`` files and the ``exclude`` setting.

Supported: blank lines and ``#`` comments, ``!`` negation (the last matching rule wins), a trailing ``/`` for
directories only, a ``/`` anywhere but at the end anchoring the pattern to its base directory, ``*``, ``?``,
``[...]`` and ``**`` (any number of directories). Not supported (rare, and not worth the cost here): escaped
trailing spaces, and the user's global ``core.excludesFile``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class PathRule:
    """One pattern line, bound to the directory it is relative to."""

    base: str
    """Absolute directory the pattern is relative to, without a trailing separator."""
    regex: re.Pattern[str]
    negate: bool
    directories_only: bool

    def matches(self, path: str, is_dir: bool) -> bool:
        if self.directories_only and not is_dir:
            return False
        prefix = self.base + os.sep
        if not path.startswith(prefix):
            return False
        relative = path[len(prefix) :]
        if os.sep != "/":
            relative = relative.replace(os.sep, "/")
        return self.regex.match(relative) is not None


@dataclass(frozen=True, slots=True)
class PathRules:
    """An ordered set of rules; later rules override earlier ones."""

    rules: tuple[PathRule, ...] = ()

    def is_ignored(self, path: str, is_dir: bool) -> bool:
        """Whether ``path`` (absolute) is ignored; the last matching rule decides."""
        for rule in reversed(self.rules):
            if rule.matches(path, is_dir):
                return not rule.negate
        return False

    def extended(self, rules: Iterable[PathRule]) -> PathRules:
        added = tuple(rules)
        return PathRules(self.rules + added) if added else self


def parse_patterns(lines: Iterable[str], base: str) -> list[PathRule]:
    """Rules for the pattern ``lines`` of a ``.gitignore`` (or the ``exclude`` setting) in directory ``base``."""
    rules: list[PathRule] = []
    for raw in lines:
        line = raw.rstrip("\n").rstrip()
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        if negate:
            line = line[1:]
        directories_only = line.endswith("/")
        line = line.rstrip("/")
        if not line:
            continue
        anchored = "/" in line
        line = line.lstrip("/")
        body = _translate(line)
        regex = re.compile(("" if anchored else "(?:.*/)?") + body + r"\Z", re.DOTALL)
        rules.append(PathRule(base.rstrip(os.sep) or os.sep, regex, negate, directories_only))
    return rules


def read_gitignore(directory: str) -> list[PathRule]:
    """The rules of ``directory/.gitignore``, or none when it is absent or unreadable."""
    try:
        with open(os.path.join(directory, ".gitignore"), encoding="utf-8", errors="replace") as handle:
            return parse_patterns(handle, directory)
    except OSError:
        return []


def _translate(pattern: str) -> str:
    out: list[str] = []
    i = 0
    n = len(pattern)
    while i < n:
        char = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif char == "*":
            out.append("[^/]*")
            i += 1
        elif char == "?":
            out.append("[^/]")
            i += 1
        elif char == "[":
            end = pattern.find("]", i + 2)
            if end < 0:
                out.append(re.escape(char))
                i += 1
                continue
            inner = pattern[i + 1 : end]
            if inner.startswith("!"):
                inner = "^" + inner[1:]
            out.append("[" + inner.replace("\\", "\\\\") + "]")
            i = end + 1
        else:
            out.append(re.escape(char))
            i += 1
    return "".join(out)
