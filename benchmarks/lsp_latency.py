"""How fast the language server answers, over real JSON-RPC on stdio (the transport editors use).

* ``start → initialize``: from spawning ``dynamo-lens serve`` to the ``initialize`` answer (target ≤ 0.5 s), beside
  the same for a bare pygls server that registers nothing: the floor that importing pygls and lsprotocol sets; the
  difference of the medians has its own target (≤ 0.1 s over the floor). ``--start-only`` stops there.
* ``didChange → publishDiagnostics``: one incremental edit at a time, timed until the diagnostics for that version
  arrive; p50/p95 over 100 edits (target p95 ≤ 50 ms). On a generated 3,000-line file with 20 recompiling modules
  (about 20 findings): a module-level name renamed (``debounceMs: 0``: the analysis itself, summarise, link,
  convert, send; then the default debounce with a typing pause between edits: an edit after a quiet period is
  analysed at once, only bursts wait), and an empty line typed inside a function (every line below moves). Then on
  the transformers module nearest 3,000 lines (downloaded once, as ``static_scan.py`` does): a local variable
  renamed inside a function, and an empty line typed.
* ``hover``: 100 hovers on compiled classes of the generated file, p50/p95 (target p95 ≤ 20 ms).
* memory: the server's resident set size after it has scanned a generated 2,000-file workspace, and the scan time;
  then the same renames on the generated file inside that workspace (each edit is linked against all 2,000 files).

    .venv/bin/python benchmarks/lsp_latency.py [--edits 100] [--files 2000] [--no-corpus] [--start-only]

Prints figures and each target as a ratio (measured / target; ≤ 1.00 meets it). Wall-clock latencies depend on what
else the machine runs, so the server's own CPU time (from ``/proc/<pid>/stat``) is printed beside them: CPU seconds
at the ``initialize`` answer, and CPU milliseconds per edit.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.client import LanguageClient
from pygls.uris import from_fs_path

SERVER = [sys.executable, "-m", "dynamo_lens", "serve"]
BARE_PYGLS = [
    sys.executable,
    "-c",
    "from pygls.lsp.server import LanguageServer; LanguageServer('bare', '1').start_io()",
]
EDITOR_FILE_LINES = 3000

MODULE = """\
class Counter{n}(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.steps = 0
        self.scale = nn.Linear(4, 4)

    def forward(self, x):
        self.steps += 1
        return self.scale(x) * 2


compiled_{n} = torch.compile(Counter{n}())
"""
HEADER = "import torch\nfrom torch import nn\n\n\n"


def big_file(lines: int, modules: int) -> tuple[str, list[int]]:
    """A file of about ``lines`` lines with ``modules`` recompiling modules (a DL101 and a DL001 each); also the
    0-based lines of the ``class`` statements."""
    parts = [HEADER]
    class_lines = []
    filler_per_module = max(0, (lines - len(HEADER.splitlines())) // modules - len(MODULE.splitlines()) - 2)
    line = len(HEADER.splitlines())
    for n in range(modules):
        class_lines.append(line)
        parts.append(MODULE.format(n=n) + "\n\n")
        line += len(MODULE.splitlines()) + 2
        for i in range(filler_per_module):
            parts.append(f"setting_{n}_{i} = {i}  # plain module-level code\n")
        line += filler_per_module
    return "".join(parts), class_lines


class Client(LanguageClient):
    def __init__(self) -> None:
        super().__init__("lsp-latency", "1")
        self.arrived: dict[tuple[str, int | None], float] = {}
        self.event = asyncio.Event()
        self.scan_done = asyncio.Event()

        @self.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def publish(params: types.PublishDiagnosticsParams) -> None:
            self.arrived[(params.uri, params.version)] = time.perf_counter()
            self.event.set()

        @self.feature(types.WINDOW_WORK_DONE_PROGRESS_CREATE)
        def create(params: types.WorkDoneProgressCreateParams) -> None:
            return None

        @self.feature(types.PROGRESS)
        def progress(params: types.ProgressParams) -> None:
            value: Any = params.value
            kind = value.get("kind") if isinstance(value, dict) else getattr(value, "kind", None)
            if kind == "end":
                self.scan_done.set()

        @self.feature(types.WORKSPACE_CONFIGURATION)
        def configuration(params: types.ConfigurationParams) -> list[Any]:
            return [None for _ in params.items]

    async def wait_for(self, uri: str, version: int) -> float:
        while (uri, version) not in self.arrived:
            self.event.clear()
            await asyncio.wait_for(self.event.wait(), 30)
        return self.arrived[(uri, version)]


async def start(root: Path, options: dict[str, Any], command: list[str] = SERVER) -> tuple[Client, float]:
    """A started and initialised server, and the wall seconds until ``initialize`` was answered."""
    client = Client()
    began = time.perf_counter()
    await client.start_io(*command)
    capabilities = types.ClientCapabilities(
        window=types.WindowClientCapabilities(work_done_progress=True),
        workspace=types.WorkspaceClientCapabilities(configuration=True),
    )
    await client.initialize_async(
        types.InitializeParams(
            capabilities=capabilities, root_uri=from_fs_path(str(root)), initialization_options=options
        )
    )
    elapsed = time.perf_counter() - began
    client.initialized(types.InitializedParams())
    return client, elapsed


async def stop(client: Client) -> None:
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def report(name: str, values: list[float], target: float | None, unit: str = "ms") -> None:
    p50, p95 = percentile(values, 50), percentile(values, 95)
    ratio = f"  p95/target = {p95 / target:.2f}" if target else ""
    print(f"{name:<48} p50 {p50:7.1f} {unit}  p95 {p95:7.1f} {unit}  max {max(values):7.1f} {unit}{ratio}")


Change = tuple[types.Range, str]
"""An incremental edit: the range it replaces and the text typed."""


def renames(text: str) -> list[Change]:
    """On the generated file: ``setting_`` → ``tuning_`` at the start of filler lines, spread over the file."""
    filler = [i for i, line in enumerate(text.splitlines()) if line.startswith("setting_")]
    lines = [filler[(n * 37) % len(filler)] for n in range(len(filler))]
    return [(types.Range(types.Position(line, 0), types.Position(line, 7)), "tuning_") for line in lines]


def local_renames(text: str) -> list[Change]:
    """A character typed at the end of the target of ``name = ...`` inside functions (single-line, ASCII lines)."""
    lines = text.splitlines()
    found = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for statement in node.body:
                target = statement.targets[0] if isinstance(statement, ast.Assign) else None
                if isinstance(target, ast.Name) and statement.end_lineno == statement.lineno:
                    line = statement.lineno - 1
                    if lines[line].isascii():
                        end = types.Position(line, target.end_col_offset or 0)
                        found.append((types.Range(end, end), "q"))
    random.Random(0).shuffle(found)
    return found


def new_lines(text: str) -> list[Change]:
    """An empty line typed after a statement inside a function, at random places (the file grows by one line per
    edit, so the lines are given for the text as it is after the edits before them)."""
    places = sorted(
        statement.end_lineno or statement.lineno
        for node in ast.walk(ast.parse(text))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        for statement in node.body[:-1]
    )
    random.Random(0).shuffle(places)
    changes: list[Change] = []
    typed: list[int] = []
    for place in places:
        line = place + sum(1 for earlier in typed if earlier < place)  # lines typed above it moved it down
        typed.append(place)
        start = types.Position(line, 0)
        changes.append((types.Range(start, start), "\n"))
    return changes


async def edits(
    root: Path,
    text: str,
    changes: list[Change],
    options: dict[str, Any],
    pause: float,
    *,
    after_scan: bool = False,
) -> tuple[list[float], float]:
    """Latencies (ms) of the ``changes`` made one after the other to ``root/big.py`` (open with ``text``), and the
    server's CPU milliseconds per edit (``after_scan``: start editing once the workspace scan has finished, so
    that every edit is linked against the whole workspace)."""
    path = root / "big.py"
    uri = from_fs_path(str(path))
    assert uri is not None
    client, _ = await start(root, options)
    if after_scan:
        await asyncio.wait_for(client.scan_done.wait(), 600)
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text))
    )
    await client.wait_for(uri, 1)
    latencies = []
    cpu_before = cpu_seconds(server_pid(client))
    for version, (where, typed) in enumerate(changes, start=2):
        change = types.TextDocumentContentChangePartial(range=where, text=typed)
        sent = time.perf_counter()
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(types.VersionedTextDocumentIdentifier(uri=uri, version=version), [change])
        )
        latencies.append((await client.wait_for(uri, version) - sent) * 1000)
        await asyncio.sleep(pause)
    cpu_ms = (cpu_seconds(server_pid(client)) - cpu_before) * 1000 / len(changes)
    await stop(client)
    return latencies, cpu_ms


async def hovers(root: Path, text: str, class_lines: list[int], count: int) -> list[float]:
    path = root / "big.py"
    uri = from_fs_path(str(path))
    assert uri is not None
    client, _ = await start(root, {"debounceMs": 0})
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text))
    )
    await client.wait_for(uri, 1)
    latencies = []
    for i in range(count):
        line = class_lines[i % len(class_lines)]
        sent = time.perf_counter()
        result = await client.text_document_hover_async(
            types.HoverParams(types.TextDocumentIdentifier(uri=uri), types.Position(line=line, character=8))
        )
        latencies.append((time.perf_counter() - sent) * 1000)
        assert result is not None, f"no hover on line {line}"
    await stop(client)
    return latencies


def cpu_seconds(pid: int) -> float:
    """User + system CPU time the process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def server_pid(client: LanguageClient) -> int:
    assert client._server is not None
    return client._server.pid


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def generate_workspace(root: Path, files: int) -> None:
    """``files`` small modules in packages of 100; every tenth defines a compiled, recompiling module."""
    for n in range(files):
        package = root / f"pkg_{n // 100}"
        package.mkdir(exist_ok=True)
        body = HEADER + MODULE.format(n=n) if n % 10 == 0 else HEADER + f"def helper_{n}(x):\n    return x + {n}\n"
        (package / f"module_{n}.py").write_text(body + "".join(f"value_{i} = {i}\n" for i in range(60)))


