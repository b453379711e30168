import * as os from "node:os";

/** Severities a finding code can be given (DESIGN.md §2); `off` hides the code like `ignore`. */
export type Severity = "error" | "warning" | "info" | "hint" | "off";
export type TraceLevel = "off" | "messages" | "verbose";

/** The `dynamoLens.*` settings, typed and with defaults applied (package.json is the source of the defaults). */
export interface Settings {
  /** As the user wrote it, variables resolved; empty means "not set". */
  readonly interpreter: string;
  readonly runTimeout: number;
  readonly enableStatic: boolean;
  readonly enableRuntime: boolean;
  readonly severity: Readonly<Record<string, Severity>>;
  readonly select: readonly string[];
  readonly ignore: readonly string[];
}

/** What the server receives as `initializationOptions` and as the `dynamoLens` configuration section. */
export interface ServerSettings extends Omit<Settings, "interpreter"> {
  /** The interpreter runs use, already chosen by the client (Python extension, setting, or `python3`). */
  readonly interpreter: string;
  readonly trusted: boolean;
}

export const DEFAULT_SETTINGS: Settings = {
  interpreter: "",
  runTimeout: 300,
  enableStatic: true,
  enableRuntime: true,
  severity: {},
  select: [],
  ignore: [],
};

const SEVERITIES: readonly Severity[] = ["error", "warning", "info", "hint", "off"];

/** The part of `vscode.WorkspaceConfiguration` that settings are read through. */
export interface ConfigReader {
  get<T>(section: string): T | undefined;
}

/** Values `${...}` variables expand to; `env` defaults to the extension host's environment. */
export interface VariableContext {
  readonly workspaceFolder?: string;
  readonly userHome?: string;
  readonly env?: NodeJS.ProcessEnv;
}

/**
 * Expands `${workspaceFolder}`, `${userHome}`, `${env:NAME}` and a leading `~` the way VS Code users expect in path
 * settings. Unknown variables are left as they are so the mistake stays visible in the log.
 */
export function resolveVariables(value: string, context: VariableContext): string {
  const home = context.userHome ?? os.homedir();
  const env = context.env ?? process.env;
  let resolved = value.replace(
    /\$\{(workspaceFolder|userHome|env:([A-Za-z_][A-Za-z0-9_]*))\}/g,
    (match, name: string, envName?: string) => {
      if (envName !== undefined) {
        return env[envName] ?? "";
      }
      if (name === "userHome") {
        return home;
      }
      return context.workspaceFolder ?? match;
    },
  );
  if (resolved === "~" || resolved.startsWith("~/")) {
    resolved = home + resolved.slice(1);
  }
  return resolved;
}

/** Settings read from `config`; a value of the wrong type is reported in `problems` and replaced by its default. */
export function readSettings(
  config: ConfigReader,
  context: VariableContext,
): { settings: Settings; problems: string[] } {
  const problems: string[] = [];
  const pick = <T>(key: keyof Settings, valid: (v: unknown) => v is T, fallback: T): T => {
    const value = config.get<unknown>(key);
    if (value === undefined || value === null) {
      return fallback;
    }
    if (!valid(value)) {
      problems.push(`dynamoLens.${key}: ${JSON.stringify(value)} is not valid; using ${JSON.stringify(fallback)}`);
      return fallback;
    }
    return value;
  };
  const interpreter = pick("interpreter", isString, DEFAULT_SETTINGS.interpreter).trim();
  const severity = pick("severity", isPlainObject, {});
  const validSeverity: Record<string, Severity> = {};
  for (const [code, level] of Object.entries(severity)) {
    if (typeof level === "string" && (SEVERITIES as readonly string[]).includes(level.toLowerCase())) {
      validSeverity[code.toUpperCase()] = level.toLowerCase() as Severity;
    } else {
      problems.push(
        `dynamoLens.severity.${code}: ${JSON.stringify(level)} is not one of ${SEVERITIES.join(", ")}; ignored`,
      );
    }
  }
  return {
    settings: {
      interpreter: interpreter === "" ? "" : resolveVariables(interpreter, context),
      runTimeout: pick("runTimeout", isPositiveNumber, DEFAULT_SETTINGS.runTimeout),
      enableStatic: pick("enableStatic", isBoolean, DEFAULT_SETTINGS.enableStatic),
      enableRuntime: pick("enableRuntime", isBoolean, DEFAULT_SETTINGS.enableRuntime),
      severity: validSeverity,
      select: pick("select", isStringArray, [...DEFAULT_SETTINGS.select]).map(normaliseCode),
      ignore: pick("ignore", isStringArray, [...DEFAULT_SETTINGS.ignore]).map(normaliseCode),
    },
    problems,
  };
}

/** The camelCase object the server parses (`dynamo_lens.lsp.settings`). */
export function toServerSettings(settings: Settings, interpreter: string, trusted: boolean): ServerSettings {
  return { ...settings, interpreter, trusted };
}

function normaliseCode(code: string): string {
  return code.trim().toUpperCase();
}

function isString(value: unknown): value is string {
  return typeof value === "string";
}

function isBoolean(value: unknown): value is boolean {
  return typeof value === "boolean";
}

function isPositiveNumber(value: unknown): value is number {
  return typeof value === "number" && Number.isFinite(value) && value > 0;
}

function isStringArray(value: unknown): value is string[] {
  return Array.isArray(value) && value.every(isString);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
