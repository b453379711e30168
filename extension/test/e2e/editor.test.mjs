// End to end in a real VS Code: code-server with the packaged .vsix, driven by Chromium through playwright-core.
// Run through `npm run test:e2e` (extension/test/e2e/run.mjs), which installs code-server first and sets
// DYNAMO_LENS_E2E_SKIP only when that install is impossible on this machine.
import assert from "node:assert/strict";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { installExtension, startCodeServer, writeUserSettings } from "./codeServer.mjs";
import {
  CHROMIUM_ARGS,
  codeLensText,
  cursorPosition,
  editorText,
  goTo,
  hidePanel,
  hoverText,
  openFile,
  openNotebook,
  poll,
  problemsText,
  runCommand,
  squiggles,
} from "./workbench.mjs";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, "../../..");
const VERSION = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")).version;
const VSIX = process.env.DYNAMO_LENS_VSIX ?? path.join(ROOT, `dynamo-lens-${VERSION}.vsix`);

/** The status bar text the README shows for a run of the example this test runs. */
function readmeStatusExample() {
  const readme = readFileSync(path.join(ROOT, "README.md"), "utf8");
  const quoted = /\*\*status bar\*\* item: the last run's summary \("([^"]+)"/.exec(readme);
  assert.ok(quoted, "the README no longer quotes a status bar example");
  return quoted[1];
}
const PYTHON = process.env.DYNAMO_LENS_E2E_PYTHON ?? path.join(ROOT, ".venv", "bin", "python");
const ARTIFACTS = path.join(ROOT, "test-artifacts", "e2e");
const EXAMPLE = "recompiling_counter.py";
/** A second file (fixtures/), opened once the server runs, to time how soon a newly opened file shows diagnostics. */
const SECOND = "second_counter.py";
const OPEN_TO_DIAGNOSTICS_BUDGET_MS = 1000;
/** A pytest file (fixtures/) for "Run Test Under Cursor". */
const TEST_FILE = "test_compiled_counter.py";
/** A notebook whose counter is defined in one cell and compiled in the next (VS Code's own notebook support). */
const NOTEBOOK = "counter_notebook.ipynb";
const RUN_TIMEOUT_MS = 240_000;

/**
 * Where a line of code is in the example (1-based line, and the column where `pattern`'s `target` group starts),
 * read from its text so the test follows the file rather than hard-coded numbers.
 */
function locate(text, pattern) {
  const lines = text.split("\n");
  const index = lines.findIndex((line) => pattern.test(line));
  assert.notEqual(index, -1, `${pattern} not found in the example`);
  const match = pattern.exec(lines[index]);
  return { line: index + 1, column: match.index + match[0].indexOf(match.groups.target) + 1, text: lines[index] };
}

const skip = process.env.DYNAMO_LENS_E2E_SKIP;
if (!skip) {
  rmSync(ARTIFACTS, { recursive: true, force: true });
}
const source = existsSync(path.join(ROOT, "examples", EXAMPLE))
  ? readFileSync(path.join(ROOT, "examples", EXAMPLE), "utf8")
  : "";
