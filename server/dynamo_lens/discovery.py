"""Which files ``check`` analyses: walk the given paths like ruff does.

Directories are walked for ``.py`` and ``.pyi`` files and Jupyter notebooks (``.ipynb``), skipping version-control
and tool directories, virtual environments (any directory holding a ``pyvenv.cfg``), ``node_modules``, build output,
paths matched by ``.gitignore`` files (when ``respect_gitignore``) and by the ``exclude`` setting. Symbolic links
are followed, each directory at most once, so link loops end. A file named explicitly is always analysed.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from dataclasses import dataclass

from dynamo_lens.config import Settings
from dynamo_lens.discovery_patterns import PathRule, PathRules, parse_patterns, read_gitignore

PYTHON_SUFFIXES = (".py", ".pyi", ".ipynb")

SKIPPED_DIRECTORIES = frozenset(
    {
        ".bzr",
        ".direnv",
        ".eggs",
        ".git",
        ".hg",
        ".ipynb_checkpoints",
        ".mypy_cache",
        ".nox",
        ".pytest_cache",
        ".ruff_cache",
        ".svn",
        ".tox",
        ".venv",
        "__pycache__",
        "__pypackages__",
        "_build",
        "build",
        "dist",
        "node_modules",
        "site-packages",
        "venv",
    }
)
"""Directory names never walked into (ruff's default excludes plus ``__pycache__`` and ``build``)."""


@dataclass(frozen=True, slots=True)
class Discovery:
    """The files to analyse (absolute paths, sorted, unique) and the paths that could not be walked."""

    files: tuple[str, ...]
    missing: tuple[str, ...]
    """Arguments that do not exist."""
    problems: tuple[tuple[str, str], ...]
    """``(path, message)`` for directories that could not be listed."""


def discover(paths: Sequence[str], settings: Settings) -> Discovery:
    """Every file to analyse under ``paths`` (files named explicitly are always included)."""
    walker = _Walker(settings)
    missing: list[str] = []
    for argument in paths:
        path = os.path.abspath(argument)
        if os.path.isdir(path):
            walker.walk_root(path)
        elif os.path.exists(path):
            walker.files.add(path)
        else:
            missing.append(argument)
    return Discovery(tuple(sorted(walker.files)), tuple(missing), tuple(walker.problems))


def is_python_file(name: str) -> bool:
    return name.endswith(PYTHON_SUFFIXES)


class _Walker:
    """Mutable state of one discovery: the files found and the directories already visited."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.files: set[str] = set()
        self.problems: list[tuple[str, str]] = []
        self.visited: set[tuple[int, int]] = set()
        root = os.path.abspath(settings.root) if settings.root is not None else os.getcwd()
        self.base_rules = PathRules(tuple(parse_patterns(settings.exclude, root)))

    def walk_root(self, root: str) -> None:
        rules = self.base_rules
        if self.settings.respect_gitignore:
            rules = rules.extended(_repository_rules(root))
        self._walk(root, rules)

    def _walk(self, directory: str, rules: PathRules) -> None:
        # An explicit stack instead of recursion: deep trees must not hit the recursion limit.
        stack: list[tuple[str, PathRules]] = [(directory, rules)]
        while stack:
            current, current_rules = stack.pop()
            try:
                identity = os.stat(current)
            except OSError as exc:
                self.problems.append((current, _describe(exc)))
                continue
            key = (identity.st_dev, identity.st_ino)
            if key in self.visited:
                continue
            self.visited.add(key)
            if self.settings.respect_gitignore:
                current_rules = current_rules.extended(read_gitignore(current))
            try:
                with os.scandir(current) as entries:
                    listing = list(entries)
            except OSError as exc:
                self.problems.append((current, _describe(exc)))
                continue
            for entry in listing:
                self._visit(entry, current_rules, stack)

    def _visit(self, entry: os.DirEntry[str], rules: PathRules, stack: list[tuple[str, PathRules]]) -> None:
        try:
            is_dir = entry.is_dir()
            is_file = not is_dir and entry.is_file()  # False for dangling links, FIFOs, sockets, devices
        except OSError:
            return
        if is_dir:
            if (
                entry.name in SKIPPED_DIRECTORIES
                or rules.is_ignored(entry.path, is_dir=True)
                or os.path.exists(os.path.join(entry.path, "pyvenv.cfg"))
            ):
                return
            stack.append((entry.path, rules))
        elif is_file and is_python_file(entry.name) and not rules.is_ignored(entry.path, is_dir=False):
            self.files.add(entry.path)


def _repository_rules(root: str) -> list[PathRule]:
    """The ignore rules that apply to ``root`` from the enclosing git work tree: ``.git/info/exclude``, then the
    ``.gitignore`` files from the work tree's top down to ``root``'s parent (``root``'s own is read by the walk)."""
    chain: list[str] = []
    current = root
    while not os.path.exists(os.path.join(current, ".git")):
        parent = os.path.dirname(current)
        if parent == current:
            return []  # not inside a git work tree: only the .gitignore files below root apply
        current = parent
        chain.append(current)
    rules: list[PathRule] = []
    exclude = os.path.join(current, ".git", "info", "exclude")
    with contextlib.suppress(OSError), open(exclude, encoding="utf-8", errors="replace") as handle:
        rules.extend(parse_patterns(handle, current))
    for directory in reversed(chain):
        rules.extend(read_gitignore(directory))
    return rules


def _describe(exc: OSError) -> str:
    return exc.strerror or str(exc)
