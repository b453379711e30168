import { describe, expect, it } from "vitest";
import type { RunReport } from "../../src/report";
import { buildFrameNodes, displayPath, rankLabel, type FrameNode } from "../../src/views/frameNodes";
import { FramesTreeProvider } from "../../src/views/framesTree";
import { TreeItemCollapsibleState, Uri } from "./vscode";

const MODEL = "/ws/examples/model.py";
const forward = { name: "forward", path: MODEL, line: 24 };
const guard = (text: string, line: number | null, kind = "EQUALS_MATCH") => ({
  kind,
  text,
  source: "L['self'].steps",
  path: line ? MODEL : null,
  line,
  hint: null,
});

/** The shape `dynamoLens.showReport` returns (schema dynamo-lens.run v1), trimmed to what the view reads. */
const report: RunReport = {
  schema: "dynamo-lens.run",
  version: 1,
  frames: [
    {
      ...forward,
      cache_entries: [
        {
          compile_id: "0/0",
          status: "ok",
          compile_time_s: 0.1234,
          guards: [guard("self.steps == 0", 25), guard("x: float32[8, 16]", null, "TENSOR_MATCH")],
        },
        { compile_id: "0/1", status: "ok", compile_time_s: null, guards: [guard("self.steps == 1", 25)] },
        { compile_id: "0/2", status: "recompile_limit", compile_time_s: 0.01, guards: [] },
      ],
    },
    { name: "main", path: "/elsewhere/run.py", line: 3, cache_entries: [] },
  ],
  recompiles: [
    {
      compile_id: "0/1",
      frame: forward,
      failed_guards: [{ entry: "0/0", kind: "EQUALS_MATCH", text: "self.steps == 0", path: MODEL, line: 25 }],
    },
    {
      compile_id: "0/2",
      frame: forward,
      failed_guards: [{ entry: "0/1", kind: "EQUALS_MATCH", text: "self.steps == 1", path: MODEL, line: 25 }],
    },
    { compile_id: "9/9", frame: { name: "other", path: MODEL, line: 1 }, failed_guards: [] },
  ],
  graph_breaks: [
    {
      compile_id: "0/0",
      reason: "Tensor.item() call",
      gb_type: "Unsupported Tensor.item() call",
      explanation: "Dynamo does not support item()",
      frame: forward,
      path: MODEL,
      line: 27,
    },
    { reason: "print", gb_type: undefined, frame: null, path: MODEL, line: 40 },
  ],
  limit_hits: [{ frame: forward, limit: "recompile_limit", value: 8, last_reason: "self.steps == 7" }],
  missing: ["guard latency: not measured on this torch"],
};

const labels = (nodes: readonly FrameNode[]): string[] => nodes.map((n) => n.label);

describe("buildFrameNodes", () => {
  const nodes = buildFrameNodes(report, "/ws");

  it("lists frames, then graph breaks no frame claimed, then what was not collected", () => {
    expect(labels(nodes)).toEqual(["forward", "main", "Graph breaks", "Not collected on this torch"]);
    expect(labels(nodes[2].children)).toEqual(["print"]);
    expect(nodes[2].children[0].location).toEqual({ path: MODEL, line: 40 });
    expect(labels(nodes[3].children)).toEqual(["guard latency: not measured on this torch"]);
  });

  it("sums a frame up on one line, with the path relative to the workspace", () => {
    expect(nodes[0].description).toBe(
      "2 cache entries · 1 recompile · limit hit · 1 graph break  examples/model.py:24",
    );
    expect(nodes[0].tooltip).toBe(
      "forward examples/model.py:24\n2 cache entries, 1 recompile, limit hit, 1 graph break",
    );
    expect(nodes[0].location).toEqual({ path: MODEL, line: 24 });
    expect(nodes[1].description).toBe("0 cache entries  run.py:3");
  });

  it("nests cache entries → guards, then recompiles, graph breaks and the limit hit", () => {
    const [entry0, entry1, refused, recompiles, breaks, limit] = nodes[0].children;
    expect(entry0.label).toBe("cache entry 0/0");
    expect(entry0.description).toBe("ok · 0.12 s · 2 guards");
    expect(entry1.description).toBe("ok · 1 guard");
    expect(refused.description).toBe("recompile_limit · 0.01 s · 0 guards"); // listed, not counted above
    expect(entry0.children.map((g) => [g.label, g.description, g.location])).toEqual([
      ["self.steps == 0", "EQUALS_MATCH  examples/model.py:25", { path: MODEL, line: 25 }],
      ["x: float32[8, 16]", "TENSOR_MATCH", undefined],
    ]);
    expect(recompiles.label).toBe("Recompiles");
    expect(recompiles.children.map((r) => [r.label, r.description, r.location?.line])).toEqual([
      ["recompile 0/1", "self.steps == 0  examples/model.py:25", 25],
      ["recompile 0/2 (refused at the limit)", "self.steps == 1  examples/model.py:25", 25],
    ]);
    expect(labels(recompiles.children[0].children)).toEqual(["entry 0/0: self.steps == 0"]);
    expect(breaks.children.map((b) => [b.label, b.location?.line, b.tooltip])).toEqual([
      ["Unsupported Tensor.item() call", 27, "Tensor.item() call\n\nDynamo does not support item()"],
    ]);
    expect(limit.label).toBe("recompile_limit hit (8): later calls run eagerly");
    expect(limit.tooltip).toBe("self.steps == 7");
  });

  it("says how many calls ran the compiled code, and how many ran eagerly after the limit, where the run counted them", () => {
    const counted = buildFrameNodes(
      {
        frames: [{ ...forward, cache_entries: [{ compile_id: "0/0", status: "ok" }], compiled_calls: 40 }],
        limit_hits: [{ frame: forward, limit: "recompile_limit", value: 8, eager_calls: 4 }],
      },
      "/ws",
    );
    expect(counted[0].description).toBe("1 cache entry · limit hit · 40 calls ran compiled code  examples/model.py:24");
    expect(counted[0].children.at(-1)?.label).toBe("recompile_limit hit (8): 4 later calls ran eagerly");
    const partial = buildFrameNodes({
      frames: [{ ...forward, compiled_calls: 40 }],
      limit_hits: [{ frame: forward, eager_calls: 4 }],
      summary: { unattributed_calls: 3 },
    });
    expect(partial[0].description).toMatch(/at least 40 calls ran compiled code/);
    expect(partial[0].children.at(-1)?.label).toBe("recompile_limit hit: at least 4 later calls ran eagerly");
  });

  it("copes with an empty or partial report", () => {
    expect(buildFrameNodes({})).toEqual([]);
    expect(buildFrameNodes({ frames: [{ name: "f" }] })[0]).toMatchObject({
      label: "f",
      location: undefined,
      children: [],
    });
  });
});

