import { describe, expect, it } from "vitest";
import {
  DEFAULT_SETTINGS,
  readSettings,
  resolveVariables,
  toServerSettings,
  type ConfigReader,
} from "../../src/settings";

const config = (values: Record<string, unknown>): ConfigReader => ({
  get: <T>(key: string) => values[key] as T | undefined,
});

const context = { workspaceFolder: "/home/ada/project", userHome: "/home/ada", env: { VENV: "/opt/venv" } };

describe("resolveVariables", () => {
  it.each([
    ["${workspaceFolder}/.venv/bin/python", "/home/ada/project/.venv/bin/python"],
    ["${userHome}/py/bin/python", "/home/ada/py/bin/python"],
    ["~/py/bin/python", "/home/ada/py/bin/python"],
    ["${env:VENV}/bin/python", "/opt/venv/bin/python"],
    ["${env:UNSET_VARIABLE}/python", "/python"],
    ["/usr/bin/python3", "/usr/bin/python3"],
    ["${unknownVariable}/python", "${unknownVariable}/python"],
    ["a~/python", "a~/python"],
  ])("%s → %s", (value, expected) => {
    expect(resolveVariables(value, context)).toBe(expected);
  });

  it("keeps ${workspaceFolder} when there is no folder, so the mistake shows in the log", () => {
    expect(resolveVariables("${workspaceFolder}/python", { userHome: "/h", env: {} })).toBe(
      "${workspaceFolder}/python",
    );
  });
});

describe("readSettings", () => {
  it("gives the package.json defaults for an empty configuration", () => {
    expect(readSettings(config({}), context)).toEqual({ settings: DEFAULT_SETTINGS, problems: [] });
  });

  it("reads every setting, resolving the interpreter and normalising codes", () => {
    const { settings, problems } = readSettings(
      config({
        interpreter: " ${workspaceFolder}/.venv/bin/python ",
        runTimeout: 42,
        enableStatic: false,
        enableRuntime: false,
        severity: { dl101: "Error", DL112: "off" },
        select: ["dl1", " DL2 "],
        ignore: ["DL402"],
      }),
      context,
    );
    expect(problems).toEqual([]);
    expect(settings).toEqual({
      interpreter: "/home/ada/project/.venv/bin/python",
      runTimeout: 42,
      enableStatic: false,
      enableRuntime: false,
      severity: { DL101: "error", DL112: "off" },
      select: ["DL1", "DL2"],
      ignore: ["DL402"],
    });
  });

  it("replaces each bad value by its default and says which", () => {
    const { settings, problems } = readSettings(
      config({ runTimeout: -1, enableStatic: "yes", select: "DL1", severity: { DL101: "loud", DL102: "hint" } }),
      context,
    );
    expect(settings.runTimeout).toBe(DEFAULT_SETTINGS.runTimeout);
    expect(settings.enableStatic).toBe(true);
    expect(settings.select).toEqual([]);
    expect(settings.severity).toEqual({ DL102: "hint" });
    expect(problems.map((p) => p.split(":")[0]).sort()).toEqual([
      "dynamoLens.enableStatic",
      "dynamoLens.runTimeout",
      "dynamoLens.select",
      "dynamoLens.severity.DL101",
    ]);
    expect(problems.find((p) => p.includes("DL101"))).toContain('"loud"');
  });

  it("treats a null value like an unset one", () => {
    expect(readSettings(config({ interpreter: null, runTimeout: null }), context).settings).toEqual(DEFAULT_SETTINGS);
  });
});

describe("toServerSettings", () => {
  it("carries the chosen interpreter and the trust state, camelCase as the server parses them", () => {
    expect(toServerSettings(DEFAULT_SETTINGS, "/usr/bin/python3", false)).toEqual({
      ...DEFAULT_SETTINGS,
      interpreter: "/usr/bin/python3",
      trusted: false,
    });
  });
});
