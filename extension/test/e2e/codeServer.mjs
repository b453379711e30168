// Starts and stops a real VS Code (code-server) for the end-to-end test: a fresh user-data and extensions dir,
// the built .vsix installed with --install-extension, settings in <user-data-dir>/User/settings.json.
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import * as os from "node:os";
import * as path from "node:path";

/** Where extension/scripts/install-code-server.sh caches code-server (outside the repository). */
export function cacheDir() {
  return (
    process.env.DYNAMO_LENS_CACHE ??
    path.join(process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), ".cache"), "dynamo-lens")
  );
}

export function codeServerBinary() {
  return path.join(cacheDir(), "bin", "code-server");
}

/** A TCP port on 127.0.0.1 that nothing listens on right now. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

export function installExtension(dirs, vsix) {
  const result = spawnSync(
    codeServerBinary(),
    ["--user-data-dir", dirs.userData, "--extensions-dir", dirs.extensions, "--install-extension", vsix],
    { encoding: "utf8", timeout: 120_000 },
  );
  if (result.status !== 0) {
    throw new Error(`code-server --install-extension failed (${result.status}):\n${result.stdout}\n${result.stderr}`);
  }
  return result.stdout.trim();
}

export function writeUserSettings(dirs, settings) {
  const file = path.join(dirs.userData, "User", "settings.json");
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, JSON.stringify(settings, undefined, 2));
}

/**
 * Starts code-server on 127.0.0.1 without authentication in its own process group; resolves once it answers
 * /healthz. `stop()` kills the whole group (the server, its extension host, the language server it spawned).
 */
export async function startCodeServer(dirs, workspace, logFile, { trusted = true } = {}) {
  const port = await freePort();
  const configFile = path.join(dirs.root, "config.yaml");
  writeFileSync(configFile, "");
  const args = [
    "--bind-addr",
    `127.0.0.1:${port}`,
    "--auth",
    "none",
    "--config",
    configFile,
    "--disable-telemetry",
    "--disable-update-check",
    ...(trusted ? ["--disable-workspace-trust"] : []),
    "--disable-getting-started-override",
    "--user-data-dir",
    dirs.userData,
    "--extensions-dir",
    dirs.extensions,
    workspace,
  ];
  const { openSync } = await import("node:fs");
  const log = openSync(logFile, "a");
  const child = spawn(codeServerBinary(), args, { detached: true, stdio: ["ignore", log, log] });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) {
      throw new Error(`code-server exited with ${child.exitCode}; see ${logFile}`);
    }
    try {
      const response = await fetch(`${url}/healthz`);
      if (response.ok) {
        break;
      }
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      throw new Error(`code-server did not answer on ${url} within 60 s; see ${logFile}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return {
    url,
    port,
    stop() {
      if (child.exitCode === null) {
        try {
          process.kill(-child.pid, "SIGTERM");
        } catch {
          // already gone
        }
      }
    },
  };
}
