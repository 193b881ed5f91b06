// Runs the source through the same runner `dvault sync --once` uses; outcomes map in worker-host.ts.
import type { JobResult } from "../../src/queue/job-definition.ts";
import { runSource } from "../../src/sync/run-source.ts";
import type { WorkerContext } from "../context.ts";
import type { SyncSourcePayload } from "./definition.ts";

export async function syncSourceHandler(payload: SyncSourcePayload, ctx: WorkerContext): Promise<JobResult> {
  const result = await runSource(
    { accountId: payload.accountId, source: payload.source, key: payload.key, ...(payload.full !== undefined ? { full: payload.full } : {}) },
    { services: ctx.services, sources: ctx.sources, signal: ctx.signal, everyMs: ctx.everyMs },
  );
  const { status, reason, counters, apiCalls, durationMs, full } = result;
  return { status: status === "skipped" ? "skipped" : "done", ...(reason ? { reason } : {}), result: status, ...counters, apiCalls, durationMs, full };
}
