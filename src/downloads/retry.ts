// When a download that failed is tried again. A transient fault (throttling, 5xx, a connection reset
// mid-body, a malformed answer, a token the service rejected after a refresh) leaves the row failed with a
// next_attempt_at that grows with each failure in a row — minutes, then hours, capped at a day — so a
// daemon left alone for months still gets the file once the fault is gone. A permanent refusal (the
// file or the endpoint does not exist, any other 4xx) stays failed with no next attempt: retrying cannot
// help, and `dvault status` counts it for an operator. Refusals the service states in words (not
// downloadable, deleted) never get here: they are recorded as not_downloadable (download-file.ts), and
// neither does an account that must log in again: its rows stay wanted, untried (isMissingGrant below).
import { ApiError, isPermanent } from "../api/errors.ts";
import { ReauthRequiredError } from "../api/token-errors.ts";
import type { DownloadKind } from "../db/download.repository.ts";
import { scrubString } from "../redact.ts";
import type { DownloadDeps } from "./deps.ts";
import { TransferError } from "./transfer.ts";

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

/** The delay after the 1st, 2nd, ... failure in a row; every later one waits the last (a day). */
export const RETRY_DELAYS_MS: readonly number[] = [15 * MINUTE, HOUR, 4 * HOUR, 12 * HOUR, 24 * HOUR];

/** The delay before the next try after `failures` failures in a row (1 = the first). */
export function retryDelayMs(failures: number, delays: readonly number[] = RETRY_DELAYS_MS): number {
  const i = Math.min(Math.max(1, Math.floor(failures)), delays.length) - 1;
  return delays[i]!;
}

/**
 * True when a failure will not go away by waiting. An account's rejected or under-scoped token is not
 * permanent for the file: the re-login that fixes the account makes the next try succeed.
 */
export function isPermanentFailure(err: unknown): boolean {
  if (err instanceof TransferError) return !err.retryable;
  if (err instanceof ApiError && (err.kind === "invalid_token" || err.kind === "insufficient_scope")) return false;
  return isPermanent(err);
}

/**
 * The account has no usable grant (needs_reauth or revoked, or a refresh the service refused just now):
 * not a failure of the file at all. Retrying before a person logs in only burns attempts, so callers
 * release the row untouched (still wanted) and stop working for that account.
 */
export function isMissingGrant(err: unknown): err is ReauthRequiredError {
  return err instanceof ReauthRequiredError;
}

export type RecordedFailure = { final: boolean; permanent: boolean; message: string; failures: number | undefined; nextAttemptAt: Date | null };

/**
 * The one place a failed attempt at a file is recorded (the downloads job and `dvault download --once` alike): the
 * error on the row, and, once the attempts are spent or the failure is permanent, the row failed with its next
 * attempt after the delay of its failures in a row (none when permanent). The caller rethrows for the queue.
 */
export async function recordFailedAttempt(
  deps: DownloadDeps,
  f: {
    deviationid: string;
    kind: DownloadKind;
    err: unknown;
    attempt: number;
    attempts: number;
    retryDelaysMs?: readonly number[];
    /** Decided by the caller instead of by the attempts (`--once`: the run's patience, src/queue/run-patience.ts). */
    giveUp?: boolean | undefined;
  },
): Promise<RecordedFailure> {
  const permanent = isPermanentFailure(f.err);
  const final = permanent || isPermanent(f.err) || (f.giveUp ?? f.attempt >= f.attempts);
  const message = scrubString(f.err instanceof Error ? `${f.err.name}: ${f.err.message}` : String(f.err));
  const after = await deps.repo.recordDownloadFailure({
    deviationid: f.deviationid,
    kind: f.kind,
    error: message,
    final,
    permanent,
    retryDelaysMs: f.retryDelaysMs ?? RETRY_DELAYS_MS,
    at: new Date(deps.services.now()),
  });
  return { final, permanent, message, failures: after?.failures, nextAttemptAt: after?.nextAttemptAt ?? null };
}
