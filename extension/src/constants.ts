import * as path from "node:path";

/** Name shown in the output channel, the status bar and messages. */
export const DISPLAY_NAME = "Dynamo Lens";

/** Id of the LanguageClient; also the prefix of the `dynamoLens.trace.server` setting. */
export const CLIENT_ID = "dynamoLens";

/** The `contributes.configuration` section every `dynamoLens.*` setting lives under. */
export const CONFIG_SECTION = "dynamoLens";

/** Oldest Python that can run the bundled server (the libs are built for it). */
export const MIN_PYTHON: readonly [number, number] = [3, 10];

/** Interpreter used when neither the Python extension nor `dynamoLens.interpreter` names one. */
export const DEFAULT_PYTHON = "python3";

/** The Python extension; optional: its API is used when it is installed, never required. */
export const PYTHON_EXTENSION_ID = "ms-python.python";

/** Custom notification the server sends when an instrumented run finishes (DESIGN.md §4). */
export const RUN_FINISHED = "dynamoLens/runFinished";

/** Commands the server executes (`workspace/executeCommand`); vscode-languageclient registers them itself. */
export const ServerCommand = {
  run: "dynamoLens.run",
  showReport: "dynamoLens.showReport",
  clearResults: "dynamoLens.clearResults",
  /** Used by the server's "Show guards" code lens with `[{uri, line, character}]` (0-based); shown as the hover. */
  showGuards: "dynamoLens.showGuards",
} as const;

/** Commands this extension contributes in package.json; distinct ids from the server's so both can be registered. */
export const ClientCommand = {
  runFile: "dynamoLens.runFile",
  runTest: "dynamoLens.runTest",
  runFileWithRanks: "dynamoLens.runFileWithRanks",
  runFileMeasuringGuards: "dynamoLens.runFileMeasuringGuards",
  showLastReport: "dynamoLens.showLastReport",
  clear: "dynamoLens.clear",
  restart: "dynamoLens.restart",
  showOutput: "dynamoLens.showOutput",
  revealLocation: "dynamoLens.revealLocation",
} as const;

/** Id of the tree view of compiled frames (package.json `contributes.views`). */
export const FRAMES_VIEW_ID = "dynamoLens.frames";

/** Folder of the .vsix that the bundle-server script fills: `libs/` (pygls & co.) and `server/` (dynamo_lens). */
export function bundledDir(extensionRoot: string): string {
  return path.join(extensionRoot, "extension", "bundled");
}

/** The script the server is started with: it sets up `sys.path` from {@link bundledDir} and runs `dynamo_lens serve`. */
export function bootstrapScript(extensionRoot: string): string {
  return path.join(extensionRoot, "extension", "bootstrap", "bootstrap.py");
}