const counter = () => locate(source, /^\s+(?<target>self\.steps) \+= 1\s*$/);
const forward = () => locate(source, /^\s+def (?<target>forward)\(/);
const compileSite = () => locate(source, /(?<target>torch\.compile)\(/);

/**
 * A fresh VS Code: its own user-data and extensions dirs with the .vsix installed, a copy of examples/ (plus the
 * second fixture) as the workspace, code-server on a free port, and Chromium on it. `trusted: false` turns
 * workspace trust on, so the folder opens behind VS Code's "Do you trust the authors?" prompt.
 */
async function openSession(name, { trusted }) {
  assert.ok(existsSync(VSIX), `${VSIX} is missing: build it with \`make extension\` (npm run package)`);
  assert.ok(existsSync(PYTHON), `${PYTHON} is missing: \`make\` creates the .venv with torch`);
  const artifacts = path.join(ARTIFACTS, name);
  rmSync(artifacts, { recursive: true, force: true });
  mkdirSync(artifacts, { recursive: true });
  const root = mkdtempSync(path.join(os.tmpdir(), "dynamo-lens-e2e-"));
  const dirs = {
    root,
    userData: path.join(root, "user-data"),
    extensions: path.join(root, "extensions"),
    workspace: path.join(root, "workspace"),
  };
  cpSync(path.join(ROOT, "examples"), path.join(dirs.workspace, "examples"), { recursive: true });
  cpSync(path.join(HERE, "fixtures", SECOND), path.join(dirs.workspace, "examples", SECOND));
  cpSync(path.join(HERE, "fixtures", TEST_FILE), path.join(dirs.workspace, "tests", TEST_FILE));
  cpSync(path.join(HERE, "fixtures", NOTEBOOK), path.join(dirs.workspace, "notebooks", NOTEBOOK));
  installExtension(dirs, VSIX);
  writeUserSettings(dirs, {
    "dynamoLens.interpreter": PYTHON,
    "dynamoLens.trace.server": "messages",
    "security.workspace.trust.enabled": !trusted,
    "workbench.startupEditor": "none",
    "workbench.tips.enabled": false,
    "workbench.secondarySideBar.defaultVisibility": "hidden",
    "chat.disableAIFeatures": true,
    "telemetry.telemetryLevel": "off",
    "extensions.ignoreRecommendations": true,
    "update.mode": "none",
    "editor.inlayHints.enabled": "on",
    "editor.codeLens": true,
    "editor.minimap.enabled": false,
    "editor.hover.delay": 200,
    "files.autoSave": "off",
  });
  const server = await startCodeServer(dirs, dirs.workspace, path.join(artifacts, "code-server.log"), { trusted });
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    args: CHROMIUM_ARGS,
  });
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  await page.goto(`${server.url}/?folder=${encodeURIComponent(dirs.workspace)}`);
  await page.locator(".monaco-workbench").waitFor({ timeout: 90_000 });
  let step = 0;
  return {
    page,
    dirs,
    async shot(label) {
      step += 1;
      await page.screenshot({ path: path.join(artifacts, `${String(step).padStart(2, "0")}-${label}.png`) });
    },
    async close() {
      await browser.close();
      server.stop();
      const logs = path.join(dirs.userData, "logs");
      for (const run of existsSync(logs) ? readdirSync(logs) : []) {
        const log = path.join(logs, run, "exthost1", "dynamo-lens.dynamo-lens", "Dynamo Lens.log");
        if (existsSync(log)) {
          cpSync(log, path.join(artifacts, `dynamo-lens-${run}.log`));
        }
      }
      rmSync(dirs.root, { recursive: true, force: true });
    },
  };
}

