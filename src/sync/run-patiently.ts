// `sync --once`: a source's run that fails for a reason that passes (a throttle the pacer would wait out, a CDN
// block, a 5xx or a reset the HTTP layer's own retries did not get past) is run again in this run — from what its
// pages already saved — after a growing backoff, while the run's patience lasts (src/queue/run-patience.ts). What
// still fails then fails the run (exit 1) and is left to the source's schedule, as the worker leaves it.
import { ApiError, isPermanent, isThrottleDelay } from "../api/errors.ts";
import { RetryInRunError, type RunPatience } from "../queue/run-patience.ts";

/** True when the failure may pass by waiting: the service's, and not one that says retrying cannot help. */
export function passes(err: unknown): boolean {
  return err instanceof ApiError && !isPermanent(err);
}

/** Still failing when the patience ran out: a plain failure for the queue (no longer a delay), with the reason. */
export class PatienceSpentError extends Error {
  constructor(reason: string, cause: unknown) {
    super(`${cause instanceof Error ? cause.message : String(cause)} (${reason})`, { cause });
    this.name = "PatienceSpentError";
  }
}

/**
 * What a `--once` run's job throws for `err`: the same error when it does not pass; while the patience lasts, a
 * delay (the throttle's own, or RetryInRunError with the backoff); once it is spent, PatienceSpentError.
 */
export function failureInRun(patience: RunPatience, key: string, err: unknown): unknown {
  if (!passes(err)) return err;
  const decision = patience.failed(key, isThrottleDelay(err) ? err.waitMs : 0);
  if (!decision.retry) return new PatienceSpentError(decision.reason, err);
  return isThrottleDelay(err) ? err : new RetryInRunError(decision.waitMs, key, err);
}