describe("buildFrameNodes on a multi-process run", () => {
  const rank = (n: number, entries: number, complete = true): RunReport => ({
    process: { pid: 100 + n, rank: n },
    complete,
    frames: [
      {
        name: "forward",
        path: MODEL,
        line: 24,
        cache_entries: Array.from({ length: entries }, (_, i) => ({ compile_id: `0/${i}`, status: "ok" })),
      },
    ],
    recompiles: entries > 1 ? [{ compile_id: "0/1", frame: forward }] : [],
  });

  it("adds a node per rank, its frames under it, after the launcher's own", () => {
    const nodes = buildFrameNodes({ process: { pid: 99 }, ranks: [rank(0, 1), rank(1, 3, false)] }, "/ws");
    expect(nodes.map((n) => [n.kind, n.label, n.description, n.tooltip])).toEqual([
      ["rank", "rank 0", "1 compile · 0 recompiles", "pid 100"],
      ["rank", "rank 1", "3 compiles · 1 recompile · killed before it finished", "pid 101"],
    ]);
    expect(labels(nodes[1].children)).toEqual(["forward"]);
    expect(nodes[1].children[0].description).toMatch(/^3 cache entries · 1 recompile/);
  });

  it("names a process without a rank by its pid", () => {
    expect(rankLabel({ process: { pid: 7, rank: null } })).toBe("process 7");
  });
});

describe("displayPath", () => {
  it("is relative under the root and the file name elsewhere", () => {
    expect(displayPath("/ws/a/b.py", "/ws")).toBe("a/b.py");
    expect(displayPath("/other/b.py", "/ws")).toBe("b.py");
    expect(displayPath("/other/b.py")).toBe("b.py");
  });
});

describe("FramesTreeProvider", () => {
  it("renders nodes as tree items that reveal their line, and refreshes on show/clear", () => {
    const provider = new FramesTreeProvider();
    let refreshes = 0;
    provider.onDidChangeTreeData(() => refreshes++);
    expect(provider.getChildren()).toEqual([]);
    provider.show(report, "/ws");
    const [frame] = provider.getChildren();
    const item = provider.getTreeItem(frame);
    expect(item.collapsibleState).toBe(TreeItemCollapsibleState.Expanded);
    expect(item.command?.command).toBe("dynamoLens.revealLocation");
    expect(item.command?.arguments).toEqual([Uri.file(MODEL), 24]);
    const entry = provider.getChildren(frame)[0];
    expect(provider.getTreeItem(entry).collapsibleState).toBe(TreeItemCollapsibleState.Collapsed);
    expect(provider.getTreeItem(entry).command).toBeUndefined();
    const leaf = provider.getChildren(entry)[0];
    expect(provider.getTreeItem(leaf).collapsibleState).toBe(TreeItemCollapsibleState.None);
    provider.clear();
    expect(provider.getChildren()).toEqual([]);
    expect(refreshes).toBe(2);
  });
});
