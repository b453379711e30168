import { ThemeColor, type Disposable, type StatusBarItem } from "vscode";
import { ClientCommand, DISPLAY_NAME, FRAMES_VIEW_ID } from "./constants";
import type { RunSummary } from "./report";
import { createStatusBarItem } from "./vscodeapi";

export interface StatusText {
  readonly text: string;
  readonly tooltip: string;
  /** True when the run needs attention (recompile limit hit, or the script failed). */
  readonly warning: boolean;
}

const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? "" : "s"}`;

/** "9 compiles · 8 recompiles · limit hit · 1 graph break", for the status bar and its tooltip. */
export function formatSummary(summary: RunSummary): StatusText {
  const parts = [plural(summary.compiles, "compile"), plural(summary.recompiles, "recompile")];
  if (summary.limitHits > 0) {
    parts.push("limit hit");
  }
  parts.push(plural(summary.graphBreaks, "graph break"));
  const failed = summary.error !== undefined || (summary.exitCode !== undefined && summary.exitCode !== 0);
  const outcome = summary.error ?? (failed ? `script exited with code ${summary.exitCode}` : "run finished");
  return {
    text: `$(pulse) ${parts.join(" · ")}`,
    tooltip: `${DISPLAY_NAME}: ${outcome}. ${parts.join(", ")}. Click to see the compiled frames.`,
    warning: failed || summary.limitHits > 0,
  };
}

/** The status bar item: idle, running, or the last run's summary. */
export class RunStatus implements Disposable {
  private readonly item: StatusBarItem;

  constructor() {
    this.item = createStatusBarItem("dynamoLens.status", 100);
    this.item.name = DISPLAY_NAME;
    this.item.command = `${FRAMES_VIEW_ID}.focus`;
    this.idle();
    this.item.show();
  }

  idle(): void {
    this.item.text = `$(pulse) ${DISPLAY_NAME}`;
    this.item.tooltip = `${DISPLAY_NAME}: no instrumented run yet. Run "${DISPLAY_NAME}: Run Current File" (${ClientCommand.runFile}).`;
    this.item.backgroundColor = undefined;
  }

  running(file: string): void {
    this.item.text = `$(sync~spin) ${DISPLAY_NAME}: running ${file}`;
    this.item.tooltip = `${DISPLAY_NAME}: instrumented run of ${file} in progress (cancel it from the progress notification).`;
  }

  /** The run could not be done at all (the server refused or crashed); a script that failed is a summary. */
  failed(message: string): void {
    this.item.text = `$(error) ${DISPLAY_NAME}: run failed`;
    this.item.tooltip = `${DISPLAY_NAME}: the run failed: ${message}. See "${DISPLAY_NAME}: Show Output".`;
    this.item.backgroundColor = new ThemeColor("statusBarItem.errorBackground");
  }

  show(summary: RunSummary): void {
    const status = formatSummary(summary);
    this.item.text = status.text;
    this.item.tooltip = status.tooltip;
    this.item.backgroundColor = status.warning ? new ThemeColor("statusBarItem.warningBackground") : undefined;
  }

  dispose(): void {
    this.item.dispose();
  }
}
