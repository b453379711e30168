import type { Disposable } from "vscode";
import {
  ConfigurationRequest,
  LanguageClient,
  type Middleware,
  ResponseError,
  RevealOutputChannelOn,
  TransportKind,
  type LanguageClientOptions,
  type ServerOptions,
} from "vscode-languageclient/node";
import { bootstrapScript, CLIENT_ID, CONFIG_SECTION, DISPLAY_NAME, RUN_FINISHED, ServerCommand } from "./constants";
import { logChannel, logger } from "./logger";
import { chooseInterpreter, interpreterFromPythonExtension, probePython, type Interpreter } from "./python";
import { readSettings, toServerSettings, type ServerSettings } from "./settings";
import * as api from "./vscodeapi";

/** Setting problems already reported: each is logged and shown once, not on every configuration request. */
const reportedProblems = new Set<string>();

function reportProblems(problems: readonly string[]): void {
  for (const problem of problems.filter((p) => !reportedProblems.has(p))) {
    reportedProblems.add(problem);
    logger.warn(problem);
    void api.showWarningMessage(`${DISPLAY_NAME}: ${problem}`);
  }
}

/** Settings for a scope (a folder or file URI, or the window), resolved the way the server must see them. */
function serverSettings(interpreter: Interpreter, scopeUri?: string): ServerSettings {
  const scope = scopeUri ? api.parseUri(scopeUri) : api.getWorkspaceFolders()[0]?.uri;
  const folder = scope ? api.getWorkspaceFolder(scope) : undefined;
  const { settings, problems } = readSettings(api.getConfiguration(CONFIG_SECTION, scope), {
    workspaceFolder: (folder ?? api.getWorkspaceFolders()[0])?.uri.fsPath,
  });
  reportProblems(problems);
  return toServerSettings(settings, interpreter.path, api.isWorkspaceTrusted());
}

/** The interpreter for the first workspace folder: `dynamoLens.interpreter`, then the Python extension, then python3. */
export async function resolveInterpreter(): Promise<Interpreter> {
  const folder = api.getWorkspaceFolders()[0];
  const fromExtension = await interpreterFromPythonExtension(folder?.uri);
  const { settings } = readSettings(api.getConfiguration(CONFIG_SECTION, folder?.uri), {
    workspaceFolder: folder?.uri.fsPath,
  });
  return chooseInterpreter(fromExtension, settings.interpreter);
}

/** What the rest of the extension learns from the server. */
export interface ServerEvents {
  /** A run started through a server command (e.g. the "▶ Run with Dynamo Lens" code lens) for this file URI. */
  runStarted(uri: string): void;
  /** The `dynamoLens/runFinished` notification's params. */
  runFinished(params: unknown): void;
}

/** The first argument of a server command, when it is an object. */
function commandArgument(args: unknown[]): Record<string, unknown> {
  const first = args[0];
  return typeof first === "object" && first !== null ? (first as Record<string, unknown>) : {};
}

/**
 * Starts, stops and restarts the language server. Restarts are queued so two triggers in a row (trust granted while
 * the interpreter changes) never start two servers.
 */
export class ServerManager implements Disposable {
  private client: LanguageClient | undefined;
  private queue: Promise<void> = Promise.resolve();
  private interpreter: Interpreter | undefined;

  constructor(
    private readonly extensionRoot: string,
    private readonly events: ServerEvents,
  ) {}

  current(): LanguageClient | undefined {
    return this.client;
  }

  restart(reason: string): Promise<void> {
    this.queue = this.queue.then(
      () => this.replace(reason),
      () => this.replace(reason),
    );
    return this.queue;
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (client) {
      try {
        await client.stop(2000);
      } catch (error) {
        logger.warn(`Stopping the server failed: ${String(error)}`);
      }
    }
  }

  dispose(): void {
    void this.stop();
  }

  private async replace(reason: string): Promise<void> {
    await this.stop();
    const interpreter = await resolveInterpreter();
    this.interpreter = interpreter;
    logger.info(`Starting the server (${reason}) with ${interpreter.path} (${interpreter.origin})`);
    const cwd = api.getWorkspaceFolders()[0]?.uri.fsPath;
    const probe = await probePython(interpreter, cwd);
    if (!probe.ok) {
      logger.error(probe.message);
      const choice = await api.showErrorMessage(probe.message, "Open Settings", "Show Output");
      if (choice === "Open Settings") {
        await api.executeCommand("workbench.action.openSettings", `${CONFIG_SECTION}.interpreter`);
      } else if (choice) {
        logger.show();
      }
      return;
    }
    logger.info(
      `Python ${probe.version.join(".")}; workspace ${api.isWorkspaceTrusted() ? "trusted" : "untrusted: runs disabled"}`,
    );
    const client = this.createClient(interpreter, cwd);
    client.onNotification(RUN_FINISHED, (params: unknown) => this.events.runFinished(params));
    this.client = client;
    try {
      await client.start();
    } catch (error) {
      this.client = undefined;
      logger.error(`The ${DISPLAY_NAME} server failed to start: ${String(error)}`);
      void api.showErrorMessage(`${DISPLAY_NAME}: the language server failed to start; see the output.`);
    }
  }

  private createClient(interpreter: Interpreter, cwd: string | undefined): LanguageClient {
    const serverOptions: ServerOptions = {
      command: interpreter.path,
      args: [bootstrapScript(this.extensionRoot)],
      transport: TransportKind.stdio,
      options: { cwd, env: { ...process.env, PYTHONUNBUFFERED: "1" } },
    };
    const clientOptions: LanguageClientOptions = {
      documentSelector: [
        { scheme: "file", language: "python" },
        { scheme: "untitled", language: "python" },
        // the Python cells of Jupyter notebooks: the server reads the notebook as one module (notebook sync)
        { notebook: "jupyter-notebook", language: "python" },
      ],
      outputChannel: logChannel(),
      traceOutputChannel: logChannel(),
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      initializationOptions: serverSettings(interpreter),
      synchronize: { configurationSection: CONFIG_SECTION },
      middleware: {
        workspace: {
          configuration: this.configuration,
        },
        executeCommand: this.executeCommand,
      },
    };
    return new LanguageClient(CLIENT_ID, DISPLAY_NAME, serverOptions, clientOptions);
  }

  /**
   * Server commands invoked from code lenses: a run shows "running" in the status bar; "Show guards" opens the
   * hover at that place (the server's hover already renders the guards) instead of discarding the markdown.
   */
  private readonly executeCommand: Middleware["executeCommand"] = async (command, args, next) => {
    const argument = commandArgument(args);
    if (command === ServerCommand.showGuards && typeof argument.uri === "string" && typeof argument.line === "number") {
      const character = typeof argument.character === "number" ? argument.character : 0;
      await api.showHoverAt(api.parseUri(argument.uri), argument.line, character);
      return undefined;
    }
    if (command === ServerCommand.run && typeof argument.uri === "string") {
      this.events.runStarted(argument.uri);
    }
    return next(command, args);
  };

  /** Answers `workspace/configuration` for our section with the resolved settings (chosen interpreter, trust). */
  private readonly configuration: ConfigurationRequest.MiddlewareSignature = async (params, token, next) => {
    const answer = await next(params, token);
    const interpreter = this.interpreter;
    if (!interpreter || answer instanceof ResponseError || !Array.isArray(answer)) {
      return answer;
    }
    return params.items.map((item, index) =>
      item.section === CONFIG_SECTION ? serverSettings(interpreter, item.scopeUri) : answer[index],
    );
  };
}
