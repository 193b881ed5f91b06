// Where the pacer (src/api/pacer.ts) keeps a key's shared state: the seam between its algorithm (the loop that
// waits, the permits, the wake-ups) and the engine that decides atomically across processes. Two stores serve
// it: Redis (src/api/pacer-redis-store.ts: the Lua scripts of src/api/pacer-scripts.ts and pub/sub, the keys of
// every install so far) and PostgreSQL alone (src/api/pacer-sql-store.ts over src/db/pacer-rows.ts). One
// compliance suite (test/medium/pacer.test.ts and pacer-pace.test.ts, each test on both; test/medium/
// pacer-stores-agree.test.ts, the same random operations on both) holds them to the same decisions.
import type { PacerStatus, SavedPace } from "./pacer-state.ts";

export type PacerOutcome = "success" | "throttled" | "error";

/** What one acquire attempt sends: ACQUIRE_LUA's arguments (src/api/pacer-scripts.ts). */
export type AcquireRequest = {
  /** The pacer's clock, epoch ms. */
  now: number;
  id: string;
  concurrency: number;
  lockTtlMs: number;
  startRate: number;
  minRate: number;
  maxRate: number;
  stateTtlMs: number;
  pollMs: number;
  graceMs: number;
  idleMs: number;
};

/**
 * Granted (`paced`: the call came as soon as the pace allowed), or not: `blocked` (the pace or a hold: the whole
 * wait is known) or `busy` (every permit held, or earlier waiters come first: a bound on the wait).
 */
export type AcquireAnswer = { granted: true; paced: boolean } | { granted: false; waitMs: number; reason: "blocked" | "busy" };

/** What a release sends: RELEASE_LUA's arguments. */
export type ReleaseRequest = {
  now: number;
  id: string;
  outcome: PacerOutcome;
  acquiredAt: number;
  minRate: number;
  maxRate: number;
  holdMs: number;
  maxHoldMs: number;
  /** 1 + jitter × random, drawn by the pacer. */
  jitterFactor: number;
  stateTtlMs: number;
  /** The releasing pacer, named in the wake-up so it does not wake itself twice. */
  releaser: string;
  cut: number;
  increase: number;
  learnAfter: number;
  paced: boolean;
  slowStart: number;
};

export type PacerStore = {
  /** One check-and-update of the key: a permit, or why not and for how long; atomic across processes. */
  acquire(key: string, request: AcquireRequest): Promise<AcquireAnswer>;
  /** Drops the permit, learns from its outcome and wakes the key's waiters in every process. */
  release(key: string, request: ReleaseRequest): Promise<void>;
  /** Takes a waiter that gives up out of the key's queue, so the next one need not wait for its place to expire. */
  leave(key: string, id: string): Promise<void>;
  /** Registers the one listener of releases (the key, and the releaser named in ReleaseRequest). */
  onRelease(listener: (key: string, releaser: string) => void): void;
  /**
   * Makes sure releases of `key` in other processes reach the listener; idempotent, cheap when already so. Resolves
   * once the server listens. A failure only means waiting by polling.
   */
  watch(key: string): Promise<void>;
  /** The key's state as stored; `now` is the pacer's clock. */
  status(key: string, now: number): Promise<PacerStatus>;
  /** The keys with state, sorted. */
  keys(): Promise<string[]>;
  /** The key's state and its time to live; undefined when it has none. */
  saved(key: string): Promise<SavedPace | undefined>;
  /** Replaces the key's state with `saved` (its permits and waiters are left as they are). */
  restore(key: string, saved: SavedPace): Promise<void>;
  /** Closes the wake-up connection (not the connection or pool the store was given). */
  close(): Promise<void>;
};
