"""``workspace/executeCommand``: run with instrumentation, show the last report, clear results, show guards.

``dynamoLens.run`` with ``[{"uri", "args", "test", "verify", "processes", "guardCost"}]`` runs the file (or
``-m pytest <test>``, or under ``torchrun``; ``guardCost`` also measures the guard checks per call) in the
selected interpreter through ``runtime.runner`` in a worker thread, with a cancellable ``window/workDoneProgress``
(cancelling kills the run's whole process group). One run per workspace at a time; a second is refused with a clear
error, as is any run in an untrusted workspace or with runtime analysis disabled. When it ends, the runtime findings
are published (carried over any edits made while it ran), inlay hints and code lenses are refreshed, the client
gets ``dynamoLens/runFinished`` with the summary, and the summary is the command's answer. A ``verify`` run compares
its counts with the previous run of the same target ("recompiles 8 → 1, limit no longer hit").
"""

from __future__ import annotations

import asyncio
import codecs
import functools
import itertools
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from dynamo_lens.lsp import diagnostics
from dynamo_lens.lsp.documents import TrackedFinding, track_change
from dynamo_lens.lsp.hover import hover_at
from dynamo_lens.lsp.interpreter import interpreter
from dynamo_lens.lsp.runs import RunRequest, RunResult, compare, summarise
from dynamo_lens.lsp.server import DynamoLensServer, RequestRefused
from dynamo_lens.model import Finding

if TYPE_CHECKING:
    from dynamo_lens.runtime.runner import RunOutcome, Target

RUN = "dynamoLens.run"
SHOW_REPORT = "dynamoLens.showReport"
CLEAR_RESULTS = "dynamoLens.clearResults"
SHOW_GUARDS = "dynamoLens.showGuards"
RUN_FINISHED = "dynamoLens/runFinished"

UNTRUSTED = (
    "Dynamo Lens does not run code in an untrusted workspace: running executes this workspace's scripts. "
    "Static analysis still works; trust the workspace to enable runs."
)
RUNTIME_DISABLED = "Dynamo Lens runs are turned off (setting dynamoLens.enableRuntime is false)."
ALREADY_RUNNING = "A Dynamo Lens run is already in progress in this workspace; wait for it to finish or cancel it."


def register(server: DynamoLensServer) -> None:
    run_ids = itertools.count(1)

    @server.command(RUN)
    @server.guarded()
    async def run_command(*arguments: Any) -> dict[str, Any] | None:
        request = parse_run_request(server, arguments)
        return await run_instrumented(server, request, reports_directory() / f"run-{next(run_ids)}.json")

    @server.command(SHOW_REPORT)
    @server.guarded()
    def show_report(*arguments: Any) -> dict[str, Any] | None:
        path = server.path_of(str(_argument(arguments).get("uri", "")))
        result = (server.runs.for_path(path) if path is not None else None) or server.runs.last()
        return result.report_json() if result is not None else None

    @server.command(CLEAR_RESULTS)
    @server.guarded()
    def clear_results(*arguments: Any) -> None:
        server.runs.results.clear()
        diagnostics.set_runtime_findings(server, [])
        refresh_views(server)

    @server.command(SHOW_GUARDS)
    @server.guarded()
    def show_guards(*arguments: Any) -> str | None:
        argument = _argument(arguments)
        path = server.path_of(str(argument.get("uri", "")))
        position = types.Position(line=int(argument.get("line", 0)), character=int(argument.get("character", 0)))
        return hover_at(server, path, position) if path is not None else None


@functools.cache
def reports_directory() -> Path:
    """A private directory for this server's run reports, made on the first run (``tempfile`` loads lazily)."""
    import tempfile

    return Path(tempfile.mkdtemp(prefix="dynamo-lens-runs-"))


def parse_run_request(server: DynamoLensServer, arguments: tuple[Any, ...]) -> RunRequest:
    argument = _argument(arguments)
    uri = argument.get("uri")
    path = server.path_of(uri) if isinstance(uri, str) else None
    args = argument.get("args") or []
    test = argument.get("test")
    if path is None or not isinstance(uri, str):
        raise JsonRpcInvalidParams(f"{RUN} needs a file URI, got {uri!r}")
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise JsonRpcInvalidParams(f"{RUN}: args must be a list of strings")
    if test is not None and not isinstance(test, str):
        raise JsonRpcInvalidParams(f"{RUN}: test must be a pytest node id")
    processes = argument.get("processes", 1)
    if not isinstance(processes, int) or isinstance(processes, bool) or processes < 1:
        raise JsonRpcInvalidParams(f"{RUN}: processes must be a positive number of ranks, got {processes!r}")
    if processes > 1 and test is not None:
        raise JsonRpcInvalidParams(f"{RUN}: a test runs in one process; leave out processes")
    verify = bool(argument.get("verify"))
    guard_cost = argument.get("guardCost", False)
    if not isinstance(guard_cost, bool):
        raise JsonRpcInvalidParams(f"{RUN}: guardCost must be true or false, got {guard_cost!r}")
    return RunRequest(
        uri=uri, path=path, args=tuple(args), test=test, verify=verify, processes=processes, guard_cost=guard_cost
    )