describe("Dynamo Lens in a real VS Code (code-server + Chromium)", { skip: skip ? `SKIPPED: ${skip}` : false }, () => {
  let session;
  let page;
  let dirs;
  const shot = (label) => session.shot(label);

  before(async () => {
    session = await openSession("trusted", { trusted: true });
    ({ page, dirs } = session);
    await page.locator(".explorer-folders-view").waitFor({ timeout: 90_000 });
  });

  after(async () => {
    await session?.close();
  });

  it("shows the DL101 squiggle and Problems entry at the counter's line", { timeout: 120_000 }, async () => {
    const started = Date.now();
    await openFile(page, EXAMPLE);
    // The extension activates on the first Python file; its status bar item appears once it did.
    await page.locator(".statusbar-item", { hasText: "Dynamo Lens" }).first().waitFor({ timeout: 30_000 });
    const { line, column, text } = counter();
    const onCounter = await poll(async () => {
      const found = await squiggles(page);
      return found.find((s) => s.line?.trim() === text.trim());
    }, 60_000);
    console.log(`# first squiggle on the counter line after ${Date.now() - started} ms`);
    await shot("squiggle");
    assert.ok(
      onCounter,
      `no squiggle on line ${line} (${text.trim()}); squiggles: ${JSON.stringify(await squiggles(page))}`,
    );
    const problems = await poll(async () => {
      const rows = await problemsText(page);
      return rows.includes("DL101") ? rows : undefined;
    }, 30_000);
    await shot("problems");
    assert.ok(problems, `no DL101 in the Problems panel:\n${await problemsText(page)}`);
    const entry = problems
      .split("\n")
      .find((row) => row.includes("DL101") && row.includes(`[Ln ${line}, Col ${column}]`));
    assert.ok(entry, `DL101 is not at [Ln ${line}, Col ${column}]:\n${problems}`);
    assert.match(entry, /dynamo-lens/);
  });

  it("shows a newly opened file's diagnostics within a second once the server runs", { timeout: 60_000 }, async () => {
    await hidePanel(page);
    await openFile(page, SECOND);
    const opened = Date.now();
    const second = readFileSync(path.join(HERE, "fixtures", SECOND), "utf8");
    const { line, text } = locate(second, /^\s+(?<target>self\.calls) \+= 1\s*$/);
    const found = await poll(
      async () => (await squiggles(page)).find((s) => s.line?.trim() === text.trim()),
      10_000,
      25,
    );
    const elapsed = Date.now() - opened;
    console.log(`# ${SECOND}: squiggle ${elapsed} ms after its editor opened`);
    await shot("second-file");
    assert.ok(found, `no squiggle on line ${line} of ${SECOND}`);
    assert.ok(
      elapsed <= OPEN_TO_DIAGNOSTICS_BUDGET_MS,
      `diagnostics took ${elapsed} ms (budget ${OPEN_TO_DIAGNOSTICS_BUDGET_MS} ms)`,
    );
    await runCommand(page, "View: Close Editor");
  });

  it("hovers the compiled forward with its predicted guards", { timeout: 60_000 }, async () => {
    const { line, column } = forward();
    await hidePanel(page);
    await goTo(page, line, column);
    await runCommand(page, "Show or Focus Hover");
    const hover = await poll(async () => {
      const textNow = await hoverText(page);
      return /predicted/i.test(textNow) ? textNow : undefined;
    }, 20_000);
    await shot("hover-predicted");
    assert.ok(
      hover,
      `no hover marked as predicted on line ${line}; hover text: ${JSON.stringify(await hoverText(page))}`,
    );
    assert.match(hover, /self\.steps/);
  });

  it(
    "runs the file from the command palette: runtime diagnostics, lens text, tree and status",
    { timeout: RUN_TIMEOUT_MS },
    async () => {
      await page.keyboard.press("Escape");
      await runCommand(page, "Dynamo Lens: Run Current File");
      const problems = await poll(
        async () => {
          const rows = await problemsText(page);
          return /DL50[12]/.test(rows) ? rows : undefined;
        },
        RUN_TIMEOUT_MS - 60_000,
        2_000,
      );
      await shot("run-problems");
      assert.ok(problems, `no runtime finding (DL501/DL502) in Problems after the run:\n${await problemsText(page)}`);
      const status = await page.locator(".statusbar-item", { hasText: "recompile" }).first().innerText();
      assert.ok(status.includes(readmeStatusExample()), `status "${status}" is not the README's example`);

      await hidePanel(page);
      const lens = await poll(async () => {
        let textNow = "";
        for (const site of [compileSite(), forward()]) {
          await goTo(page, site.line, site.column);
          textNow += `${await codeLensText(page)}\n${await editorText(page)}\n`;
        }
        return /recompile/i.test(textNow) ? textNow : undefined;
      }, 20_000);
      await shot("lens");
      assert.ok(lens, `no code lens or inlay hint mentions recompiles:\n${await codeLensText(page)}`);

      await runCommand(page, "Dynamo Lens: Focus on Compiled Frames View");
      const tree = await poll(async () => {
        const textNow =
          (await page
            .locator(".part.sidebar")
            .innerText()
            .catch(() => "")) ?? "";
        return textNow.includes("forward") && textNow.includes("cache entry") ? textNow : undefined;
      }, 20_000);
      await shot("frames-tree");
      assert.ok(
        tree,
        `the Compiled Frames view shows no forward frame with cache entries:\n${await page.locator(".part.sidebar").innerText()}`,
      );
    },
  );

  it("reveals a frame tree item's source line and shows the last report", { timeout: 60_000 }, async () => {
    const breakLine = locate(source, /^\s+self\.last_scale = (?<target>logits\.abs\(\)\.mean\(\)\.item\(\))/).line;
    await runCommand(page, "Dynamo Lens: Focus on Compiled Frames View");
    await page.locator(".part.sidebar .monaco-list-row", { hasText: "Unsupported Tensor.item()" }).first().click();
    const revealed = await poll(async () => (await cursorPosition(page)).startsWith(`Ln ${breakLine},`), 10_000);
    await shot("tree-reveal");
    assert.ok(revealed, `clicking the graph break did not reveal line ${breakLine}: ${await cursorPosition(page)}`);

    await runCommand(page, "Dynamo Lens: Show Last Report");
    const report = await poll(async () => {
      const textNow = await editorText(page);
      return textNow.includes('"dynamo-lens.run"') ? textNow : undefined;
    }, 15_000);
    await shot("last-report");
    assert.ok(report, `Show Last Report opened no run report:\n${await editorText(page)}`);
    const tab = await page.locator(".editor-group-container.active .tab.active").innerText();
    assert.match(tab.replace(/\s+/g, ""), /last-run-report\.json/);
    await runCommand(page, "View: Close Editor");
  });

  it("applies a quick fix on the DL101 line and the text changes", { timeout: 60_000 }, async () => {
    await openFile(page, EXAMPLE);
    const { line, column } = counter();
    await goTo(page, line, column);
    const before = await editorText(page);
    await page.keyboard.press("Control+.");
    const menu = page
      .locator(".action-widget")
      .filter({ has: page.locator(".monaco-list-row") })
      .first();
    const shown = await menu
      .waitFor({ state: "visible", timeout: 30_000 })
      .then(() => true)
      .catch(() => false);
    await shot("quick-fix-menu");
    assert.ok(shown, "no code action menu on the DL101 line");
    const items = (await menu.locator(".monaco-list-row.action").allInnerTexts()).map((item) => item.trim());
    const fix = items.find((item) => !/ignore|suppress|learn more|disable/i.test(item));
    assert.ok(fix, `no quick fix besides suppressions on the DL101 line: ${JSON.stringify(items)}`);
    console.log(`# quick fixes offered: ${JSON.stringify(items)}; applying the first: ${JSON.stringify(fix)}`);
    await menu.locator(".monaco-list-row.action", { hasText: fix }).first().click();
    const changed = await poll(async () => ((await editorText(page)) !== before ? true : undefined), 30_000);
    await shot("quick-fix-applied");
    assert.ok(changed, `applying "${fix}" did not change the text`);
    // Saved to disk, the whole file can be compared: the code the fix's title promises is now in it.
    await page.keyboard.press("Control+s");
    const file = path.join(dirs.workspace, "examples", EXAMPLE);
    const saved = await poll(() => {
      const text = readFileSync(file, "utf8");
      return text !== source ? text : undefined;
    }, 10_000);
    assert.ok(saved, "the fixed file was not saved");
    const promised = [...fix.matchAll(/`([^`]+)`/g)].map((m) => m[1]).filter((code) => /[=(.]/.test(code));
    for (const code of promised) {
      assert.ok(saved.includes(code), `the fix "${fix}" promised \`${code}\`, but the file does not contain it`);
    }
  });

  it("clears the run's results: runtime findings, frames and status go", { timeout: 60_000 }, async () => {
    await runCommand(page, "Dynamo Lens: Clear Results");
    const cleared = await poll(async () => !/DL50[123]/.test(await problemsText(page)), 15_000);
    await runCommand(page, "Dynamo Lens: Focus on Compiled Frames View");
    const welcome = await poll(
      async () => (await page.locator(".part.sidebar").innerText()).includes("No instrumented run yet"),
      10_000,
    );
    await shot("cleared");
    assert.ok(cleared, `runtime findings are still in Problems:\n${await problemsText(page)}`);
    assert.ok(welcome, "the Compiled Frames view still shows the run");
    assert.equal(await page.locator(".statusbar-item", { hasText: "recompile" }).count(), 0);
  });

  it("runs the pytest test under the cursor and attributes its recompile", { timeout: RUN_TIMEOUT_MS }, async () => {
    await hidePanel(page);
    await openFile(page, TEST_FILE);
    const testSource = readFileSync(path.join(HERE, "fixtures", TEST_FILE), "utf8");
    const inside = locate(testSource, /^\s+(?<target>compiled)\(x\)/);
    const culprit = locate(testSource, /^\s+(?<target>self\.calls) \+= 1/);
    await goTo(page, inside.line, inside.column);
    await runCommand(page, "Dynamo Lens: Run Test Under Cursor");
    const row = await poll(
      async () =>
        (await problemsText(page)).split("\n").find((r) => r.includes("DL501") && r.includes(`[Ln ${culprit.line},`)),
      RUN_TIMEOUT_MS - 60_000,
      2_000,
    );
    await shot("run-test");
    assert.ok(
      row,
      `no DL501 at line ${culprit.line} of ${TEST_FILE} after running the test:\n${await problemsText(page)}`,
    );
  });

  it("shows the squiggle in a notebook cell and its Problems entry", { timeout: 120_000 }, async () => {
    await hidePanel(page);
    await openNotebook(page, NOTEBOOK).catch(async (error) => {
      await shot("notebook-not-opened");
      throw error;
    });
    const opened = Date.now();
    const found = await poll(
      async () => (await squiggles(page)).find((s) => s.line?.trim() === "self.ticks += 1"),
      60_000,
    );
    console.log(`# ${NOTEBOOK}: squiggle in its cell ${Date.now() - opened} ms after it opened`);
    await shot("notebook");
    assert.ok(found, `no squiggle on the counter's cell line; squiggles: ${JSON.stringify(await squiggles(page))}`);
    const problems = await poll(async () => {
      const rows = await problemsText(page);
      return rows.includes("self.ticks") ? rows : undefined;
    }, 30_000);
    await shot("notebook-problems");
    assert.ok(problems, `no finding about self.ticks in the Problems panel:\n${await problemsText(page)}`);
    // positions are the cell's own: the counter is line 7 of its cell
    const entry = problems.split("\n").find((row) => row.includes("DL101") && row.includes("Ln 7, Col 9"));
    assert.ok(entry, `DL101 is not at [Ln 7, Col 9] of its cell:\n${problems}`);
    await hidePanel(page);
    await runCommand(page, "View: Close Editor");
  });
});

