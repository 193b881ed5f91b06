// Runs one download (src/downloads/download-file.ts) and maps its outcome onto the queue: stored or
// refused → done; over quota → the job waits, delayed, until the next quota window (never failed);
// another process has the file → delayed briefly; disk full → the queue pauses; shutdown → re-queued,
// the partial file kept for a Range resume; the account must log in again → the row back to wanted, the
// job skipped, no attempt spent; anything else → recorded on the row and thrown (retried). When
// the job's attempts are spent the row is left failed with its next try due after a growing delay
// (src/downloads/retry.ts), which downloads.enqueue queues again; a permanent failure has none.
import { ThrottleDelayError, isThrottleDelay } from "../../src/api/errors.ts";
import { downloadDepsFor } from "../../src/downloads/deps.ts";
import { DownloadsPausedError } from "../../src/downloads/disk-guard.ts";
import { downloadFile } from "../../src/downloads/download-file.ts";
import { isMissingGrant, recordFailedAttempt } from "../../src/downloads/retry.ts";
import { InterruptedError, type JobResult } from "../../src/queue/job-definition.ts";
import type { WorkerContext } from "../context.ts";
import { downloadFileDefinition, type DownloadFilePayload } from "./definition.ts";

const BUSY_RETRY_MS = 15_000;
/** While the queue is paused a due job only moves to the paused list: it runs as soon as the queue resumes. */
const PAUSED_RETRY_MS = 5_000;
const LINKS_SOON_MS = 3000;

export async function downloadFileHandler(payload: DownloadFilePayload, ctx: WorkerContext): Promise<JobResult> {
  const deps = downloadDepsFor(ctx.services);
  const now = () => ctx.services.now();
  // One listener per job on the worker's shared shutdown signal; the transfer's own listeners go on this one.
  const local = new AbortController();
  const onAbort = () => local.abort(ctx.signal.reason);
  ctx.signal.addEventListener("abort", onAbort, { once: true });
  try {
    const outcome = await downloadFile(deps, { ...payload, log: ctx.log, signal: local.signal });
    switch (outcome.status) {
      case "done":
      case "not_downloadable":
        await linksSoon(ctx);
        return { ...outcome, status: "done", result: outcome.status };
      case "degraded":
      case "deferred": {
        if (outcome.status === "degraded") await linksSoon(ctx);
        const waitMs = Math.max(1000, outcome.nextWindow.getTime() - now());
        throw wait(`original deferred to the next quota window (${outcome.nextWindow.toISOString()}): ${outcome.reason}`, waitMs, `download-quota:${payload.deviationid}`);
      }
      case "busy":
        throw wait(outcome.reason, BUSY_RETRY_MS, `download-lock:${payload.deviationid}`);
      case "skipped":
        return { status: "skipped", reason: outcome.reason };
    }
  } catch (err) {
    if (err instanceof DownloadsPausedError) {
      await ctx.producer.queue("downloads").pause();
      throw wait(err.message, PAUSED_RETRY_MS, "disk");
    }
    if (isThrottleDelay(err)) throw err;
    if (ctx.signal.aborted) throw new InterruptedError();
    if (isMissingGrant(err)) {
      // No attempt, no failure: the row goes back to wanted and the job completes as skipped (worker-host.ts);
      // downloads.enqueue claims nothing for the account until it logs in again.
      const row = await deps.repo.findDownloadTarget(payload.deviationid, payload.kind);
      if (row) await deps.repo.releaseDownload(row.id, new Date(now()));
      throw err;
    }
    // The job's own attempts: `download --once` queues them with fewer than the definition's.
    await recordFailedAttempt(deps, { ...payload, err, attempt: ctx.attempt, attempts: ctx.attempts ?? downloadFileDefinition.attempts });
    throw err;
  } finally {
    ctx.signal.removeEventListener("abort", onAbort);
  }
}

/** The job waits (moved to delayed by the worker host) without spending an attempt. */
function wait(message: string, waitMs: number, key: string): ThrottleDelayError {
  return new ThrottleDelayError({ operation: "download.file", waitMs, pacerKey: key, retryAt: Date.now() + waitMs }, message);
}

/** The readable links are rebuilt a few seconds after the last file lands (one pending job at a time). */
async function linksSoon(ctx: WorkerContext): Promise<void> {
  await ctx.producer.enqueue("downloads.enqueue", { scope: "links" }, { delayMs: LINKS_SOON_MS });
}
