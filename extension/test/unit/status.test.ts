import { describe, expect, it } from "vitest";
import { readSummary } from "../../src/report";
import { formatSummary, RunStatus } from "../../src/status";
import { calls, ThemeColor } from "./vscode";

describe("readSummary", () => {
  it("reads the server's camelCase runFinished payload", () => {
    expect(
      readSummary({
        uri: "file:///w/a.py",
        exitCode: 0,
        durationS: 3.2,
        frames: 1,
        compiles: 9,
        recompiles: 8,
        graphBreaks: 1,
        limitHits: 1,
        error: null,
      }),
    ).toEqual({
      uri: "file:///w/a.py",
      compiles: 9,
      recompiles: 8,
      graphBreaks: 1,
      limitHits: 1,
      exitCode: 0,
      error: undefined,
    });
  });

  it("reads a snake_case summary nested in a run result, counting lists", () => {
    expect(
      readSummary({
        summary: { compiles: 2, recompiles: [{}], graph_breaks: [], limit_hits: [] },
        exit_code: 3,
        error: { message: "boom" },
      }),
    ).toEqual({ uri: undefined, compiles: 2, recompiles: 1, graphBreaks: 0, limitHits: 0, exitCode: 3, error: "boom" });
  });

  it.each([null, undefined, "text", 3, []])("is undefined for %j", (raw) => {
    expect(readSummary(raw)).toBeUndefined();
  });
});

describe("formatSummary", () => {
  it("names every count, the limit hit, and asks for attention", () => {
    const text = formatSummary({ compiles: 9, recompiles: 8, graphBreaks: 1, limitHits: 1, exitCode: 0 });
    expect(text.text).toBe("$(pulse) 9 compiles · 8 recompiles · limit hit · 1 graph break");
    expect(text.tooltip).toContain("run finished");
    expect(text.warning).toBe(true);
  });

  it("is calm for a clean run and singular for one", () => {
    const text = formatSummary({ compiles: 1, recompiles: 0, graphBreaks: 0, limitHits: 0, exitCode: 0 });
    expect(text.text).toBe("$(pulse) 1 compile · 0 recompiles · 0 graph breaks");
    expect(text.warning).toBe(false);
  });

  it("says when the script failed", () => {
    const text = formatSummary({ compiles: 0, recompiles: 0, graphBreaks: 0, limitHits: 0, exitCode: 3 });
    expect(text.tooltip).toContain("script exited with code 3");
    expect(text.warning).toBe(true);
    expect(
      formatSummary({ compiles: 0, recompiles: 0, graphBreaks: 0, limitHits: 0, error: "timed out" }).tooltip,
    ).toContain("timed out");
  });
});

describe("RunStatus", () => {
  it("shows idle, running, then the summary with a warning colour, and focuses the frames view on click", () => {
    const status = new RunStatus();
    const item = calls.statusItems.at(-1)!;
    expect(item.visible).toBe(true);
    expect(item.command).toBe("dynamoLens.frames.focus");
    expect(item.text).toBe("$(pulse) Dynamo Lens");
    status.running("train.py");
    expect(item.text).toContain("running train.py");
    status.show({ compiles: 9, recompiles: 8, graphBreaks: 0, limitHits: 1 });
    expect(item.text).toContain("limit hit");
    expect(item.backgroundColor).toEqual(new ThemeColor("statusBarItem.warningBackground"));
    status.failed("Command name 'dynamoLens.run' is not defined");
    expect(item.text).toBe("$(error) Dynamo Lens: run failed");
    expect(item.tooltip).toContain("'dynamoLens.run' is not defined");
    expect(item.backgroundColor).toEqual(new ThemeColor("statusBarItem.errorBackground"));
    status.idle();
    expect(item.backgroundColor).toBeUndefined();
    status.dispose();
    expect(item.disposed).toBe(true);
  });
});
