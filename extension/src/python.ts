import { execFile } from "node:child_process";
import type { Disposable, Event, Uri } from "vscode";
import { DEFAULT_PYTHON, MIN_PYTHON, PYTHON_EXTENSION_ID } from "./constants";
import { logger } from "./logger";
import { getExtension } from "./vscodeapi";

export type InterpreterOrigin = "python-extension" | "setting" | "default";

export interface Interpreter {
  readonly path: string;
  readonly origin: InterpreterOrigin;
}

export type PythonVersion = readonly [number, number, number];

/** The slice of the Python extension's `environments` API we use (declared here: no dependency on its package). */
interface PythonEnvironmentsApi {
  getActiveEnvironmentPath(resource?: Uri): { id: string; path: string };
  resolveEnvironment(environment: { id: string; path: string }): Promise<{ executable: { uri?: Uri } } | undefined>;
  readonly onDidChangeActiveEnvironmentPath: Event<unknown>;
}

interface PythonExtensionApi {
  readonly environments?: PythonEnvironmentsApi;
}

/**
 * Which interpreter runs the server and the instrumented runs: an explicit `dynamoLens.interpreter` setting wins (so
 * a user can always override the choice, as ruff-vscode's `ruff.interpreter` does), then the interpreter selected in
 * the Python extension when it is installed, then `python3`.
 */
export function chooseInterpreter(fromPythonExtension: string | undefined, fromSetting: string): Interpreter {
  if (fromSetting) {
    return { path: fromSetting, origin: "setting" };
  }
  if (fromPythonExtension) {
    return { path: fromPythonExtension, origin: "python-extension" };
  }
  return { path: DEFAULT_PYTHON, origin: "default" };
}

async function environmentsApi(): Promise<PythonEnvironmentsApi | undefined> {
  const extension = getExtension<PythonExtensionApi>(PYTHON_EXTENSION_ID);
  if (!extension) {
    return undefined;
  }
  try {
    const api = extension.isActive ? extension.exports : await extension.activate();
    return api?.environments;
  } catch (error) {
    logger.warn(`The Python extension is installed but its API failed: ${String(error)}`);
    return undefined;
  }
}

/** The executable of the environment selected in the Python extension for `resource`, if the extension is there. */
export async function interpreterFromPythonExtension(resource?: Uri): Promise<string | undefined> {
  const environments = await environmentsApi();
  if (!environments) {
    return undefined;
  }
  try {
    const resolved = await environments.resolveEnvironment(environments.getActiveEnvironmentPath(resource));
    return resolved?.executable.uri?.fsPath;
  } catch (error) {
    logger.warn(`The Python extension could not resolve the selected environment: ${String(error)}`);
    return undefined;
  }
}

/** Calls `listener` whenever the user selects another interpreter in the Python extension (no-op without it). */
export async function onPythonExtensionInterpreterChange(listener: () => void): Promise<Disposable | undefined> {
  const environments = await environmentsApi();
  return environments?.onDidChangeActiveEnvironmentPath(() => listener());
}

/** `"3.11.4"` (possibly with a suffix such as `+` or a newline) → `[3, 11, 4]`. */
export function parsePythonVersion(text: string): PythonVersion | undefined {
  const match = /^\s*(\d+)\.(\d+)\.(\d+)/.exec(text);
  return match ? [Number(match[1]), Number(match[2]), Number(match[3])] : undefined;
}

export function isSupportedPython(version: PythonVersion): boolean {
  const [major, minor] = version;
  return major > MIN_PYTHON[0] || (major === MIN_PYTHON[0] && minor >= MIN_PYTHON[1]);
}

export type ProbeResult = { ok: true; version: PythonVersion } | { ok: false; message: string };

/** The sentence shown when `interpreter` cannot run the server; names the fix the user can make. */
export function unsupportedMessage(interpreter: Interpreter, detail: string): string {
  const where =
    interpreter.origin === "python-extension"
      ? "selected in the Python extension"
      : interpreter.origin === "setting"
        ? "from the dynamoLens.interpreter setting"
        : "found on PATH";
  const minimum = `${MIN_PYTHON[0]}.${MIN_PYTHON[1]}`;
  return (
    `Dynamo Lens needs Python ≥ ${minimum} to run its language server, but ${interpreter.path} (${where}) ${detail}. ` +
    `Select a Python ≥ ${minimum} interpreter, or set "dynamoLens.interpreter".`
  );
}

/** Runs `interpreter` once to learn its version; never throws. */
export function probePython(interpreter: Interpreter, cwd?: string): Promise<ProbeResult> {
  const script = 'import sys; print("%d.%d.%d" % sys.version_info[:3])';
  return new Promise((resolve) => {
    execFile(interpreter.path, ["-I", "-c", script], { cwd, timeout: 30_000 }, (error, stdout, stderr) => {
      if (error) {
        const code = (error as NodeJS.ErrnoException).code;
        const detail =
          code === "ENOENT" ? "was not found" : `failed to start (${String(stderr || error.message).trim()})`;
        resolve({ ok: false, message: unsupportedMessage(interpreter, detail) });
        return;
      }
      const version = parsePythonVersion(stdout);
      if (!version) {
        resolve({ ok: false, message: unsupportedMessage(interpreter, `printed no version (${stdout.trim()})`) });
      } else if (!isSupportedPython(version)) {
        resolve({ ok: false, message: unsupportedMessage(interpreter, `is Python ${version.join(".")}`) });
      } else {
        resolve({ ok: true, version });
      }
    });
  });
}
