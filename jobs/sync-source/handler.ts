// Runs the source (src/sync/run-source.ts), in the worker or in `dvault sync --once` (src/queue/run-now.ts); outcomes map in worker-host.ts.
// A run that mirrored anything new or changed then hands the due downloads to the queue itself, so the
// files a first sync wants start downloading (and share the pacing budget with the sources still running)
// as soon as the source that found them finishes, not at the next `downloads.enqueue` tick minutes later.
// Only at the end of a run: a text download queued mid-run could find its /deviation/content not yet fetched.
// Not at all when this process runs the downloads itself (`dvault archive --once`, ctx.downloadsHere).
import { enqueueDueDownloads } from "../../src/downloads/enqueue-due.ts";
import type { JobResult } from "../../src/queue/job-definition.ts";
import { runSource } from "../../src/sync/run-source.ts";
import type { WorkerContext } from "../context.ts";
import type { SyncSourcePayload } from "./definition.ts";

export async function syncSourceHandler(payload: SyncSourcePayload, ctx: WorkerContext): Promise<JobResult> {
  const result = await runSource(
    { accountId: payload.accountId, source: payload.source, key: payload.key, ...(payload.full !== undefined ? { full: payload.full } : {}) },
    {
      services: ctx.services,
      sources: ctx.sources,
      signal: ctx.signal,
      everyMs: ctx.everyMs,
      ...(ctx.schedules ? { schedules: ctx.schedules() } : {}),
      ...(ctx.progress ? { progress: ctx.progress } : {}),
    },
  );
  const { status, reason, counters, apiCalls, paced, throttled, durationMs, full } = result;
  let downloads: { downloadsQueued: number; enqueueMs: number } | undefined;
  if (status !== "skipped" && counters.new + counters.changed > 0 && !ctx.downloadsHere) {
    const started = Date.now();
    try {
      const summary = await enqueueDueDownloads(ctx.services, ctx.producer);
      downloads = { downloadsQueued: summary.added + summary.promoted, enqueueMs: Date.now() - started };
    } catch (err) {
      // The mirror is committed; the periodic `downloads.enqueue` job picks the rows up instead.
      ctx.log.warn({ err }, "could not queue the downloads this sync wanted; the next downloads.enqueue run will");
    }
  }
  return {
    status: status === "skipped" ? "skipped" : "done",
    ...(reason ? { reason } : {}),
    result: status,
    ...counters,
    apiCalls,
    paced,
    throttled,
    durationMs,
    full,
    ...downloads,
  };
}
