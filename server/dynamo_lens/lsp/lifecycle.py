"""``initialize``, ``initialized`` and ``workspace/didChangeConfiguration``: settings in, background work started.

Settings come from ``initializationOptions`` first, then from ``workspace/configuration`` (section ``dynamoLens``) once
the client is ready, and again whenever it says they changed. Each new value re-analyses the open documents; a new
torch to describe (another interpreter, or the workspace's ``torch-version``) re-scans the workspace too.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from lsprotocol import types

from dynamo_lens import torch_facts
from dynamo_lens.lsp import diagnostics
from dynamo_lens.lsp.interpreter import selected_torch
from dynamo_lens.lsp.server import DynamoLensServer
from dynamo_lens.lsp.settings import SECTION, ServerSettings, parse_settings
from dynamo_lens.torch_facts import TorchTarget


def register(server: DynamoLensServer) -> None:
    @server.feature(types.INITIALIZE)
    @server.guarded()
    def initialize(params: types.InitializeParams) -> None:
        apply_settings(server, params.initialization_options, initial=True)
        if server.client_supports_pull_diagnostics:
            diagnostics.register_pull(server)

    @server.feature(types.INITIALIZED)
    @server.guarded()
    async def initialized(params: types.InitializedParams) -> None:
        await refresh_configuration(server)
        await describe_users_torch(server)
        diagnostics.start_workspace_scan(server)
        await diagnostics.watch_python_files(server)

    @server.feature(types.SHUTDOWN)
    @server.guarded()
    def shutdown(params: None) -> None:
        server.stopping = True
        for task in (server.workspace_scan, server.relink):
            if task is not None:
                task.cancel()

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    @server.guarded()
    async def did_change_configuration(params: types.DidChangeConfigurationParams) -> None:
        if not await refresh_configuration(server):
            apply_settings(server, params.settings)
        if await describe_users_torch(server):
            if server.workspace_scan is not None:
                server.workspace_scan.cancel()
            diagnostics.start_workspace_scan(server)
        diagnostics.reanalyse_open_documents(server)


def apply_settings(server: DynamoLensServer, raw: Any, *, initial: bool = False) -> ServerSettings:
    """Parse and install settings. After ``initialize`` they can lower trust, never raise it (a workspace's own
    settings must not be able to trust itself; the client restarts the server when the user grants trust)."""
    settings, problems = parse_settings(raw, server.settings)
    if not initial:
        settings = replace(settings, trusted=server.settings.trusted and settings.trusted)
    for problem in problems:
        server.log(f"dynamo-lens: {problem}", types.MessageType.Warning)
    if problems:
        server.show("Dynamo Lens: some settings were invalid and use their defaults; see the output log.")
    server.settings = settings
    server.rules = None
    return settings


async def refresh_configuration(server: DynamoLensServer) -> bool:
    """Ask the client for the ``dynamoLens`` section when it supports ``workspace/configuration``."""
    workspace = server.client_capabilities.workspace
    if workspace is None or not workspace.configuration:
        return False
    answer = await server.workspace_configuration_async(
        types.ConfigurationParams(items=[types.ConfigurationItem(section=SECTION)])
    )
    if answer and answer[0] is not None:
        apply_settings(server, answer[0])
    return True


async def describe_users_torch(server: DynamoLensServer) -> bool:
    """From now on, describe the torch the user runs: the selected interpreter's, or the release the workspace's
    ``torch-version`` names. True when that changed what the analysis describes."""
    target = await selected_torch(server)
    named = diagnostics.current_rules(server).torch_version
    if named is not None and named != target.release:
        target = TorchTarget(named)
    changed = target != torch_facts.current()
    torch_facts.use(target)
    return changed
