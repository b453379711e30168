import { chmodSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { EventEmitter, installedExtensions, Uri } from "./vscode";
import {
  chooseInterpreter,
  interpreterFromPythonExtension,
  isSupportedPython,
  onPythonExtensionInterpreterChange,
  parsePythonVersion,
  probePython,
} from "../../src/python";

/** An executable that answers the version probe like a Python `version` would. */
function fakePython(version: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), "dynamo-lens-python-"));
  const file = path.join(dir, "python");
  writeFileSync(file, `#!/bin/sh\necho ${version}\n`);
  chmodSync(file, 0o755);
  return file;
}

describe("chooseInterpreter", () => {
  it("prefers an explicit setting, then the Python extension's selection, then python3", () => {
    expect(chooseInterpreter("/env/bin/python", "/set/python")).toEqual({ path: "/set/python", origin: "setting" });
    expect(chooseInterpreter("/env/bin/python", "")).toEqual({ path: "/env/bin/python", origin: "python-extension" });
    expect(chooseInterpreter(undefined, "/set/python")).toEqual({ path: "/set/python", origin: "setting" });
    expect(chooseInterpreter(undefined, "")).toEqual({ path: "python3", origin: "default" });
  });

  it("asks the Python extension only when it is installed (here it is not)", async () => {
    await expect(interpreterFromPythonExtension()).resolves.toBeUndefined();
  });
});

describe("the Python extension's API", () => {
  afterEach(() => installedExtensions.clear());

  /** A Python extension whose selected environment is `selected`, activated on first use. */
  function installPythonExtension(selected: string | undefined) {
    const changed = new EventEmitter<unknown>();
    const asked: unknown[] = [];
    const api = {
      environments: {
        getActiveEnvironmentPath: (resource?: unknown) => {
          asked.push(resource);
          return { id: "env", path: selected ?? "" };
        },
        resolveEnvironment: async () => (selected ? { executable: { uri: Uri.file(selected) } } : undefined),
        onDidChangeActiveEnvironmentPath: changed.event,
      },
    };
    const extension = {
      isActive: false,
      exports: undefined as unknown,
      activate: async () => {
        extension.isActive = true;
        extension.exports = api;
        return api;
      },
    };
    installedExtensions.set("ms-python.python", extension);
    return { changed, asked, extension };
  }

  it("activates the extension and returns the executable selected for the resource", async () => {
    const { asked, extension } = installPythonExtension("/envs/torch/bin/python");
    const folder = Uri.file("/ws");
    await expect(interpreterFromPythonExtension(folder as never)).resolves.toBe("/envs/torch/bin/python");
    expect(extension.isActive).toBe(true);
    expect(asked).toEqual([folder]);
  });

  it("is undefined when the extension cannot resolve the environment", async () => {
    installPythonExtension(undefined);
    await expect(interpreterFromPythonExtension()).resolves.toBeUndefined();
  });

  it("is undefined, not an error, when the extension's API throws", async () => {
    const { extension } = installPythonExtension("/envs/a/bin/python");
    await extension.activate();
    (
      extension.exports as { environments: { resolveEnvironment: () => Promise<never> } }
    ).environments.resolveEnvironment = () => Promise.reject(new Error("environment vanished"));
    await expect(interpreterFromPythonExtension()).resolves.toBeUndefined();
  });

  it("calls back when the user selects another interpreter", async () => {
    const { changed } = installPythonExtension("/envs/a/bin/python");
    let calls = 0;
    const subscription = await onPythonExtensionInterpreterChange(() => calls++);
    changed.fire({ id: "b", path: "/envs/b/bin/python" });
    expect(calls).toBe(1);
    subscription?.dispose();
    changed.fire({ id: "c", path: "/envs/c/bin/python" });
    expect(calls).toBe(1);
  });

  it("gives no subscription without the extension", async () => {
    await expect(onPythonExtensionInterpreterChange(() => undefined)).resolves.toBeUndefined();
  });
});

describe("python versions", () => {
  it.each([
    ["3.11.7\n", [3, 11, 7]],
    ["3.10.0+", [3, 10, 0]],
    ["  3.13.1", [3, 13, 1]],
    ["Python 3.11.7", undefined],
    ["", undefined],
  ])("parse %j", (text, expected) => {
    expect(parsePythonVersion(text)).toEqual(expected);
  });

  it.each([
    [[3, 9, 18], false],
    [[3, 10, 0], true],
    [[3, 14, 0], true],
    [[2, 7, 18], false],
    [[4, 0, 0], true],
  ] as const)("%j supported: %s", (version, expected) => {
    expect(isSupportedPython(version)).toBe(expected);
  });
});

describe("probePython", () => {
  it("accepts the interpreter running these tests' sibling python3", async () => {
    const result = await probePython({ path: "python3", origin: "default" });
    expect(result.ok).toBe(true);
  });

  it("explains a too old interpreter and where it came from", async () => {
    const result = await probePython({ path: fakePython("3.8.10"), origin: "setting" });
    expect(result.ok).toBe(false);
    expect(!result.ok && result.message).toMatch(/needs Python ≥ 3\.10.*is Python 3\.8\.10/);
    expect(!result.ok && result.message).toContain("dynamoLens.interpreter");
  });

  it("explains a missing interpreter", async () => {
    const result = await probePython({ path: "/nonexistent/bin/python", origin: "setting" });
    expect(!result.ok && result.message).toContain(
      "/nonexistent/bin/python (from the dynamoLens.interpreter setting) was not found",
    );
  });

  it("explains an interpreter that prints no version", async () => {
    const result = await probePython({ path: fakePython("hello"), origin: "python-extension" });
    expect(!result.ok && result.message).toContain("(selected in the Python extension) printed no version (hello)");
  });
});
