// Small helpers that drive the VS Code workbench in the browser the way a person does: keyboard, palette, panels.

/** The editor of the active editor group (with two groups side by side, the one that has focus). */
const ACTIVE_EDITOR = ".editor-group-container.active .editor-instance .monaco-editor";

export const CHROMIUM_ARGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
  "--disable-quic",
];

/** Polls `probe` until it returns a truthy value or `timeoutMs` passes; returns the last value either way. */
export async function poll(probe, timeoutMs, intervalMs = 500) {
  const deadline = Date.now() + timeoutMs;
  let value = await probe();
  while (!value && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
    value = await probe();
  }
  return value;
}

/** Runs a command by its exact title from the command palette (F1), e.g. "Dynamo Lens: Run Current File". */
export async function runCommand(page, title) {
  await page.keyboard.press("Escape");
  await page.keyboard.press("F1");
  const input = page.locator(".quick-input-widget input");
  await input.waitFor({ state: "visible", timeout: 10_000 });
  await input.fill(`>${title}`);
  const rows = page.locator(".quick-input-list .monaco-list-row");
  const index = await poll(
    async () => {
      const labels = await rows.allInnerTexts();
      const found = labels.findIndex((label) => label.split("\n")[0].trim() === title);
      return found >= 0 ? found + 1 : undefined;
    },
    10_000,
    100,
  );
  if (!index) {
    throw new Error(`no command titled "${title}" in the palette: ${JSON.stringify(await rows.allInnerTexts())}`);
  }
  await rows.nth(index - 1).click();
  await page.waitForTimeout(300);
}

/** Opens a workspace file with Quick Open (Ctrl+P). */
export async function openFile(page, name) {
  await page.keyboard.press("Escape");
  await page.keyboard.press("Control+p");
  const input = page.locator(".quick-input-widget input");
  await input.waitFor({ state: "visible", timeout: 10_000 });
  await input.fill(name);
  await page.locator(".quick-input-list .monaco-list-row", { hasText: name }).first().waitFor({ timeout: 10_000 });
  await input.press("Enter");
  await page.locator(".editor-instance .monaco-editor .view-lines").first().waitFor({ timeout: 10_000 });
}

/** Opens a notebook by name in VS Code's notebook editor (Quick Open), waiting until its cells are rendered. */
export async function openNotebook(page, name) {
  await page.keyboard.press("Escape");
  await page.keyboard.press("Control+p");
  const input = page.locator(".quick-input-widget input");
  await input.waitFor({ state: "visible", timeout: 10_000 });
  await input.fill(name);
  await page.locator(".quick-input-list .monaco-list-row", { hasText: name }).first().waitFor({ timeout: 10_000 });
  await input.press("Enter");
  await page.locator(".notebook-editor .cell-list-container").first().waitFor({ timeout: 30_000 });
  await page.locator(".notebook-editor .monaco-editor .view-lines").first().waitFor({ timeout: 30_000 });
}

/** Moves the cursor to a 1-based line and column with "Go to Line/Column" (Ctrl+G) in the active editor. */
export async function goTo(page, line, column) {
  await runCommand(page, "View: Focus Active Editor Group");
  await page.keyboard.press("Control+g");
  const input = page.locator(".quick-input-widget input");
  await input.waitFor({ state: "visible", timeout: 10_000 });
  await input.fill(`:${line}:${column}`);
  await input.press("Enter");
  await page.waitForTimeout(300);
}

export async function hidePanel(page) {
  if (
    await page
      .locator(".part.panel")
      .isVisible()
      .catch(() => false)
  ) {
    await runCommand(page, "View: Hide Panel");
  }
}

/** The cursor position the status bar shows, e.g. "Ln 28, Col 1". */
export async function cursorPosition(page) {
  return page
    .locator(".statusbar-item", { hasText: /^Ln \d+, Col \d+/ })
    .first()
    .innerText();
}

/**
 * Every row of the Problems panel, one per line. The list is virtualised (only rows on screen exist in the page),
 * so it is scrolled from top to bottom and the rows are collected by their list index.
 */
export async function problemsText(page) {
  const panel = page.locator(".markers-panel");
  if (!(await panel.isVisible().catch(() => false))) {
    await runCommand(page, "View: Focus Problems (Errors, Warnings, Infos)");
    await panel.waitFor({ state: "visible", timeout: 10_000 });
  }
  const list = page.locator(".markers-panel .monaco-list").first();
  const box = await list.boundingBox();
  if (!box) {
    return "";
  }
  // The left edge (the twisties) shows no hover: a message's hover under the pointer would take the wheel events.
  await page.keyboard.press("Escape");
  await page.mouse.move(box.x + 4, box.y + box.height / 2);
  await scrollToFirstRow(page, list, box);
  const rows = new Map();
  for (let step = 0; step < 200; step++) {
    const visible = await list
      .locator(".monaco-list-row")
      .evaluateAll((nodes) => nodes.map((node) => [Number(node.getAttribute("data-index")), node.innerText]));
    const before = rows.size;
    for (const [index, text] of visible) {
      rows.set(index, text.replace(/\s*\n\s*/g, " "));
    }
    if (step > 0 && rows.size === before) {
      break;
    }
    await page.mouse.wheel(0, box.height * 0.8);
    await page.waitForTimeout(100);
  }
  await scrollToFirstRow(page, list, box);
  return [...rows.entries()]
    .sort(([a], [b]) => a - b)
    .map(([, text]) => text)
    .join("\n");
}

async function scrollToFirstRow(page, list, box) {
  await page.mouse.wheel(0, -100_000);
  for (let step = 0; step < 50 && (await list.locator('.monaco-list-row[data-index="0"]').count()) === 0; step++) {
    await page.mouse.wheel(0, -box.height);
    await page.waitForTimeout(50);
  }
}

/** The rendered lines of the active editor (what is on screen, including inlay hints and code lenses). */
export async function editorText(page) {
  return page.locator(`${ACTIVE_EDITOR} .view-lines`).first().innerText();
}

export async function codeLensText(page) {
  return (await page.locator(`${ACTIVE_EDITOR} .codelens-decoration`).allInnerTexts()).join("\n");
}

/** The text of the visible hover widget, or "" when none shows. */
export async function hoverText(page) {
  const hover = page.locator(".monaco-hover:not(.hidden) .monaco-hover-content, .monaco-hover-content");
  return (await hover.allInnerTexts()).join("\n");
}

/**
 * The squiggle decorations on screen: in the active editor, or in the cells of the notebook shown (VS Code draws a
 * notebook in an overlay of its own, outside the editor group, one editor per cell): their severity class and the
 * text of the line they sit on (the nearest line by height).
 */
export async function squiggles(page) {
  return page.evaluate((selector) => {
    const cells = [...document.querySelectorAll(".notebook-editor .monaco-editor")].filter((e) => e.offsetParent);
    const editors = cells.length ? cells : [document.querySelector(selector)].filter(Boolean);
    return editors.flatMap((editor) => {
      const lines = [...editor.querySelectorAll(".view-lines .view-line")];
      return [...editor.querySelectorAll("[class*='squiggly-']")].map((node) => {
        const top = node.getBoundingClientRect().top;
        const distance = (l) => Math.abs(l.getBoundingClientRect().top - top);
        const line = lines.reduce(
          (best, l) => (best === undefined || distance(l) < distance(best) ? l : best),
          undefined,
        );
        const severity = [...node.classList].find((c) => c.startsWith("squiggly-"));
        return { severity, line: line && distance(line) < 10 ? line.textContent.replace(/\u00a0/g, " ") : undefined };
      });
    });
  }, ACTIVE_EDITOR);
}
