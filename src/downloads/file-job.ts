// The download.file job (jobs/download/handler.ts): one download (download-file.ts) mapped onto the queue. Stored
// or refused → done; over quota → the job waits, delayed, until the next quota window (never failed); another
// process has the file → delayed briefly; disk full → `paused` (the worker pauses its queue, `download --once`
// stops); shutdown → re-queued, the partial file kept for a Range resume; the account must log in again → the
// row back to wanted, the job skipped, no attempt spent; anything else → recorded on the row and thrown (retried).
// In `download --once` (retryInRun) a failure that passes comes back as a delay instead, while the run's patience
// lasts (src/queue/run-patience.ts). When the job's attempts (or the run's patience) are spent the row is left
// failed with its next try due after a growing delay (retry.ts), which downloads.enqueue queues again; a
// permanent failure has none. It lives here, not in jobs/,
// so that `download --once` (run-once.ts) runs the very same code through src/queue/run-now.ts.
import { isThrottleDelay } from "../api/errors.ts";
import type { Logger } from "../log.ts";
import { InterruptedError, JobWaitError, type JobResult } from "../queue/job-definition.ts";
import { RetryInRunError, type PatienceDecision } from "../queue/run-patience.ts";
import type { DownloadDeps } from "./deps.ts";
import { DownloadsPausedError } from "./disk-guard.ts";
import { downloadFile } from "./download-file.ts";
import type { DownloadOutcome, ReservationTurn } from "./outcome.ts";
import type { DownloadFilePayload } from "./download-job.ts";
import { isMissingGrant, isPermanentFailure, recordFailedAttempt } from "./retry.ts";

const BUSY_RETRY_MS = 15_000;
/** While the queue is paused a due job only moves to the paused list: it runs as soon as the queue resumes. */
const PAUSED_RETRY_MS = 5_000;

export type FileJobContext = {
  deps: DownloadDeps;
  log: Logger;
  /** Aborted at shutdown (the worker's) or on SIGINT (`--once`). */
  signal: AbortSignal;
  /** This attempt (1 = the first) and the attempts the job was queued with. */
  attempt: number;
  attempts: number;
  /** The disk guard paused the downloads (the worker pauses its queue; `--once` stops the run). */
  paused(err: DownloadsPausedError): Promise<void>;
  /** A file was stored: the readable links are due. */
  stored(): Promise<void>;
  onBytes?: ((n: number) => void) | undefined;
  reservationTurn?: ReservationTurn | undefined;
  /** Delays before a failed file is due again (default retry.ts). */
  retryDelaysMs?: readonly number[] | undefined;
  /** How long a file another process holds waits before it is tried again (default 15 s). */
  busyRetryMs?: number | undefined;
  /** Every outcome of download-file.ts, before it is mapped onto the queue. */
  onOutcome?: ((outcome: DownloadOutcome) => void) | undefined;
  /**
   * `download --once`: whether a failure that passes (a throttle the pacer would wait out included) is tried
   * again in this run, and after how long (src/queue/run-patience.ts); without it the job's attempts decide.
   */
  retryInRun?: ((err: unknown) => PatienceDecision) | undefined;
  /** A failed attempt, as recorded on the row. */
  onFailure?: ((failure: { final: boolean; message: string; failures: number | undefined; nextAttemptAt: Date | null }) => void) | undefined;
};

export async function runFileJob(payload: DownloadFilePayload, ctx: FileJobContext): Promise<JobResult> {
  const { deps } = ctx;
  const now = () => deps.services.now();
  // One listener per job on the shared signal; the transfer's own listeners go on this one.
  const local = new AbortController();
  const onAbort = () => local.abort(ctx.signal.reason);
  ctx.signal.addEventListener("abort", onAbort, { once: true });
  let answered = false;
  try {
    const outcome = await downloadFile(deps, { ...payload, log: ctx.log, signal: local.signal, onBytes: ctx.onBytes, reservationTurn: ctx.reservationTurn });
    answered = true;
    ctx.onOutcome?.(outcome);
    switch (outcome.status) {
      case "done":
      case "not_downloadable":
        await ctx.stored();
        return { ...outcome, status: "done", result: outcome.status };
      case "degraded":
      case "deferred": {
        if (outcome.status === "degraded") await ctx.stored();
        const waitMs = Math.max(1000, outcome.nextWindow.getTime() - now());
        const message = `original deferred to the next quota window (${outcome.nextWindow.toISOString()}): ${outcome.reason}`;
        throw new JobWaitError(message, waitMs, `download-quota:${payload.deviationid}`, "deferred");
      }
      case "busy":
        throw new JobWaitError(outcome.reason, ctx.busyRetryMs ?? BUSY_RETRY_MS, `download-lock:${payload.deviationid}`, "busy");
      case "skipped":
        return { status: "skipped", reason: outcome.reason };
    }
  } catch (err) {
    if (err instanceof DownloadsPausedError) {
      await ctx.paused(err);
      throw new JobWaitError(err.message, PAUSED_RETRY_MS, "disk", "paused");
    }
    // A wait of this file's own outcome (quota, lock) is not a failure; a throttle is, once the run's patience is spent.
    if (err instanceof JobWaitError) throw err;
    const decision = !answered && !ctx.signal.aborted && ctx.retryInRun && !isPermanentFailure(err) && !isMissingGrant(err) ? ctx.retryInRun(err) : undefined;
    if (isThrottleDelay(err) && decision?.retry !== false) throw err;
    if (ctx.signal.aborted) throw new InterruptedError();
    if (isMissingGrant(err)) {
      // No attempt, no failure: the row goes back to wanted and the job completes as skipped (worker-host.ts);
      // downloads.enqueue claims nothing for the account until it logs in again.
      const row = await deps.repo.findDownloadTarget(payload.deviationid, payload.kind);
      if (row) await deps.repo.releaseDownload(row.id, new Date(now()));
      throw err;
    }
    const failure = await recordFailedAttempt(deps, {
      ...payload,
      err,
      attempt: ctx.attempt,
      attempts: ctx.attempts,
      ...(ctx.retryDelaysMs ? { retryDelaysMs: ctx.retryDelaysMs } : {}),
      ...(decision ? { giveUp: !decision.retry } : {}),
    });
    ctx.onFailure?.(decision && !decision.retry ? { ...failure, message: `${failure.message} (${decision.reason})` } : failure);
    if (decision?.retry) throw new RetryInRunError(decision.waitMs, `${payload.deviationid}:${payload.kind}`, err);
    throw err;
  } finally {
    ctx.signal.removeEventListener("abort", onAbort);
  }
}
