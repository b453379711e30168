import * as path from "node:path";
import type { Disposable, TextEditor } from "vscode";
import { ExecuteCommandRequest, type LanguageClient } from "vscode-languageclient/node";
import { ClientCommand, DISPLAY_NAME, ServerCommand } from "./constants";
import { logger } from "./logger";
import { parseRanks } from "./ranks";
import { readReport, type RunReport } from "./report";
import { testNodeIdAt } from "./testId";
import * as api from "./vscodeapi";

/** What the commands need from the rest of the extension. */
export interface CommandContext {
  /** The running client, or undefined (the server could not start; the reason is in the log). */
  client(): LanguageClient | undefined;
  restart(reason: string): Promise<void>;
  /** Called with the run's summary (the `dynamoLens.run` result) and the file that ran. */
  runFinished(result: unknown, fileUri: string): Promise<void>;
  runStarted(file: string): void;
  runFailed(message: string): void;
  cleared(): void;
}

/** Sends one `workspace/executeCommand` to the server; the client stays dumb (ruff-vscode's habit). */
export async function executeServerCommand(
  client: LanguageClient,
  command: string,
  argument?: object,
): Promise<unknown> {
  return client.sendRequest(ExecuteCommandRequest.type, { command, arguments: argument ? [argument] : [] });
}

/** The last report the server holds for `uri` (any file of the run), or undefined. */
export async function fetchReport(client: LanguageClient, uri: string): Promise<RunReport | undefined> {
  return readReport(await executeServerCommand(client, ServerCommand.showReport, { uri }));
}

function pythonEditor(): TextEditor | undefined {
  const editor = api.activeTextEditor();
  if (!editor || editor.document.languageId !== "python") {
    void api.showInformationMessage(`${DISPLAY_NAME}: open a Python file first.`);
    return undefined;
  }
  return editor;
}

function runningClient(context: CommandContext): LanguageClient | undefined {
  const client = context.client();
  if (!client) {
    void api.showErrorMessage(`${DISPLAY_NAME}: the language server is not running.`, "Show Output").then((choice) => {
      if (choice) {
        logger.show();
      }
    });
  }
  return client;
}

/** Asks how many ranks `torchrun` starts on this machine; undefined when the user cancels. */
async function askRanks(): Promise<number | undefined> {
  const answer = await api.showInputBox({
    title: `${DISPLAY_NAME}: run with torchrun`,
    prompt: "Ranks (processes) to start on this machine; each is recorded and the ranks are compared",
    value: "2",
    validateInput: (text) => (parseRanks(text) === undefined ? "a whole number from 2 to 64" : undefined),
  });
  return answer === undefined ? undefined : parseRanks(answer);
}

/** What a run command runs: the file, the test under the cursor, the file under torchrun, the file with the
 * guard checks measured (`run --guard-cost`). */
type RunKind = "file" | "cursor" | "ranks" | "guardCost";

async function run(context: CommandContext, test: RunKind): Promise<void> {
  if (!api.isWorkspaceTrusted()) {
    const choice = await api.showWarningMessage(
      `${DISPLAY_NAME} runs your code to collect real guards, so runs are disabled in an untrusted workspace. ` +
        "The static scan still works.",
      "Manage Workspace Trust",
    );
    if (choice) {
      await api.executeCommand("workbench.trust.manage");
    }
    return;
  }
  const editor = pythonEditor();
  const client = editor && runningClient(context);
  if (!editor || !client) {
    return;
  }
  const document = editor.document;
  let testId: string | undefined;
  if (test === "cursor") {
    const lines = document.getText().split(/\r?\n/);
    testId = testNodeIdAt(lines, editor.selection.active.line, document.uri.fsPath);
    if (!testId) {
      void api.showInformationMessage(`${DISPLAY_NAME}: put the cursor inside a test function (def test_…).`);
      return;
    }
  }
  const processes = test === "ranks" ? await askRanks() : 1;
  if (processes === undefined) {
    return;
  }
  if (document.isDirty) {
    await document.save();
  }
  const uri = document.uri.toString();
  context.runStarted(path.basename(document.uri.fsPath));
  try {
    const argument = { uri, args: [], test: testId ?? null, processes, guardCost: test === "guardCost" };
    const result = await executeServerCommand(client, ServerCommand.run, argument);
    await context.runFinished(result, uri);
  } catch (error) {
    logger.error(`dynamoLens.run failed: ${String(error)}`);
    context.runFailed(errorMessage(error));
    void api
      .showErrorMessage(`${DISPLAY_NAME}: the run failed: ${errorMessage(error)}`, "Show Output")
      .then((choice) => {
        if (choice) {
          logger.show();
        }
      });
  }
}

async function showLastReport(context: CommandContext): Promise<void> {
  const client = runningClient(context);
  if (!client) {
    return;
  }
  const uri = api.activeTextEditor()?.document.uri.toString() ?? api.getWorkspaceFolders()[0]?.uri.toString() ?? "";
  const report = await fetchReport(client, uri);
  if (!report) {
    void api.showInformationMessage(`${DISPLAY_NAME}: no report yet. Run a file first.`);
    return;
  }
  await api.showReadOnlyJson("last-run-report", JSON.stringify(report, undefined, 2));
}

async function clear(context: CommandContext): Promise<void> {
  const client = runningClient(context);
  if (client) {
    await executeServerCommand(client, ServerCommand.clearResults);
  }
  context.cleared();
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

export function registerCommands(context: CommandContext): Disposable[] {
  return [
    api.registerCommand(ClientCommand.runFile, () => run(context, "file")),
    api.registerCommand(ClientCommand.runTest, () => run(context, "cursor")),
    api.registerCommand(ClientCommand.runFileWithRanks, () => run(context, "ranks")),
    api.registerCommand(ClientCommand.runFileMeasuringGuards, () => run(context, "guardCost")),
    api.registerCommand(ClientCommand.showLastReport, () => showLastReport(context)),
    api.registerCommand(ClientCommand.clear, () => clear(context)),
    api.registerCommand(ClientCommand.restart, () => context.restart("restart requested")),
    api.registerCommand(ClientCommand.showOutput, () => logger.show()),
    api.registerCommand(ClientCommand.revealLocation, (uri, line) => api.revealLine(uri, line)),
    api.registerReadOnlyDocuments(),
  ];
}