async def run_instrumented(server: DynamoLensServer, request: RunRequest, report_path: Path) -> dict[str, Any]:
    if not server.settings.trusted:
        raise RequestRefused(UNTRUSTED)
    if not server.settings.enable_runtime:
        raise RequestRefused(RUNTIME_DISABLED)
    root = diagnostics.workspace_root(server) or Path(request.path).parent
    cancel = server.runs.start(str(root))
    if cancel is None:
        raise RequestRefused(ALREADY_RUNNING)
    token = None
    try:
        from dynamo_lens.runtime.runner import run

        before = {path: list(server.documents.get(path).lines) for path in _open_paths(server)}
        token = await diagnostics.begin_progress(server, f"Dynamo Lens: running {Path(request.path).name}", True)
        if token is not None:
            server.work_done_progress.tokens[token].add_done_callback(lambda future: cancel.set())
        work = partial(
            run,
            _target(request),
            report_path=report_path,
            python=interpreter(server),
            cwd=root,
            timeout_s=server.settings.run_timeout,
            guard_cost=request.guard_cost,
            cancel=cancel,
            on_stdout=_output_sink(server, "stdout"),
            on_stderr=_output_sink(server, "stderr"),
        )
        outcome = await asyncio.to_thread(work)
    finally:
        cancel.set()  # a cancelled request (or a failure here) must not leave the run going or the slot taken
        server.runs.finish(str(root))
        diagnostics.end_progress(server, token)
    return finish(server, request, outcome, before)


def finish(
    server: DynamoLensServer, request: RunRequest, outcome: RunOutcome, before: Mapping[str, list[str]]
) -> dict[str, Any]:
    """Store and publish a finished run; returns its summary."""
    findings = list(outcome.report.findings) if outcome.report is not None else []
    tracked = [_carry_over_edits(server, finding, before) for finding in findings]
    summary = summarise(outcome, request.uri)
    previous = server.runs.results.get(_key(request))
    verification = compare(previous.summary, summary) if request.verify and previous is not None else None
    summary["verify"] = verification
    versions = {path: server.documents.get(path).version for path in _open_paths(server)}
    server.runs.results.pop(_key(request), None)
    server.runs.results[_key(request)] = RunResult(request, outcome, tuple(findings), summary, verification, versions)
    diagnostics.set_runtime_findings(server, tracked)
    refresh_views(server)
    server.protocol.notify(RUN_FINISHED, summary)
    if summary["error"]:
        server.log(f"dynamo-lens: run of {request.path}: {summary['error']}", types.MessageType.Warning)
        server.show(f"Dynamo Lens: {Path(request.path).name}: {summary['error']}", types.MessageType.Warning)
    return summary


def refresh_views(server: DynamoLensServer) -> None:
    """Ask the client to re-request inlay hints and code lenses, where it supports refresh requests."""
    workspace = server.client_capabilities.workspace
    if workspace is None:
        return
    if workspace.inlay_hint is not None and workspace.inlay_hint.refresh_support:
        server.workspace_inlay_hint_refresh(None)
    if workspace.code_lens is not None and workspace.code_lens.refresh_support:
        server.workspace_code_lens_refresh(None)


def _carry_over_edits(server: DynamoLensServer, finding: Finding, before: Mapping[str, list[str]]) -> TrackedFinding:
    """A finding located in the text a run started from, moved into the text the editor has now."""
    item = TrackedFinding(finding)
    old = before.get(finding.path)
    state = server.documents.find(finding.path)
    if old is None or state is None or not state.open or old == state.lines:
        return item
    change = types.TextDocumentContentChangeWholeDocument(text="".join(state.lines))
    [moved] = track_change([item], change, old)
    return moved


def _target(request: RunRequest) -> Target:
    from dynamo_lens.runtime.runner import Target

    if request.test is not None:
        return Target(module="pytest", args=(request.test, *request.args))
    if request.processes > 1:  # every rank is recorded (the runner's worker_site), DL504 compares them
        ranks = ("--standalone", "--nproc-per-node", str(request.processes))  # a free port of its own
        return Target(module="torch.distributed.run", args=(*ranks, request.path, *request.args))
    return Target(script=request.path, args=request.args)


def _key(request: RunRequest) -> str:
    return f"{request.path}::{request.test or ''}"


def _open_paths(server: DynamoLensServer) -> list[str]:
    return [path for path in server.documents.paths() if server.documents.get(path).open]


def _argument(arguments: tuple[Any, ...]) -> Mapping[str, Any]:
    first = arguments[0] if arguments else {}
    if not isinstance(first, Mapping):
        raise JsonRpcInvalidParams(f"expected one object argument, got {first!r}")
    return first


def _output_sink(server: DynamoLensServer, stream: str) -> Callable[[bytes], None]:
    """The script's output, line by line, to the client's log (called from the runner's reader threads)."""
    loop = asyncio.get_running_loop()
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    pending = [""]

    def write(chunk: bytes) -> None:
        text = pending[0] + decoder.decode(chunk)
        *complete, pending[0] = text.split("\n")
        if complete:
            message = "\n".join(f"[{stream}] {line}" for line in complete)
            loop.call_soon_threadsafe(server.log, message)

    return write
