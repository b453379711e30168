// Drive `dynamo-lens serve` over stdio with vscode-jsonrpc, the transport VS Code uses, and fail on anything that is
// not a well-formed LSP message on the server's stdout (VS Code's reader breaks on a single stray line).
//
//   node smoke.js <python> <workspace dir> <file with a DL101 hazard> <0-based hazard line>
//
// Prints one JSON line with what it saw and exits 0 when everything checked out, 1 otherwise.
"use strict";

const { spawn } = require("node:child_process");
const fs = require("node:fs");
const path = require("node:path");
const { pathToFileURL } = require("node:url");
const rpc = require("vscode-jsonrpc/node");

const [python, workspace, file, hazardLine] = process.argv.slice(2);
const seen = { protocolErrors: [], diagnostics: null, hover: null, shutdown: false };

function finish(ok, why) {
  process.stdout.write(JSON.stringify({ ok, why, ...seen }) + "\n");
  process.exit(ok ? 0 : 1);
}

const server = spawn(python, ["-m", "dynamo_lens", "serve"], { cwd: workspace, stdio: ["pipe", "pipe", "inherit"] });
server.on("error", (error) => finish(false, `cannot start the server: ${error.message}`));
const connection = rpc.createMessageConnection(
  new rpc.StreamMessageReader(server.stdout),
  new rpc.StreamMessageWriter(server.stdin),
);
connection.onError(([error]) => {
  seen.protocolErrors.push(String(error && error.message ? error.message : error));
  finish(false, "the server wrote something that is not an LSP message");
});
connection.onRequest("window/workDoneProgress/create", () => null);
connection.onRequest("workspace/configuration", (params) => params.items.map(() => null));
connection.onNotification(() => undefined);

const uri = pathToFileURL(file).href;
const gotDiagnostics = new Promise((resolve) => {
  connection.onNotification("textDocument/publishDiagnostics", (params) => {
    if (params.uri === uri && params.version === 1) resolve(params.diagnostics);
  });
});
connection.listen();

const timer = setTimeout(() => finish(false, "timed out"), 30000);

(async () => {
  await connection.sendRequest("initialize", {
    processId: process.pid,
    rootUri: pathToFileURL(workspace).href,
    capabilities: { window: { workDoneProgress: true }, workspace: { configuration: true } },
    initializationOptions: { debounceMs: 0 },
  });
  connection.sendNotification("initialized", {});
  const text = fs.readFileSync(file, "utf8");
  connection.sendNotification("textDocument/didOpen", {
    textDocument: { uri, languageId: "python", version: 1, text },
  });
  const diagnostics = await gotDiagnostics;
  seen.diagnostics = diagnostics.map((d) => ({ code: d.code, line: d.range.start.line, source: d.source }));
  const hover = await connection.sendRequest("textDocument/hover", {
    textDocument: { uri },
    position: { line: 3, character: 7 },
  });
  seen.hover = hover && hover.contents ? hover.contents.value : null;
  await connection.sendRequest("shutdown");
  seen.shutdown = true;
  connection.sendNotification("exit");
  server.on("exit", (code) => {
    clearTimeout(timer);
    const hazard = seen.diagnostics.find((d) => d.code === "DL101" && d.line === Number(hazardLine));
    if (seen.protocolErrors.length) finish(false, "the server wrote something that is not an LSP message");
    else if (!hazard) finish(false, `no DL101 on line ${hazardLine}`);
    else if (!seen.hover) finish(false, "no hover");
    else finish(code === 0, `server exit code ${code}`);
  });
})().catch((error) => finish(false, String(error)));
