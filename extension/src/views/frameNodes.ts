/**
 * The tree of compiled frames as plain data (no `vscode` here, so it is unit-tested directly):
 * frame → cache entries → guards, then the frame's recompiles (each with the guards that failed), graph breaks and
 * recompile-limit hits. Every node that has a user source line carries it, so clicking it reveals the line. A
 * multi-process run adds a node per rank, with that rank's frames under it.
 */
import * as path from "node:path";
import type {
  CacheEntry,
  Frame,
  FrameRef,
  GraphBreak,
  Guard,
  LimitHit,
  Recompile,
  RunReport,
  SourceLocation,
} from "../report";

export type NodeKind =
  | "rank"
  | "frame"
  | "entry"
  | "guard"
  | "recompiles"
  | "recompile"
  | "graphBreaks"
  | "graphBreak"
  | "limit"
  | "missing";

export interface FrameNode {
  readonly kind: NodeKind;
  readonly label: string;
  readonly description?: string;
  readonly tooltip?: string;
  /** Absolute path and 1-based line of the user's code this node is about. */
  readonly location?: { readonly path: string; readonly line: number };
  readonly children: readonly FrameNode[];
}

/** Paths are absolute in the report; shown relative to `root` when they lie under it. */
export function displayPath(file: string, root?: string): string {
  if (root) {
    const relative = path.relative(root, file);
    if (relative && !relative.startsWith("..") && !path.isAbsolute(relative)) {
      return relative;
    }
  }
  return path.basename(file);
}

export function buildFrameNodes(report: RunReport, root?: string): FrameNode[] {
  const nodes = processNodes(report, root);
  for (const rank of report.ranks ?? []) {
    const compiled = (rank.frames ?? []).reduce(
      (sum, frame) => sum + (frame.cache_entries ?? []).filter((entry) => entry.status === "ok").length,
      0,
    );
    const facts = [plural(compiled, "compile"), plural((rank.recompiles ?? []).length, "recompile")];
    if (rank.complete === false) {
      facts.push("killed before it finished");
    }
    nodes.push({
      kind: "rank",
      label: rankLabel(rank),
      description: facts.join(" · "),
      tooltip: rank.process ? `pid ${rank.process.pid}` : undefined,
      children: processNodes(rank, root),
    });
  }
  return nodes;
}

/** `rank 1`, else `process 4242` (as the server's `RunReport.rank_label`). */
export function rankLabel(report: RunReport): string {
  const process = report.process;
  if (!process) {
    return "the main process";
  }
  return typeof process.rank === "number" ? `rank ${process.rank}` : `process ${process.pid}`;
}

function processNodes(report: RunReport, root?: string): FrameNode[] {
  const frames = report.frames ?? [];
  const claimed = new Set<GraphBreak>();
  const nodes = frames.map((frame) => frameNode(frame, report, root, claimed));
  const orphanBreaks = (report.graph_breaks ?? []).filter((gb) => !claimed.has(gb));
  if (orphanBreaks.length > 0) {
    nodes.push(
      group(
        "graphBreaks",
        "Graph breaks",
        orphanBreaks.map((gb) => graphBreakNode(gb, root)),
      ),
    );
  }
  if ((report.missing ?? []).length > 0) {
    nodes.push({
      kind: "missing",
      label: "Not collected on this torch",
      description: `${report.missing?.length}`,
      children: (report.missing ?? []).map((text) => ({ kind: "missing", label: text, children: [] })),
    });
  }
  return nodes;
}