describe("Dynamo Lens in an untrusted workspace", { skip: skip ? `SKIPPED: ${skip}` : false }, () => {
  let session;
  let page;
  const shot = (label) => session.shot(label);

  before(async () => {
    session = await openSession("untrusted", { trusted: false });
    ({ page } = session);
  });

  after(async () => {
    await session?.close();
  });

  it(
    "in Restricted Mode keeps the static scan, refuses runs with an explanation, and runs once trusted",
    { timeout: RUN_TIMEOUT_MS },
    async () => {
      // code-server opens a folder it was not told to trust in Restricted Mode.
      await page.locator(".statusbar-item", { hasText: "Restricted Mode" }).first().waitFor({ timeout: 60_000 });
      await page.locator(".explorer-folders-view").waitFor({ timeout: 30_000 });
      await openFile(page, EXAMPLE);
      const { text } = counter();
      const squiggle = await poll(
        async () => (await squiggles(page)).find((s) => s.line?.trim() === text.trim()),
        60_000,
      );
      await shot("untrusted-static");
      assert.ok(squiggle, "no static squiggle in the untrusted workspace");
      assert.match(await problemsText(page), /DL101/);
      const runtimeBefore = await problemsText(page);
      await hidePanel(page);

      await runCommand(page, "Dynamo Lens: Run Current File");
      const toast = page.locator(".notification-toast", { hasText: "untrusted workspace" }).first();
      const explained = await toast
        .waitFor({ timeout: 15_000 })
        .then(() => true)
        .catch(() => false);
      await shot("untrusted-run-refused");
      assert.ok(explained, "running in an untrusted workspace showed no explanation");

      await toast.locator("a.monaco-button, .monaco-button", { hasText: "Manage Workspace Trust" }).first().click();
      const trust = page.locator(".workspace-trust-editor .monaco-button", { hasText: /^Trust/ }).first();
      await trust.waitFor({ timeout: 15_000 });
      await shot("trust-editor");
      await trust.click();
      await runCommand(page, "View: Close Editor");
      await openFile(page, EXAMPLE);
      await page.waitForTimeout(2000); // the extension restarts its server when trust is granted
      await runCommand(page, "Dynamo Lens: Run Current File");
      const problems = await poll(
        async () => /DL50[12]/.test(await problemsText(page)),
        RUN_TIMEOUT_MS - 90_000,
        2_000,
      );
      await shot("trusted-run");
      assert.doesNotMatch(runtimeBefore, /DL50[123]/, "runtime findings appeared before any run");
      assert.ok(problems, `no runtime findings after trusting the workspace:\n${await problemsText(page)}`);
    },
  );
});
