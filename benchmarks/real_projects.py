"""Precision and recall of ``dynamo-lens check`` on the real-project corpus (``benchmarks/corpus/*.toml``).

    .venv/bin/python benchmarks/real_projects.py [--project NAME ...] [--cold] [-v | --unjudged --missed --gone]
    .venv/bin/python benchmarks/real_projects.py --json > result.json

For every project of the corpus (one TOML file each; the format is in ``benchmarks/corpus/README.md``):

1. the ``*.py`` files of the pinned commit, minus the project's ``exclude`` globs, are extracted from the bare git
   mirror ``$DYNAMO_LENS_MIRRORS/<owner>+<name>/repo`` (default ``/work/.mirror``; the search tool's
   ``fetch github:<owner>/<name>`` makes one) into ``$XDG_CACHE_HOME/dynamo-lens/corpus/<name>@<commit[:12]>/``
   (``~/.cache`` without ``XDG_CACHE_HOME``), once: a marker file written last makes an interrupted or outdated
   extraction start again;
2. ``python -m dynamo_lens check --format json --exit-zero --show-hints .`` runs there, as a user would, timed
   (``--cold`` adds ``--no-cache``); the package is this checkout's ``server/dynamo_lens``;
3. its findings are matched by (code, path, line) to the project's ``[[finding]]`` verdicts and ``[[hazard]]``
   records.

It prints, per project, the files checked, compile sites (DL001 hints), warnings, infos, other hints, the findings
judged true and false, the unjudged ones, the recorded hazards found, and the seconds ``check`` took (findings
that share a (code, path, line) count once: they take one verdict); then the totals with

* precision = true / (true + false), over today's warning and info findings that have a verdict (provisional while
  any finding is unjudged: list those with ``--unjudged`` and judge them in the TOML file);
* recall = recorded hazards (every ``[[hazard]]`` and every ``[[finding]]`` judged true) that today's run reports
  at warning or info with the same (code, path, line) / all recorded hazards whose code is not ``"new"`` (those
  need a new check and are counted apart).

``--missed`` lists the hazards not reported, ``--gone`` the verdicts no current finding matches any more (a
judged-true one going away is a lost hazard, already counted as missed). Exit code 0, or 2 when a TOML file is
invalid, a record names a file that was not checked, a mirror is missing or ``check`` failed on a project (the
others are still measured).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus"
SERVER = HERE.parent / "server"
DEFAULT_MIRRORS = "/work/.mirror"
MARKER = ".dynamo-lens-corpus.json"
"""Written last into an extracted tree: the commit and globs it was made from, and its files."""

HINT = "hint"
"""The quiet severity; every other (warning, info, and error if a project's settings raise a code) is reported."""
COMPILE_SITE = "DL001"
NEW_CODE = "new"
CODE = re.compile(r"DL\d{3}")
COMMIT = re.compile(r"[0-9a-f]{40}")
REPOSITORY = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*")
PROJECT_KEYS = {"name": True, "repository": True, "commit": True, "kind": True, "exclude": False}
FINDING_KEYS = {"code": True, "path": True, "line": True, "verdict": True, "why": True, "repro": False}
HAZARD_KEYS = {"code": True, "path": True, "line": True, "why": True, "repro": False}

EXIT_OK = 0
EXIT_BAD = 2

Key = tuple[str, str, int]
"""(code, path, line): how a finding meets a verdict or a recorded hazard."""


class CorpusError(Exception):
    """A TOML file of the corpus is invalid; the message is one line naming the file."""


class Skipped(Exception):
    """A project could not be measured (no mirror, commit absent, ``check`` failed); the message says why."""


@dataclass(frozen=True)
class Verdict:
    """A ``[[finding]]``: a person's verdict on one warning or info finding."""

    code: str
    path: str
    line: int
    true: bool
    why: str
    repro: str | None = None

    @property
    def key(self) -> Key:
        return (self.code, self.path, self.line)


@dataclass(frozen=True)
class Hazard:
    """A recorded hazard: a ``[[hazard]]``, or a ``[[finding]]`` judged true (``source`` says which)."""

    code: str
    path: str
    line: int
    why: str
    source: str

    @property
    def key(self) -> Key:
        return (self.code, self.path, self.line)


@dataclass(frozen=True)
class Project:
    name: str
    repository: str
    commit: str
    kind: str
    exclude: tuple[str, ...]
    verdicts: tuple[Verdict, ...]
    hazards: tuple[Hazard, ...]
    """Every recorded hazard: the ``[[hazard]]`` entries, then the ``[[finding]]`` entries judged true."""
    file: Path

    @property
    def mirror_name(self) -> str:
        return self.repository.replace("/", "+")


@dataclass(frozen=True)
class Reported:
    """One finding of today's run."""

    code: str
    path: str
    line: int
    severity: str
    message: str

    @property
    def key(self) -> Key:
        return (self.code, self.path, self.line)


@dataclass(frozen=True)
class Gone:
    """A verdict no current warning or info finding matches; ``now`` says what became of it, if anything."""

    verdict: Verdict
    now: str


@dataclass
class Outcome:
    """One project's measurement."""

    name: str
    files: int
    seconds: float
    extracted: bool
    """True when the sources were extracted in this run, False when an earlier extraction was reused."""
    absent: list[str] = field(default_factory=list)
    """``*.py`` files of the commit that the mirror lacks (it leaves out files of 4 MiB and more): not checked."""
    compile_sites: int = 0
    warnings: int = 0
    infos: int = 0
    hints: int = 0
    true: int = 0
    false: int = 0
    unjudged: list[Reported] = field(default_factory=list)
    wrong: list[Verdict] = field(default_factory=list)
    """The verdicts of today's findings judged false (what to work on)."""
    found: list[Hazard] = field(default_factory=list)
    missed: list[Hazard] = field(default_factory=list)
    needs_new_check: list[Hazard] = field(default_factory=list)
    gone: list[Gone] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)
    """What ``check`` wrote on stderr (files it could not analyse)."""
    stray: list[str] = field(default_factory=list)
    """Verdicts and hazards naming a file that was not checked (excluded, misspelt, or absent at the commit)."""

    @property
    def recorded(self) -> int:
        return len(self.found) + len(self.missed)