async def workspace_memory(root: Path) -> tuple[float, float, float]:
    """(RSS before the scan, RSS after it, scan seconds) for the workspace under ``root``."""
    client, _ = await start(root, {"debounceMs": 0})
    pid = server_pid(client)
    began = time.perf_counter()
    before = rss_mib(pid)
    await asyncio.wait_for(client.scan_done.wait(), 600)
    elapsed = time.perf_counter() - began
    await asyncio.sleep(0.5)
    after = rss_mib(pid)
    await stop(client)
    return before, after, elapsed


def corpus_file() -> Path | None:
    """The transformers module nearest 3,000 lines that defines an ``nn.Module`` (the static benchmark's corpus)."""
    from static_scan import prepare_corpus

    try:
        roots = prepare_corpus()
    except (OSError, subprocess.CalledProcessError) as exc:
        print(f"(no corpus file: {exc})")
        return None
    files = [p for p in roots[0].rglob("*.py") if b"nn.Module" in p.read_bytes()]
    return min(files, key=lambda p: abs(p.read_bytes().count(b"\n") - EDITOR_FILE_LINES))


def corpus_root(path: Path) -> Path:
    """The unpacked wheel directory ``path`` lies in."""
    from static_scan import SOURCES

    return SOURCES / path.relative_to(SOURCES).parts[0]


