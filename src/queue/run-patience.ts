// How long a `--once` run (`sync --once`, `download --once`) keeps trying what fails for a reason that passes:
// a throttle, a CDN block, a 5xx, a reset, a timeout. A person is waiting for the run to finish, so a transient
// failure is tried again in the run, after a backoff that doubles from `baseMs` up to `capMs`, until the run's
// patience is spent: per item (`itemMs` since that item first failed) and run-wide (`runMs` with no success at
// all — the service is down, or refuses everything). Only what still fails then is left to the long-term
// schedule (15 min → daily, src/downloads/retry.ts), as the daemon leaves it. Settings: DVAULT_RUN_ITEM_PATIENCE,
// DVAULT_RUN_PATIENCE, DVAULT_RUN_RETRY_DELAY (src/config.ts).
import type { JobOutcomeFields } from "./job-definition.ts";

export type RunPatienceSettings = {
  /** How long one item is tried again after its first failure in this run. */
  itemMs: number;
  /** How long the run goes on with no success at all before it gives up on what still fails. */
  runMs: number;
  /** The first backoff; each further failure of the same item doubles it, up to `capMs`. */
  baseMs: number;
  capMs?: number;
};

/** The default ceiling of one backoff: long enough for a velocity filter to decay, short for a person. */
const DEFAULT_CAP_MS = 30_000;

/** Failures of one item after which a run gives it up even while it seems to move (see progressed()). */
const MAX_FAILURES = 20;

type ItemState = { firstFailureAt: number; failures: number };

/** A decision on a transient failure: try again after `waitMs`, or give up (the item keeps its failure). */
export type PatienceDecision = { retry: true; waitMs: number } | { retry: false; reason: string };

export class RunPatience {
  private readonly items = new Map<string, ItemState>();
  private lastSuccessAt: number;

  constructor(
    readonly settings: RunPatienceSettings,
    private readonly now: () => number = Date.now,
  ) {
    this.lastSuccessAt = now();
  }

  /** Something in the run succeeded (a file stored, a source synced): the run-wide patience starts again. */
  succeeded(key?: string): void {
    this.lastSuccessAt = this.now();
    if (key !== undefined) this.items.delete(key);
  }

  /**
   * An item moved on without finishing (a source saved a page): the run-wide patience starts again, and so does
   * the item's own, so a long source that keeps going is not given up for a failure minutes apart from the last.
   * Its failure count stays: an item that only seems to move (re-reading its first page, then failing at the
   * same place) still ends after MAX_FAILURES.
   */
  progressed(key: string): void {
    this.lastSuccessAt = this.now();
    const state = this.items.get(key);
    if (state) state.firstFailureAt = this.lastSuccessAt;
  }

  /** True when the run has gone `runMs` without any success: what fails from now on is left to the schedule. */
  spent(): boolean {
    return this.now() - this.lastSuccessAt >= this.settings.runMs;
  }

  /**
   * An item failed for a reason that passes. `atLeastMs` is a wait the failure itself names (a throttle's
   * retry time): the backoff is never shorter. The wait never goes past the item's or the run's patience by more
   * than the one last try.
   */
  failed(key: string, atLeastMs = 0): PatienceDecision {
    const at = this.now();
    const state = this.items.get(key) ?? { firstFailureAt: at, failures: 0 };
    state.failures++;
    this.items.set(key, state);
    if (this.spent()) return { retry: false, reason: `nothing succeeded for ${seconds(this.settings.runMs)} (DVAULT_RUN_PATIENCE)` };
    if (state.failures > MAX_FAILURES) return { retry: false, reason: `failed ${state.failures} times in this run` };
    if (at - state.firstFailureAt >= this.settings.itemMs)
      return { retry: false, reason: `still failing after ${seconds(this.settings.itemMs)} of tries (DVAULT_RUN_ITEM_PATIENCE)` };
    const cap = this.settings.capMs ?? Math.max(DEFAULT_CAP_MS, this.settings.baseMs);
    const backoff = Math.min(cap, this.settings.baseMs * 2 ** (state.failures - 1));
    const left = Math.min(state.firstFailureAt + this.settings.itemMs, this.lastSuccessAt + this.settings.runMs) - at;
    return { retry: true, waitMs: Math.round(Math.max(atLeastMs, Math.min(backoff, Math.max(0, left)))) };
  }

  /** Failures so far of one item in this run (0 when it never failed, or succeeded since). */
  failuresOf(key: string): number {
    return this.items.get(key)?.failures ?? 0;
  }
}

/**
 * Thrown by a job of a `--once` run to be tried again after `waitMs` without spending an attempt: the worker host
 * moves it to delayed (src/queue/worker-host.ts) and run-now waits for it (src/queue/run-now.ts).
 */
export class RetryInRunError extends Error implements JobOutcomeFields {
  readonly jobOutcome = "delay" as const;
  readonly delayReason = "retry" as const;
  readonly retryAfterMs: number;
  readonly delayKey: string;

  constructor(waitMs: number, key: string, cause: unknown) {
    super(`trying again in ${seconds(waitMs)}: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = "RetryInRunError";
    this.retryAfterMs = waitMs;
    this.delayKey = `run-retry:${key}`;
  }
}

function seconds(ms: number): string {
  return ms >= 120_000 ? `${Math.round(ms / 60_000)} min` : `${Math.round(ms / 100) / 10} s`;
}
