/**
 * The shapes the client reads from the server: the run report (`dynamoLens.showReport`, schema `dynamo-lens.run`
 * v1, DESIGN.md §2) and the `dynamoLens/runFinished` summary. Only the fields the views use are declared; every
 * field is optional because a run on an older torch reports what it could (`missing`).
 */

export interface SourceLocation {
  readonly path?: string | null;
  readonly line?: number | null;
}

export interface FrameRef extends SourceLocation {
  readonly name?: string;
}

export interface Guard extends SourceLocation {
  readonly kind?: string;
  readonly text?: string;
  readonly source?: string | null;
  readonly hint?: string | null;
}

export interface CacheEntry {
  readonly compile_id?: string;
  readonly status?: string;
  readonly compile_time_s?: number | null;
  readonly guards?: readonly Guard[];
}

export interface Frame extends FrameRef {
  readonly cache_entries?: readonly CacheEntry[];
  /** Calls that ran this frame's compiled code; null where the run could not count them. */
  readonly compiled_calls?: number | null;
}

export interface FailedGuard extends Guard {
  readonly entry?: string;
}

export interface Recompile {
  readonly compile_id?: string;
  readonly frame?: FrameRef | null;
  readonly failed_guards?: readonly FailedGuard[];
}

export interface GraphBreak extends SourceLocation {
  readonly compile_id?: string;
  readonly reason?: string;
  readonly gb_type?: string;
  readonly explanation?: string;
  readonly frame?: FrameRef | null;
}

export interface LimitHit {
  readonly frame?: FrameRef | null;
  readonly limit?: string;
  readonly value?: number;
  readonly last_reason?: string | null;
  /** Calls of the frame that ran eagerly after the hit. */
  readonly eager_calls?: number | null;
}

export interface RunReport {
  readonly schema?: string;
  readonly version?: number;
  readonly torch_version?: string | null;
  readonly argv?: readonly string[];
  readonly exit_code?: number | null;
  readonly frames?: readonly Frame[];
  readonly recompiles?: readonly Recompile[];
  readonly graph_breaks?: readonly GraphBreak[];
  readonly limit_hits?: readonly LimitHit[];
  readonly missing?: readonly string[];
  /** Guard checks of calls the run could not attribute to a frame: where not 0, per-frame call counts are lower bounds. */
  readonly summary?: { readonly unattributed_calls?: number | null };
  readonly complete?: boolean;
  /** Which process this report is about; a rank's report in a multi-process run names its rank. */
  readonly process?: { readonly pid: number; readonly rank?: number | null } | null;
  /** A multi-process run (torchrun, torch.multiprocessing.spawn): every other process's report, by rank. */
  readonly ranks?: readonly RunReport[];
}

/** What the status bar shows after a run. */
export interface RunSummary {
  readonly uri?: string;
  readonly compiles: number;
  readonly recompiles: number;
  readonly graphBreaks: number;
  readonly limitHits: number;
  readonly exitCode?: number;
  readonly error?: string;
}

/** Reads a `dynamoLens/runFinished` payload (or a `dynamoLens.run` result), tolerating camelCase or snake_case. */
export function readSummary(raw: unknown): RunSummary | undefined {
  if (!isRecord(raw)) {
    return undefined;
  }
  const inner = isRecord(raw.summary) ? { ...raw, ...raw.summary } : raw;
  const count = (...keys: string[]): number => {
    for (const key of keys) {
      const value = inner[key];
      if (typeof value === "number") {
        return value;
      }
      if (Array.isArray(value)) {
        return value.length;
      }
    }
    return 0;
  };
  const text = (...keys: string[]): string | undefined => {
    for (const key of keys) {
      const value = inner[key];
      if (typeof value === "string" && value !== "") {
        return value;
      }
      if (isRecord(value) && typeof value.message === "string") {
        return value.message;
      }
    }
    return undefined;
  };
  const exit = inner.exitCode ?? inner.exit_code;
  return {
    uri: text("uri"),
    compiles: count("compiles"),
    recompiles: count("recompiles"),
    graphBreaks: count("graphBreaks", "graph_breaks"),
    limitHits: count("limitHits", "limit_hits"),
    exitCode: typeof exit === "number" ? exit : undefined,
    error: text("error"),
  };
}

/** The report inside a `dynamoLens.showReport` answer (the report itself, or `{report: ...}`), if any. */
export function readReport(raw: unknown): RunReport | undefined {
  if (!isRecord(raw)) {
    return undefined;
  }
  if (isRecord(raw.report)) {
    return raw.report as RunReport;
  }
  return Array.isArray(raw.frames) || raw.schema === "dynamo-lens.run" ? (raw as RunReport) : undefined;
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