async def timed_edits(root: Path, label: str, text: str, changes: list[Change], options: dict[str, Any]) -> None:
    latencies, cpu_ms = await edits(root, text, changes, options, 0.0 if options.get("debounceMs") == 0 else 0.25)
    report(f"didChange -> publishDiagnostics ({label})", latencies, 50.0)
    print(f"  server CPU per edit: {cpu_ms:.1f} ms")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edits", type=int, default=100)
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--starts", type=int, default=5)
    parser.add_argument("--no-corpus", action="store_true", help="skip the edits on a real (downloaded) module")
    parser.add_argument("--start-only", action="store_true", help="only the start-up comparison with bare pygls")
    args = parser.parse_args()
    text, class_lines = big_file(EDITOR_FILE_LINES, 20)
    print(f"generated file: {len(text.splitlines())} lines, {len(class_lines)} recompiling modules")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "big.py").write_text(text)
        medians = []
        for label, command in (("dynamo-lens serve", SERVER), ("bare pygls server (the floor)", BARE_PYGLS)):
            starts, start_cpu = [], []
            for _ in range(args.starts):
                client, elapsed = await start(root, {}, command)
                starts.append(elapsed * 1000)
                start_cpu.append(cpu_seconds(server_pid(client)) * 1000)
                await stop(client)
            report(f"start -> initialize answered: {label}", starts, 500.0)
            report("  server CPU at the initialize answer", start_cpu, 500.0)
            medians.append(percentile(starts, 50))
        over = medians[0] - medians[1]
        print(f"{'start -> initialize over the floor (p50)':<48} {over:7.1f} ms  over/target = {over / 100.0:.2f}")
        if args.start_only:
            return
        fast = {"debounceMs": 0}
        await timed_edits(root, "rename, debounce 0", text, renames(text)[: args.edits], fast)
        await timed_edits(root, "rename, default, pauses", text, renames(text)[: args.edits], {})
        await timed_edits(root, "new line, debounce 0", text, new_lines(text)[: args.edits], fast)
        report("hover on a compiled class", await hovers(root, text, class_lines, 100), 20.0)
        real = None if args.no_corpus else corpus_file()
        if real is not None:
            code = real.read_text(encoding="utf-8")
            name = "/".join(real.parts[-3:])
            print(f"real file: {name}, {len(code.splitlines())} lines")
            (root / "big.py").write_text(code)
            await timed_edits(root, "local rename, debounce 0", code, local_renames(code)[: args.edits], fast)
            await timed_edits(root, "new line, debounce 0", code, new_lines(code)[: args.edits], fast)
    if real is not None:
        with tempfile.TemporaryDirectory() as tmp:
            tree = Path(tmp) / "ws"
            shutil.copytree(corpus_root(real), tree)
            (tree / "big.py").write_text(code)
            files = sum(1 for _ in tree.rglob("*.py"))
            changes = local_renames(code)[: args.edits // 2]
            latencies, cpu_ms = await edits(tree, code, changes, fast, 0.0, after_scan=True)
            report(f"didChange -> publishDiagnostics (real file in its own tree, {files} files)", latencies, 50.0)
            print(f"  server CPU per edit: {cpu_ms:.1f} ms")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        generate_workspace(root, args.files)
        before, after, seconds = await workspace_memory(root)
        memory = f"server RSS {before:.0f} MiB before, {after:.0f} MiB after"
        print(f"{args.files}-file workspace: scan {seconds:.1f} s, {memory}")
        (root / "big.py").write_text(text)
        changes = renames(text)[: args.edits // 2]
        latencies, cpu_ms = await edits(root, text, changes, {"debounceMs": 0}, 0.0, after_scan=True)
        report(f"didChange -> publishDiagnostics (in the {args.files}-file workspace)", latencies, 50.0)
        print(f"  server CPU per edit: {cpu_ms:.1f} ms")


if __name__ == "__main__":
    asyncio.run(main())
