"""What each torch release does with the runnable fixtures, measured: writes ``docs/torch-versions.md``.

    .venv/bin/python benchmarks/torch_versions.py [--python PATH ...] [--output docs/torch-versions.md]

Every fixture under ``tests/fixtures/static`` that compiles with ``backend="eager"`` runs under real
``torch.compile`` in each interpreter (``tests/static/torch_probe.py``: torch imported once, Dynamo reset between
fixtures). By default the interpreters are this checkout's ``.venv`` (the pinned torch) and every environment
``make oracle TORCH=X`` made under ``~/.cache/dynamo-lens/envs/``. Per fixture and version the table says what torch
did: the compiles of the fixture's own frames, whether a recompile limit was hit, the lines where the graph broke and
the exception the script ended with. A row is marked where a version behaves differently from the pinned torch
(graph-break ids are left out of that comparison: releases renumber them). Prints, per version, how many fixtures
behave as on the pinned torch.

Then the oracle tests (``pytest -m "oracle and slow"``: every claim a finding makes, compared with what that
interpreter's torch does, the facts keyed by release included) run with each interpreter as the oracle, and a table
gives, per finding code and release, how many of the code's oracle tests pass. It also writes
``server/dynamo_lens/torch_releases.json``, which the messages read: the releases measured and, per code, the oldest
release from which every measured release up to the newest passes all of the code's oracle tests. Below it, and
without torch, a message names the releases its claims hold for instead of the user's.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dynamo_lens.torch_facts import Release

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "static"
PROBE = ROOT / "tests" / "static" / "torch_probe.py"
PINNED_PYTHON = ROOT / ".venv" / "bin" / "python"
ENVS = Path.home() / ".cache" / "dynamo-lens" / "envs"
OUTPUT = ROOT / "docs" / "torch-versions.md"
RELEASES = ROOT / "server" / "dynamo_lens" / "torch_releases.json"
RUNNABLE = 'backend="eager"'
PROBE_TIMEOUT_S = 1800
ORACLE = (
    "-m",
    "pytest",
    "-m",
    "oracle and slow",
    "-q",
    "-rA",
    "-p",
    "no:cacheprovider",
    "tests/static",
    "tests/runtime",
)
ORACLE_OUTCOME = re.compile(r"^(?P<outcome>PASSED|FAILED|ERROR) \S+\[(?P<code>DL\d{3})")


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one torch did with one fixture."""

    compiles: int
    limit_hit: bool
    break_lines: tuple[int, ...]
    break_ids: tuple[str, ...]
    error: str

    @classmethod
    def from_probe(cls, path: str, result: Mapping[str, Any]) -> Outcome:
        """The probe's record for the fixture at ``path``; graph breaks count only in that file (a break inside
        torch's own code, such as the optimizer's deliberate one, is reported by Dynamo at torch's line)."""
        breaks = sorted({(b["line"], b.get("gb_id") or "") for b in result["graph_breaks"] if b["path"] == path})
        error = result["error"] or ""
        return cls(
            compiles=sum(result["compiles"].values()),
            limit_hit=bool(result["limit_hits"]),
            break_lines=tuple(line for line, _ in breaks),
            break_ids=tuple(gb_id for _, gb_id in breaks),
            error=error.partition(":")[0].rpartition(".")[2],
        )

    def behaviour(self) -> tuple[int, bool, tuple[int, ...], str]:
        """What is compared across versions: everything but the graph-break ids."""
        return self.compiles, self.limit_hit, self.break_lines, self.error

    def cell(self) -> str:
        parts = [f"{self.compiles} compile{'' if self.compiles == 1 else 's'}"]
        if self.limit_hit:
            parts.append("limit")
        for line, gb_id in zip(self.break_lines, self.break_ids, strict=True):
            parts.append(f"break {line}" + (f" {gb_id}" if gb_id else ""))
        if self.error:
            parts.append(f"raised {self.error}")
        return ", ".join(parts)


def runnable_fixtures() -> list[Path]:
    """Single-file fixtures that run themselves under ``backend="eager"`` (multi-file cases need their own cwd)."""
    return sorted(p for p in FIXTURES.glob("*.py") if RUNNABLE in p.read_text(encoding="utf-8"))


def torch_version(python: Path) -> str:
    """The torch version installed for ``python``, from its package metadata (torch is not imported)."""
    script = "import importlib.metadata as m; print(m.version('torch'))"
    return subprocess.run([str(python), "-c", script], capture_output=True, text=True, check=True).stdout.strip()


def probe(python: Path, fixtures: Sequence[Path]) -> dict[str, Outcome]:
    done = subprocess.run(
        [str(python), str(PROBE), *map(str, fixtures)],
        capture_output=True,
        text=True,
        timeout=PROBE_TIMEOUT_S,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"{python}: the probe failed ({done.returncode}):\n{done.stderr[-2000:]}")
    results: dict[str, Any] = json.loads(done.stdout)
    return {Path(path).name: Outcome.from_probe(path, result) for path, result in results.items()}


def default_pythons() -> list[Path]:
    found = [PINNED_PYTHON] if PINNED_PYTHON.exists() else []
    found += sorted(env / "bin" / "python" for env in ENVS.glob("torch-*") if (env / ".installed").exists())
    return found


def release_of(version: str) -> Release:
    """``"2.13.0+cpu"`` → ``Release(2, 13)``: Dynamo's behaviour follows major.minor."""
    release = Release.parse(version)
    if release is None:
        raise SystemExit(f"not a torch version: {version!r}")
    return release


