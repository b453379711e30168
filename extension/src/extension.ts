/** Activation: wires the logger, the server, the commands, the status bar and the frames view together. */
import * as path from "node:path";
import type { ExtensionContext } from "vscode";
import { fetchReport, registerCommands } from "./commands";
import { CONFIG_SECTION, DISPLAY_NAME, FRAMES_VIEW_ID } from "./constants";
import { logger, setLogChannel } from "./logger";
import { onPythonExtensionInterpreterChange } from "./python";
import { readSummary } from "./report";
import { ServerManager } from "./server";
import { RunStatus } from "./status";
import { FramesTreeProvider } from "./views/framesTree";
import * as api from "./vscodeapi";

let manager: ServerManager | undefined;

export async function activate(context: ExtensionContext): Promise<void> {
  const channel = api.createLogOutputChannel(DISPLAY_NAME);
  setLogChannel(channel);
  const status = new RunStatus();
  const frames = new FramesTreeProvider();
  const root = (): string | undefined => api.getWorkspaceFolders()[0]?.uri.fsPath;

  /** Both the `dynamoLens/runFinished` notification and the `dynamoLens.run` answer land here. */
  const showRun = async (result: unknown, fileUri?: string): Promise<void> => {
    const summary = readSummary(result);
    if (summary) {
      status.show(summary);
    } else {
      status.idle();
    }
    const client = manager?.current();
    const uri = summary?.uri ?? fileUri;
    if (client && uri) {
      try {
        frames.show(await fetchReport(client, uri), root());
      } catch (error) {
        logger.warn(`Could not load the run report: ${String(error)}`);
      }
    }
  };

  manager = new ServerManager(context.extensionPath, {
    runStarted: (uri) => status.running(path.basename(api.parseUri(uri).fsPath)),
    runFinished: (params) => void showRun(params),
  });
  const server = manager;
  context.subscriptions.push(
    channel,
    status,
    frames,
    server,
    api.createTreeView(FRAMES_VIEW_ID, frames),
    ...registerCommands({
      client: () => server.current(),
      restart: (reason) => server.restart(reason),
      runStarted: (file) => status.running(file),
      runFailed: (message) => status.failed(message),
      runFinished: showRun,
      cleared: () => {
        frames.clear();
        status.idle();
      },
    }),
    api.onDidGrantWorkspaceTrust(() => void server.restart("workspace trusted")),
    api.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration(`${CONFIG_SECTION}.interpreter`)) {
        void server.restart("dynamoLens.interpreter changed");
      }
    }),
  );
  const pythonChanges = await onPythonExtensionInterpreterChange(
    () => void server.restart("Python interpreter changed"),
  );
  if (pythonChanges) {
    context.subscriptions.push(pythonChanges);
  }
  logger.info(
    `${DISPLAY_NAME} ${String(context.extension.packageJSON.version)} from ${path.basename(context.extensionPath)}`,
  );
  await server.restart("activation");
}

export async function deactivate(): Promise<void> {
  await manager?.stop();
  manager = undefined;
}