function frameNode(frame: Frame, report: RunReport, root: string | undefined, claimed: Set<GraphBreak>): FrameNode {
  const entries = frame.cache_entries ?? [];
  const recompiles = (report.recompiles ?? []).filter((r) => sameFrame(r.frame, frame));
  const breaks = (report.graph_breaks ?? []).filter((gb) => sameFrame(gb.frame, frame));
  breaks.forEach((gb) => claimed.add(gb));
  const limits = (report.limit_hits ?? []).filter((hit) => sameFrame(hit.frame, frame));
  // The counts every view shows (the server's runtime/report.py `Counts`): entries that hold code, and the
  // recompiles that made one; a compile refused at the limit is neither.
  const produced = new Set(entries.filter((entry) => entry.status === "ok").map((entry) => entry.compile_id));
  const made = recompiles.filter((r) => produced.has(r.compile_id)).length;
  const facts = [plural(produced.size, "cache entry", "cache entries")];
  if (made > 0) {
    facts.push(plural(made, "recompile"));
  }
  if (limits.length > 0) {
    facts.push("limit hit");
  }
  if (breaks.length > 0) {
    facts.push(plural(breaks.length, "graph break"));
  }
  const atLeast = (report.summary?.unattributed_calls ?? 0) > 0 ? "at least " : "";
  if (typeof frame.compiled_calls === "number") {
    facts.push(`${atLeast}${plural(frame.compiled_calls, "call")} ran compiled code`);
  }
  const children: FrameNode[] = entries.map((entry) => entryNode(entry, root));
  if (recompiles.length > 0) {
    children.push(
      group(
        "recompiles",
        "Recompiles",
        recompiles.map((r) => recompileNode(r, produced.has(r.compile_id), root)),
      ),
    );
  }
  if (breaks.length > 0) {
    children.push(
      group(
        "graphBreaks",
        "Graph breaks",
        breaks.map((gb) => graphBreakNode(gb, root)),
      ),
    );
  }
  children.push(...limits.map((hit) => limitNode(hit, atLeast)));
  return {
    kind: "frame",
    label: frame.name ?? "<frame>",
    description: [facts.join(" · "), where(frame, root)].filter(Boolean).join("  "),
    tooltip: [`${frame.name ?? "<frame>"} ${where(frame, root)}`.trim(), facts.join(", ")].join("\n"),
    location: locate(frame),
    children,
  };
}

function entryNode(entry: CacheEntry, root: string | undefined): FrameNode {
  const guards = entry.guards ?? [];
  const time = typeof entry.compile_time_s === "number" ? `${entry.compile_time_s.toFixed(2)} s` : undefined;
  return {
    kind: "entry",
    label: `cache entry ${entry.compile_id ?? "?"}`,
    description: [entry.status, time, plural(guards.length, "guard")].filter(Boolean).join(" · "),
    children: guards.map((guard) => guardNode(guard, root)),
  };
}

function guardNode(guard: Guard, root: string | undefined): FrameNode {
  return {
    kind: "guard",
    label: guard.text ?? guard.source ?? guard.kind ?? "guard",
    description: [guard.kind, where(guard, root)].filter(Boolean).join("  "),
    tooltip: guard.hint ?? undefined,
    location: locate(guard),
    children: [],
  };
}

function recompileNode(recompile: Recompile, madeEntry: boolean, root: string | undefined): FrameNode {
  const failed = recompile.failed_guards ?? [];
  const first = failed[0];
  return {
    kind: "recompile",
    label: `recompile ${recompile.compile_id ?? "?"}${madeEntry ? "" : " (refused at the limit)"}`,
    description: first ? [first.text, where(first, root)].filter(Boolean).join("  ") : undefined,
    location: first ? locate(first) : undefined,
    children: failed.map((guard) => ({
      ...guardNode(guard, root),
      label: `${guard.entry ? `entry ${guard.entry}: ` : ""}${guard.text ?? guard.kind ?? "guard failed"}`,
    })),
  };
}

function graphBreakNode(gb: GraphBreak, root: string | undefined): FrameNode {
  return {
    kind: "graphBreak",
    label: gb.gb_type ?? gb.reason ?? "graph break",
    description: where(gb, root),
    tooltip: [gb.reason, gb.explanation].filter(Boolean).join("\n\n") || undefined,
    location: locate(gb),
    children: [],
  };
}

function limitNode(hit: LimitHit, atLeast: string): FrameNode {
  return {
    kind: "limit",
    label: `${hit.limit ?? "recompile_limit"} hit${typeof hit.value === "number" ? ` (${hit.value})` : ""}: ${
      typeof hit.eager_calls === "number" && hit.eager_calls > 0
        ? `${atLeast}${plural(hit.eager_calls, "later call")} ran eagerly`
        : "later calls run eagerly"
    }`,
    tooltip: hit.last_reason ?? undefined,
    children: [],
  };
}

function group(kind: NodeKind, label: string, children: FrameNode[]): FrameNode {
  return { kind, label, description: `${children.length}`, children };
}

function sameFrame(ref: FrameRef | null | undefined, frame: Frame): boolean {
  return !!ref && ref.name === frame.name && ref.path === frame.path && ref.line === frame.line;
}

function locate(location: SourceLocation): FrameNode["location"] {
  return location.path && typeof location.line === "number" && location.line > 0
    ? { path: location.path, line: location.line }
    : undefined;
}

function where(location: SourceLocation, root: string | undefined): string {
  const at = locate(location);
  return at ? `${displayPath(at.path, root)}:${at.line}` : "";
}

function plural(n: number, word: string, many = `${word}s`): string {
  return `${n} ${n === 1 ? word : many}`;
}