@dataclass
class Totals:
    true: int = 0
    false: int = 0
    unjudged: int = 0
    found: int = 0
    recorded: int = 0
    needs_new_check: int = 0
    files: int = 0
    seconds: float = 0.0

    @property
    def precision(self) -> float | None:
        judged = self.true + self.false
        return self.true / judged if judged else None

    @property
    def recall(self) -> float | None:
        return self.found / self.recorded if self.recorded else None


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        projects = select(load_corpus(args.corpus), args.project)
    except CorpusError as error:
        print(f"real_projects: {error}", file=sys.stderr)
        return EXIT_BAD

    mirrors = Path(os.environ.get("DYNAMO_LENS_MIRRORS") or DEFAULT_MIRRORS)
    sources = cache_root() / "corpus"
    outcomes: list[Outcome] = []
    skipped: dict[str, str] = {}
    progress = sys.stderr.isatty()
    for project in projects:
        if progress:
            print(f"\r\033[K{project.name} ...", end="", file=sys.stderr, flush=True)
        try:
            outcomes.append(measure(project, mirrors, sources, cold=args.cold))
        except Skipped as why:
            skipped[project.name] = str(why)
    if progress:
        print("\r\033[K", end="", file=sys.stderr, flush=True)

    if args.json:
        json.dump(as_json(outcomes, skipped), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print_report(outcomes, args)
    for name, reason in skipped.items():
        print(f"real_projects: skipped {name}: {reason}", file=sys.stderr)
    for o in outcomes:
        for entry in o.stray:
            print(f"real_projects: {o.name}: {entry} names a file that is not checked", file=sys.stderr)
    return EXIT_BAD if skipped or any(o.stray for o in outcomes) else EXIT_OK


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--project", action="append", metavar="NAME", help="only this project (repeatable)")
    parser.add_argument("--cold", action="store_true", help="run check with --no-cache")
    parser.add_argument("--unjudged", action="store_true", help="list the warning/info findings without a verdict")
    parser.add_argument("--missed", action="store_true", help="list the recorded hazards the run does not report")
    parser.add_argument("--gone", action="store_true", help="list the verdicts no current finding matches")
    parser.add_argument("--false", action="store_true", help="list today's findings judged false, with why")
    parser.add_argument("-v", "--verbose", action="store_true", help="all three lists")
    parser.add_argument("--json", action="store_true", help="write the whole result as JSON to stdout")
    parser.add_argument("--corpus", type=Path, default=CORPUS, help=argparse.SUPPRESS)  # the tests' own corpus
    args = parser.parse_args(argv)
    if args.verbose:
        args.unjudged = args.missed = args.gone = True
    return args


def cache_root() -> Path:
    """``$XDG_CACHE_HOME/dynamo-lens`` when that is an absolute path, else ``~/.cache/dynamo-lens`` (as the cache)."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "dynamo-lens"


# --- reading and validating the corpus -------------------------------------------------------------------------------


def load_corpus(directory: Path) -> list[Project]:
    files = sorted(directory.glob("*.toml"))
    if not files:
        raise CorpusError(f"{directory}: no *.toml files")
    return [load_project(path) for path in files]


def select(projects: list[Project], names: list[str] | None) -> list[Project]:
    if not names:
        return projects
    known = {p.name for p in projects}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise CorpusError(f"no such project: {', '.join(unknown)} (known: {', '.join(sorted(known))})")
    return [p for p in projects if p.name in names]


def load_project(path: Path) -> Project:
    try:
        with path.open("rb") as handle:
            table = tomllib.load(handle)
    except tomllib.TOMLDecodeError as error:
        raise CorpusError(f"{path}: not valid TOML: {error}") from None
    where = str(path)
    check_keys(table, {**PROJECT_KEYS, "finding": False, "hazard": False}, where)
    name = text(table, "name", where)
    if name != path.stem:
        raise CorpusError(f"{where}: name = {name!r} but the file is {path.name} (the file must be <name>.toml)")
    repository = text(table, "repository", where)
    if not REPOSITORY.fullmatch(repository):
        raise CorpusError(f"{where}: repository = {repository!r} is not a GitHub owner/name")
    commit = text(table, "commit", where)
    if not COMMIT.fullmatch(commit):
        raise CorpusError(f"{where}: commit = {commit!r} is not a full 40-digit lowercase hex commit id")
    exclude = table.get("exclude", [])
    if not isinstance(exclude, list) or not all(isinstance(g, str) and g for g in exclude):
        raise CorpusError(f"{where}: exclude must be a list of non-empty glob strings")

    corpus = path.parent
    verdicts = tuple(load_verdict(e, f"{where}: [[finding]] #{i}", corpus) for i, e in entries(table, "finding", where))
    recorded = tuple(load_hazard(e, f"{where}: [[hazard]] #{i}", corpus) for i, e in entries(table, "hazard", where))
    check_duplicates(verdicts, recorded, where)
    hazards = recorded + tuple(Hazard(v.code, v.path, v.line, v.why, "finding") for v in verdicts if v.true)
    return Project(name, repository, commit, text(table, "kind", where), tuple(exclude), verdicts, hazards, path)


def entries(table: Mapping[str, Any], key: str, where: str) -> Iterable[tuple[int, Mapping[str, Any]]]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(e, dict) for e in value):
        raise CorpusError(f"{where}: {key} must be written as [[{key}]] tables")
    return enumerate(value, start=1)


def load_verdict(entry: Mapping[str, Any], where: str, corpus: Path) -> Verdict:
    check_keys(entry, FINDING_KEYS, where)
    code, path, line = location(entry, where, allow_new=False)
    where = f"{where} ({code} {path}:{line})"
    verdict = entry["verdict"]
    if verdict not in ("true", "false"):
        raise CorpusError(f'{where}: verdict = {verdict!r}; write "true" or "false" (a string)')
    return Verdict(code, path, line, verdict == "true", text(entry, "why", where), repro(entry, where, corpus))


def load_hazard(entry: Mapping[str, Any], where: str, corpus: Path) -> Hazard:
    check_keys(entry, HAZARD_KEYS, where)
    code, path, line = location(entry, where, allow_new=True)
    where = f"{where} ({code} {path}:{line})"
    repro(entry, where, corpus)
    return Hazard(code, path, line, text(entry, "why", where), "hazard")


def repro(entry: Mapping[str, Any], where: str, corpus: Path) -> str | None:
    """The optional ``repro``: a file under the corpus directory that must exist."""
    value = entry.get("repro")
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise CorpusError(f"{where}: repro must be a path relative to {corpus}")
    if not (corpus / value).is_file():
        raise CorpusError(f"{where}: repro {value!r} does not exist under {corpus}")
    return value


def location(entry: Mapping[str, Any], where: str, *, allow_new: bool) -> Key:
    code = text(entry, "code", where)
    if not (CODE.fullmatch(code) or (allow_new and code == NEW_CODE)):
        expected = 'a catalogue code such as "DL101"' + (' or "new"' if allow_new else "")
        raise CorpusError(f"{where}: code = {code!r}; expected {expected}")
    path = text(entry, "path", where)
    posix = PurePosixPath(path)
    if "\\" in path or posix.is_absolute() or ".." in posix.parts or str(posix) != path or not path.endswith(".py"):
        raise CorpusError(f"{where}: path = {path!r}; expected a repository-relative posix path to a .py file")
    line = entry["line"]
    if not isinstance(line, int) or isinstance(line, bool) or line < 1:
        raise CorpusError(f"{where}: line = {line!r}; expected a positive integer")
    return code, path, line


def check_keys(table: Mapping[str, Any], keys: Mapping[str, bool], where: str) -> None:
    """Every required key present, no unknown key (a misspelt ``[[findings]]`` would otherwise vanish)."""
    missing = [k for k, required in keys.items() if required and k not in table]
    if missing:
        raise CorpusError(f"{where}: missing key {', '.join(missing)}")
    unknown = [k for k in table if k not in keys]
    if unknown:
        raise CorpusError(f"{where}: unknown key {', '.join(unknown)} (expected {', '.join(keys)})")


def text(table: Mapping[str, Any], key: str, where: str) -> str:
    value = table[key]
    if not isinstance(value, str) or not value.strip():
        raise CorpusError(f"{where}: {key} must be a non-empty string")
    return value


def check_duplicates(verdicts: Sequence[Verdict], hazards: Sequence[Hazard], where: str) -> None:
    """No (code, path, line) twice among the verdicts or among the hazards, nor a true verdict repeated as a hazard.

    A hazard may share its key with a verdict of false: a real hazard whose message gets a claim wrong.
    """
    seen: dict[Key, str] = {}
    entries = [(v.key, "[[finding]]") for v in verdicts] + [(h.key, "[[hazard]]") for h in hazards]
    true_keys = {v.key for v in verdicts if v.true}
    for key, kind in entries:
        first = seen.get(key)
        if first is not None and (first == kind or key in true_keys):
            code, path, line = key
            raise CorpusError(f"{where}: {code} {path}:{line} is recorded twice ({first} and {kind})")
        seen[key] = kind


# --- sources from the mirror -----------------------------------------------------------------------------------------


def excluded(path: str, globs: Sequence[str]) -> bool:
    """fnmatch against the repository-relative posix path (``*`` and ``**`` cross ``/``; ``**/`` may be empty)."""
    return any(fnmatch.fnmatchcase(path, g) or fnmatch.fnmatchcase(path, g.replace("**/", "")) for g in globs)


@dataclass(frozen=True)
class Sources:
    root: Path
    files: int
    absent: list[str]
    """Paths the mirror has no blob for."""
    extracted: bool
    """False when an earlier, complete extraction was reused."""


def materialise(project: Project, mirrors: Path, sources: Path) -> Sources:
    """The project's ``*.py`` files at its commit, extracted now unless a complete extraction is there."""
    root = sources / f"{project.name}@{project.commit[:12]}"
    stamp = {"commit": project.commit, "exclude": list(project.exclude)}
    marker = read_marker(root / MARKER)
    if marker is not None and {k: marker.get(k) for k in stamp} == stamp:
        return Sources(root, marker["files"], marker["absent"], extracted=False)

    repo = mirrors / project.mirror_name / "repo"
    if not repo.is_dir():
        raise Skipped(f"no mirror at {repo}; run `fetch github:{project.repository}`")
    if git(repo, "cat-file", "-e", f"{project.commit}^{{commit}}", check=False).returncode != 0:
        raise Skipped(f"commit {project.commit} is not in {repo}; run `fetch github:{project.repository}` again")
    blobs = python_blobs(repo, project.commit, project.exclude)
    if root.exists():
        shutil.rmtree(root)  # an interrupted or outdated extraction (only ever our own <name>@<commit> directory)
    root.mkdir(parents=True)
    absent = write_blobs(repo, blobs, root)
    files = len(blobs) - len(absent)
    (root / MARKER).write_text(json.dumps({**stamp, "files": files, "absent": absent}), encoding="utf-8")
    return Sources(root, files, absent, extracted=True)


def read_marker(path: Path) -> dict[str, Any] | None:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    complete = isinstance(value, dict) and isinstance(value.get("files"), int) and isinstance(value.get("absent"), list)
    return value if complete else None


def python_blobs(repo: Path, commit: str, exclude: Sequence[str]) -> dict[str, str]:
    """Repository-relative path → blob id of every regular ``*.py`` file at ``commit`` not excluded."""
    listing = git(repo, "ls-tree", "-r", "-z", "--full-tree", commit).stdout
    blobs = {}
    for record in listing.split(b"\0"):
        if not record:
            continue
        meta, _, raw_path = record.partition(b"\t")
        mode, kind, oid = meta.decode().split()
        path = raw_path.decode("utf-8", "surrogateescape")
        if kind == "blob" and mode in ("100644", "100755") and path.endswith(".py") and not excluded(path, exclude):
            blobs[path] = oid
    return blobs


def write_blobs(repo: Path, blobs: Mapping[str, str], root: Path) -> list[str]:
    """Write the blobs under ``root`` with one ``git cat-file --batch``; the paths whose blob the mirror lacks."""
    request = "".join(f"{oid}\n" for oid in blobs.values()).encode()
    output = git(repo, "cat-file", "--batch", stdin=request).stdout
    offset = 0
    absent = []
    for path in blobs:
        end = output.index(b"\n", offset)
        header = output[offset:end].split()
        offset = end + 1
        if header[-1] == b"missing":
            absent.append(path)
            continue
        size = int(header[2])
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(output[offset : offset + size])
        offset += size + 1  # the content is followed by a newline
    return absent


def git(repo: Path, *args: str, stdin: bytes | None = None, check: bool = True) -> subprocess.CompletedProcess[bytes]:
    result = subprocess.run(["git", f"--git-dir={repo}", *args], input=stdin, capture_output=True)
    if check and result.returncode != 0:
        message = result.stderr.decode(errors="replace").strip().splitlines()
        raise Skipped(f"git {args[0]} failed in {repo}: {message[-1] if message else result.returncode}")
    return result


# --- running check and matching --------------------------------------------------------------------------------------


def measure(project: Project, mirrors: Path, sources: Path, *, cold: bool) -> Outcome:
    tree = materialise(project, mirrors, sources)
    reported, messages, seconds = run_check(tree.root, cold=cold)
    outcome = Outcome(project.name, tree.files, seconds, tree.extracted, tree.absent, messages=messages)
    judge(project, reported, outcome)
    checked = {p.relative_to(tree.root).as_posix() for p in tree.root.rglob("*.py")}
    records: list[Verdict | Hazard] = [*project.verdicts, *project.hazards]
    outcome.stray = [f"{r.code} {r.path}:{r.line}" for r in records if r.path not in checked]
    return outcome


def run_check(root: Path, *, cold: bool) -> tuple[list[Reported], list[str], float]:
    """Today's findings (hints included), the lines ``check`` wrote on stderr, and its wall time."""
    command = [sys.executable, "-m", "dynamo_lens", "check", "--format", "json", "--exit-zero", "--show-hints"]
    command += ["--no-cache"] * cold + ["."]
    pythonpath = os.pathsep.join(p for p in (str(SERVER), os.environ.get("PYTHONPATH", "")) if p)
    start = time.perf_counter()
    result = subprocess.run(
        command, cwd=root, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": pythonpath}
    )
    seconds = time.perf_counter() - start
    stderr = result.stderr.splitlines()
    if result.returncode != 0:
        raise Skipped(f"check exited {result.returncode} in {root}: {stderr[-1] if stderr else '(no message)'}")
    document = json.loads(result.stdout)
    reported = [Reported(f["code"], f["path"], f["line"], f["severity"], f["message"]) for f in document["findings"]]
    return reported, stderr, seconds


def judge(project: Project, reported: Sequence[Reported], outcome: Outcome) -> None:
    """Fill the counts and lists of ``outcome`` from today's findings and the project's records."""
    shown: dict[Key, Reported] = {}
    hinted: set[Key] = set()
    for finding in reported:
        if finding.severity != HINT:
            shown.setdefault(finding.key, finding)
        elif finding.code == COMPILE_SITE:
            outcome.compile_sites += 1
        else:
            outcome.hints += 1
            hinted.add(finding.key)
    outcome.warnings = sum(1 for f in shown.values() if f.severity != "info")
    outcome.infos = len(shown) - outcome.warnings

    verdicts = {v.key: v for v in project.verdicts}
    for key, finding in shown.items():
        verdict = verdicts.get(key)
        if verdict is None:
            outcome.unjudged.append(finding)
        elif verdict.true:
            outcome.true += 1
        else:
            outcome.false += 1
            outcome.wrong.append(verdict)
    for hazard in project.hazards:
        if hazard.code == NEW_CODE:
            outcome.needs_new_check.append(hazard)
        else:
            (outcome.found if hazard.key in shown else outcome.missed).append(hazard)
    for verdict in project.verdicts:
        if verdict.key not in shown:
            outcome.gone.append(Gone(verdict, "a hint now" if verdict.key in hinted else "not reported"))


# --- output ----------------------------------------------------------------------------------------------------------

COLUMNS = (
    ("project", 16),
    ("files", 6),
    ("sites", 6),
    ("warn", 5),
    ("info", 5),
    ("hints", 6),
    ("true", 5),
    ("false", 6),
    ("unjudged", 9),
    ("hazards", 8),
    ("seconds", 8),
)


def totals(outcomes: Iterable[Outcome]) -> Totals:
    total = Totals()
    for o in outcomes:
        total.true += o.true
        total.false += o.false
        total.unjudged += len(o.unjudged)
        total.found += len(o.found)
        total.recorded += o.recorded
        total.needs_new_check += len(o.needs_new_check)
        total.files += o.files
        total.seconds += o.seconds
    return total


def row(values: Sequence[object]) -> str:
    cells = [
        f"{value!s:<{width}}" if i == 0 else f"{value!s:>{width}}"
        for i, (value, (_, width)) in enumerate(zip(values, COLUMNS, strict=True))
    ]
    return " ".join(cells).rstrip()


def ratio(part: int, whole: int) -> str:
    return f"{part}/{whole} = {part / whole:.1%}" if whole else f"{part}/{whole} (n/a)"


def print_report(outcomes: Sequence[Outcome], args: argparse.Namespace) -> None:
    print(row([name for name, _ in COLUMNS]))
    for o in outcomes:
        hazards = f"{len(o.found)}/{o.recorded}"
        counts = [o.files, o.compile_sites, o.warnings, o.infos, o.hints, o.true, o.false, len(o.unjudged)]
        print(row([o.name, *counts, hazards, f"{o.seconds:.1f}"]))
    t = totals(outcomes)
    sums = [sum(getattr(o, name) for o in outcomes) for name in ("compile_sites", "warnings", "infos", "hints")]
    print(row(["total", t.files, *sums, t.true, t.false, t.unjudged, f"{t.found}/{t.recorded}", f"{t.seconds:.1f}"]))
    print()
    print(f"precision {ratio(t.true, t.true + t.false)} (true / judged warning and info findings)")
    new = f"; {t.needs_new_check} more need a new check" if t.needs_new_check else ""
    print(f"recall    {ratio(t.found, t.recorded)} (recorded hazards reported at warning or info{new})")
    if t.unjudged:
        print(
            f"WARNING: precision is provisional: {t.unjudged} warning/info findings have no verdict"
            + ("" if args.unjudged else " (list them with --unjudged)")
        )
    for o in outcomes:
        if o.absent:
            print(f"note: {o.name}: {len(o.absent)} files absent from the mirror, not checked: {', '.join(o.absent)}")
        if o.messages:
            print(f"note: {o.name}: check wrote {len(o.messages)} lines on stderr, e.g. {o.messages[0]}")

    if args.unjudged:
        section(
            "unjudged findings (judge them in the project's TOML file)", outcomes, lambda o: o.unjudged, unjudged_line
        )
    if args.missed:
        section("missed hazards (recorded, not reported at warning or info)", outcomes, lambda o: o.missed, hazard_line)
        section(
            'hazards that need a new check (code "new", not counted)',
            outcomes,
            lambda o: o.needs_new_check,
            hazard_line,
        )
    if args.gone:
        section("gone verdicts (no current warning/info finding matches)", outcomes, lambda o: o.gone, gone_line)
    if args.false:
        section("findings judged false", outcomes, lambda o: o.wrong, wrong_line)


def section(title: str, outcomes: Sequence[Outcome], items: Any, line: Any) -> None:
    print(f"\n{title}:")
    empty = True
    for o in outcomes:
        for item in items(o):
            print(f"  {o.name}: {line(item)}")
            empty = False
    if empty:
        print("  (none)")


def unjudged_line(f: Reported) -> str:
    return f"{f.code} {f.path}:{f.line} {f.severity}: {f.message}"


def hazard_line(h: Hazard) -> str:
    origin = "finding judged true" if h.source == "finding" else "hazard"
    return f"{h.code} {h.path}:{h.line} ({origin}): {h.why}"


def wrong_line(v: Verdict) -> str:
    return f"{v.code} {v.path}:{v.line}: {v.why}"


def gone_line(g: Gone) -> str:
    v = g.verdict
    meaning = "a lost hazard, counted as missed" if v.true else "good news, a false positive went away"
    return f"{v.code} {v.path}:{v.line} judged {str(v.true).lower()}, {g.now}: {meaning}"


def as_json(outcomes: Sequence[Outcome], skipped: Mapping[str, str]) -> dict[str, Any]:
    t = totals(outcomes)
    projects = []
    for o in outcomes:
        entry = asdict(o)
        entry["recorded"] = o.recorded
        projects.append(entry)
    return {
        "precision": t.precision,
        "recall": t.recall,
        "totals": {**asdict(t), "precision": t.precision, "recall": t.recall},
        "projects": projects,
        "skipped": dict(skipped),
    }


if __name__ == "__main__":
    sys.exit(main())