def oracle(python: Path) -> dict[str, tuple[int, int]]:
    """Per code: (oracle tests passed, oracle tests run) with ``python``'s torch as the oracle."""
    env = {**os.environ, "DYNAMO_LENS_ORACLE_PYTHON": str(python)}
    done = subprocess.run(
        [sys.executable, *ORACLE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S
    )
    counts: dict[str, tuple[int, int]] = {}
    for line in done.stdout.splitlines():
        found = ORACLE_OUTCOME.match(line)
        if found:
            passed, run = counts.get(found["code"], (0, 0))
            counts[found["code"]] = (passed + (found["outcome"] == "PASSED"), run + 1)
    if not counts:
        raise SystemExit(f"{python}: the oracle tests did not run ({done.returncode}):\n{done.stdout[-2000:]}")
    return counts


def claims_hold_since(versions: Sequence[str], results: Mapping[str, Mapping[str, tuple[int, int]]]) -> dict[str, str]:
    """Per code: the oldest measured release from which every measured release up to the newest passes all of the
    code's oracle tests (left out when not even the newest does)."""
    since = {}
    for code in sorted({code for counts in results.values() for code in counts}):
        first = None
        for version in reversed(versions):
            passed, run = results[version].get(code, (0, 0))
            if passed != run:
                break
            first = str(release_of(version))
        if first is not None:
            since[code] = first
    return since


def render(
    versions: Sequence[str],
    pinned: str,
    table: Mapping[str, Mapping[str, Outcome]],
    results: Mapping[str, Mapping[str, tuple[int, int]]],
    since: Mapping[str, str],
    date: str,
) -> str:
    names = sorted(table[pinned])
    differing = [n for n in names if len({table[v][n].behaviour() for v in versions}) > 1]
    lines = [
        "# What each torch release does with the fixtures",
        "",
        f"Generated by `benchmarks/torch_versions.py` on {date} from real runs: every single-file fixture under",
        '`tests/fixtures/static` that compiles with `backend="eager"`, run under real `torch.compile` on CPU by',
        "`tests/static/torch_probe.py` in one environment per torch release. A cell gives the compiles of the",
        "fixture's own frames, `limit` when a recompile limit was hit, the lines where the graph broke (with the",
        "graph-break id where the release ships a registry, 2.8 and later) and the exception the script ended with.",
        f"The pinned torch is {pinned}.",
        "",
        "## Agreement with the pinned torch",
        "",
        "| torch | fixtures that behave as on " + pinned + " |",
        "|---|---|",
    ]
    for version in versions:
        same = sum(table[version][n].behaviour() == table[pinned][n].behaviour() for n in names)
        lines.append(f"| {version} | {same} of {len(names)} |")
    lines += [
        "",
        "## Per code: on which releases the claims hold",
        "",
        'How many of each code\'s oracle tests (`pytest -m "oracle and slow"`: every claim a finding makes, compared',
        "with what that release's torch does, facts keyed by release included) pass on each release, and the oldest",
        "release from which they all pass on every release measured up to the newest: messages name the user's",
        "release from there on, and the range below it.",
        "",
        "| code | " + " | ".join(versions) + " | claims hold since |",
        "|---|" + "---|" * (len(versions) + 1),
    ]
    for code in sorted({c for counts in results.values() for c in counts}):
        cells = ["{}/{}".format(*results[v].get(code, (0, 0))) for v in versions]
        lines.append(f"| {code} | " + " | ".join(cells) + f" | {since.get(code, 'none')} |")
    header = "| fixture | " + " | ".join(versions) + " |"
    rule = "|---|" + "---|" * len(versions)
    lines += ["", f"## The {len(differing)} fixtures that behave differently", "", header, rule]
    lines += [f"| `{n}` | " + " | ".join(table[v][n].cell() for v in versions) + " |" for n in differing]
    lines += ["", "## Every fixture", "", "<details><summary>All rows</summary>", "", header, rule]
    lines += [f"| `{n}` | " + " | ".join(table[v][n].cell() for v in versions) + " |" for n in names]
    lines += ["", "</details>", ""]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", type=Path, action="append", help="an interpreter with torch (repeatable)")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)
    pythons: list[Path] = args.python or default_pythons()
    if not pythons:
        raise SystemExit("no interpreter with torch: run `make` first, or pass --python")
    fixtures = runnable_fixtures()
    table: dict[str, dict[str, Outcome]] = {}
    results: dict[str, dict[str, tuple[int, int]]] = {}
    for python in pythons:
        version = torch_version(python)
        started = time.monotonic()
        table[version] = probe(python, fixtures)
        results[version] = oracle(python)
        print(f"torch {version}: fixtures and oracle in {time.monotonic() - started:.0f} s", file=sys.stderr)
    versions = sorted(table, key=release_of)
    pinned = torch_version(pythons[0])
    since = claims_hold_since(versions, results)
    report = render(versions, pinned, table, results, since, time.strftime("%Y-%m-%d"))
    args.output.write_text(report, encoding="utf-8")
    releases = {
        "pinned": str(release_of(pinned)),
        "measured": [str(release_of(v)) for v in versions],
        "claims_hold_since": since,
    }
    RELEASES.write_text(json.dumps(releases, indent=1) + "\n", encoding="utf-8")
    for version in versions:
        same = sum(table[version][n].behaviour() == table[pinned][n].behaviour() for n in table[pinned])
        print(f"torch {version}: {same}/{len(table[pinned])} fixtures behave as on {pinned}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
