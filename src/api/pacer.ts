// The only throttle in dvault: an adaptive pace per identity, its state in a store shared by every process
// (workers, CLI, scheduler): Redis, or PostgreSQL alone (src/api/pacer-store.ts, DVAULT_ENGINE). Keyed by
// pacerKey(identity) — client id + user, never the access token — because the service's limits are per
// client, per user and per IP velocity filters that keep blocking while you keep hammering, and publish no
// numbers (docs/service-behaviour.md#rate-limits). Every check-and-update is one
// atomic step of the store (a Lua script, src/api/pacer-scripts.ts; in PostgreSQL its translation,
// src/api/pacer-rules.ts, on the key's locked row), so two processes cannot both decide a key is free.
//
// Per key in Redis (src/api/pacer-redis-store.ts; PostgreSQL keeps the same in one row of dvault_pacer.pace):
//   <prefix>:pacer:<key>          hash  rate (requests/s now), learned (the safe rate a new run starts at),
//                                       refusedRate, cutRate, blockedUntil, holdMs, workedHold, inHold,
//                                       throttledAt, lastSend, clean, lostMs, and the throughput window
//                                       since the last cut: winCount, winBusy (epoch ms, ms)
//   <prefix>:pacer:<key>:holders  zset  permit id → lock expiry; expired holders are dropped on every
//                                       acquire, so a process killed mid-request stalls others ≤ lockTtlMs
//   <prefix>:pacer:<key>:queue    zset  waiting permit id → arrival (first come, first served)
//   <prefix>:pacer:<key>:waiters  zset  waiting permit id → expiry (a dead waiter loses its place)
// The hash lives stateTtlMs (30 days) past its last use, so what a key learned outlasts runs; the holders
// 2 × lockTtlMs; the queue until its last waiter is due back.
//
// The pace (AIMD, as TCP's congestion control): request starts are 1/rate apart. A key starts at its learned
// rate, else startRate, within [minRate, maxRate]; a key idle for idleMs starts so again (a new run). While
// calls succeed the rate rises: × slowStart (2) per call until the key's first cut ever (slow start), then
// additively; only calls that came as soon as the pace allowed raise it (a pace nobody uses proves nothing). A throttle answer (429, CDN block) holds the key, 1 s then 2 s: lone refusals (faults) cost
// their hold and nothing else. A third refusal in a row (the second, on a key whose filter needed long
// holds before) is a filter that has not decayed: it cuts the rate to the lower of rate × cut and the
// throughput the filter let through since the last cut, and the hold doubles while refusals continue (the
// filter decays only while left alone); the hold that finally worked starts the next episode. The time
// held is summed in lostMs.
//
// Waiting: a wait for the pace or a hold is exact (the Lua script says how long). A wait because every
// permit is held, or because earlier waiters come first, ends early when a permit of the key is released:
// in this process directly, in the others through the store's message (a Redis message on
// <prefix>:pacer:<key>:released, a PostgreSQL NOTIFY; one connection per store, opened on the first such
// wait). pollMs is only the fallback, for a holder that died or a message that was lost.
import { setTimeout as sleepTimer } from "node:timers/promises";
import { DEFAULT_API_RATE } from "../config-defaults.ts";
import { ThrottleDelayError } from "./errors.ts";
import type { PacerStatus, SavedPace } from "./pacer-state.ts";
import type { PacerOutcome, PacerStore } from "./pacer-store.ts";

export type { PacerOutcome, PacerStore };

export type PacerClock = {
  /** Epoch ms. Every process sharing a key must agree on it (one machine, or NTP-synced hosts). */
  now(): number;
  /** Waits `ms` by this clock; a fake clock advances itself instead of sleeping. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
};

export const realClock: PacerClock = {
  now: () => Date.now(),
  async sleep(ms, signal) {
    try {
      await sleepTimer(ms, undefined, signal ? { signal } : undefined);
    } catch (err) {
      // Surface the caller's abort reason, as signal.throwIfAborted() does, not a generic AbortError.
      if (signal?.aborted) signal.throwIfAborted();
      throw err;
    }
  },
};

/** Defaults of the pace (requests per second), also DVAULT_API_RATE_START / _MIN / _MAX (src/config.ts). */
export const DEFAULT_RATES = DEFAULT_API_RATE;

export type PacerOptions = {
  /** Where the keys' state lives (src/api/pacer-redis-store.ts, src/api/pacer-sql-store.ts); the pacer owns it from now on. */
  store: PacerStore;
  clock?: PacerClock;
  /** Requests in flight per key across all processes (1 = strictly sequential, docs/service-behaviour.md#rate-limits). */
  concurrency?: number;
  /** A permit not released within this long is dropped (its holder died). Must exceed the request timeout. */
  lockTtlMs?: number;
  /** Requests per second of a key that has learned nothing yet. */
  startRate?: number;
  /** The pace never drops below this (requests per second) … */
  minRate?: number;
  /** … nor rises above this. */
  maxRate?: number;
  /** Factor of a cut (0.5: half), unless the throughput measured since the last cut is lower. */
  cut?: number;
  /** Additive increase after the first cut: this share of the last cut rate, per second of calls. */
  increase?: number;
  /** Factor by which each paced success raises the rate until the key's first cut ever (slow start). */
  slowStart?: number;
  /** Successes in a row after which the rate counts as learned (safe), before the key's first cut. */
  learnAfter?: number;
  /** First hold after a refusal (DA's docs: back off 1 s); doubled while refusals in a row continue. */
  holdMs?: number;
  /** Hold cap. */
  maxHoldMs?: number;
  /** Random extra hold, as a fraction (0.2 → up to +20 %). */
  jitter?: number;
  /** A key unused this long starts again at its learned rate (a new run). */
  idleMs?: number;
  /** How often a waiter re-checks a busy key (all permits held). */
  pollMs?: number;
  /** How long a key's state (what it learned included) is kept after its last use. */
  stateTtlMs?: number;
  /** Source of jitter, injectable for deterministic tests. */
  random?: () => number;
};

export type AcquireOptions = {
  /** Longest to wait; a longer wait throws ThrottleDelayError carrying it. Default 10 s. */
  maxWaitMs?: number;
  signal?: AbortSignal;
  /** Named in a ThrottleDelayError. */
  operation?: string;
  account?: string;
};

export type Permit = {
  readonly key: string;
  readonly id: string;
  /** Pacer-clock time the permit was granted. */
  readonly acquiredAt: number;
  /** How long acquire() waited. */
  readonly waitedMs: number;
  /** Idempotent: only the first call counts. */
  release(outcome: PacerOutcome): Promise<void>;
};

export type Pacer = {
  acquire(key: string, options?: AcquireOptions): Promise<Permit>;
  status(key: string): Promise<PacerStatus>;
  /** The keys with state in the store (status, metrics). */
  keys(): Promise<string[]>;
  /** A key's learned state as stored, and its replacement: `dvault engine migrate` carries it to the other engine. */
  saved(key: string): Promise<SavedPace | undefined>;
  restore(key: string, saved: SavedPace): Promise<void>;
  readonly clock: PacerClock;
  /** Closes the store's wake-up connection (Redis: also closed when the store's connection ends). */
  close(): Promise<void>;
};

/** What the pacer reads and writes of its store without pacing (status, metrics, `dvault engine migrate`). */
function storeAsItIs(store: PacerStore): Pick<Pacer, "keys" | "saved" | "restore"> {
  return { keys: () => store.keys(), saved: (key) => store.saved(key), restore: (key, saved) => store.restore(key, saved) };
}

let permitSeq = 0;
let pacerSeq = 0;

export function createPacer(options: PacerOptions): Pacer {
  const clock = options.clock ?? realClock;
  const concurrency = Math.max(1, Math.floor(options.concurrency ?? 1));
  const lockTtlMs = options.lockTtlMs ?? 60_000;
  const minRate = positive(options.minRate ?? DEFAULT_RATES.min, "minRate");
  const maxRate = Math.max(minRate, positive(options.maxRate ?? DEFAULT_RATES.max, "maxRate"));
  const startRate = Math.min(maxRate, Math.max(minRate, positive(options.startRate ?? DEFAULT_RATES.start, "startRate")));
  const cut = Math.min(0.95, Math.max(0.05, options.cut ?? 0.5));
  const increase = Math.max(0, options.increase ?? 0.003);
  const learnAfter = Math.max(1, Math.floor(options.learnAfter ?? 20));
  const slowStart = Math.max(1, options.slowStart ?? 2);
  const holdMs = Math.max(1, options.holdMs ?? 1000);
  const maxHoldMs = Math.max(holdMs, options.maxHoldMs ?? 30 * 60_000);
  const jitter = options.jitter ?? 0.2;
  const idleMs = options.idleMs ?? 5 * 60_000;
  const pollMs = Math.max(1, options.pollMs ?? 100);
  // How long a waiter's place in the queue outlives its expected return (a dead waiter blocks no longer).
  const graceMs = 2 * pollMs + 500;
  const stateTtlMs = options.stateTtlMs ?? 30 * 24 * 3600_000;
  const random = options.random ?? Math.random;

  const store = options.store;

  // ---- wake-ups: a busy waiter sleeps until a permit of its key is released (or pollMs passes) ----
  const instance = `${process.pid}-${++pacerSeq}-${Math.floor(random() * 1e9).toString(36)}`;
  const sleepers = new Map<string, Set<() => void>>();
  /** Releases seen per key: a release between a waiter's check and its sleep must not be missed. */
  const releases = new Map<string, number>();
  const wake = (key: string) => {
    releases.set(key, (releases.get(key) ?? 0) + 1);
    const set = sleepers.get(key);
    if (!set) return;
    sleepers.delete(key);
    for (const fn of set) fn();
  };
  store.onRelease((key, releaser) => {
    if (releaser !== instance) wake(key);
  });
  /** Sleeps up to `ms`, returning early when a permit of `key` is released. */
  async function sleepUntilRelease(key: string, ms: number, signal: AbortSignal | undefined, seen: number): Promise<void> {
    // A failed subscription only means waiting by polling, as before.
    store.watch(key).catch(() => undefined);
    if ((releases.get(key) ?? 0) !== seen) return;
    const woken = new AbortController();
    const onWake = () => woken.abort();
    let set = sleepers.get(key);
    if (!set) sleepers.set(key, (set = new Set()));
    set.add(onWake);
    try {
      await clock.sleep(ms, signal ? AbortSignal.any([signal, woken.signal]) : woken.signal);
    } catch (err) {
      if (signal?.aborted || !woken.signal.aborted) throw err;
    } finally {
      sleepers.get(key)?.delete(onWake);
    }
  }

  async function acquire(key: string, acquireOptions: AcquireOptions = {}): Promise<Permit> {
    const { signal } = acquireOptions;
    const maxWaitMs = acquireOptions.maxWaitMs ?? 10_000;
    const start = clock.now();
    const deadline = start + maxWaitMs;
    const id = `${process.pid}-${++permitSeq}-${Math.floor(random() * 1e9).toString(36)}`;
    let attempt = 0;
    try {
      for (;;) {
        signal?.throwIfAborted();
        const now = clock.now();
        const seen = releases.get(key) ?? 0;
        const answer = await store.acquire(key, { now, id, concurrency, lockTtlMs, startRate, minRate, maxRate, stateTtlMs, pollMs, graceMs, idleMs });
        // Granted, `paced` says whether the call came as soon as the pace allowed or later.
        // waitedMs counts only real waits (a clock tick between two now() calls is not one).
        if (answer.granted) return makePermit(key, id, now, attempt === 0 ? 0 : now - start, answer.paced);
        const { waitMs, reason } = answer;
        attempt++;
        if (reason === "blocked") {
          // The whole wait is known: refuse at once rather than wait part of it and then refuse.
          if (now + waitMs > deadline) throw delayError(key, waitMs, now, acquireOptions);
          await clock.sleep(waitMs, signal);
        } else {
          // Busy: every permit is held, or earlier waiters come first. Poll (bounded) until it is our turn.
          if (now >= deadline) throw delayError(key, Math.max(pollMs, Math.min(waitMs, lockTtlMs)), now, acquireOptions);
          await sleepUntilRelease(key, Math.max(1, Math.min(pollMs, waitMs, deadline - now)), signal, seen);
        }
      }
    } catch (err) {
      // Leave the queue so the next waiter does not wait for this place to expire.
      await store.leave(key, id).catch(() => undefined);
      throw err;
    }
  }

  function delayError(key: string, waitMs: number, now: number, o: AcquireOptions): ThrottleDelayError {
    return new ThrottleDelayError({ operation: o.operation ?? "api", account: o.account, waitMs, pacerKey: key, retryAt: now + waitMs });
  }

  function makePermit(key: string, id: string, acquiredAt: number, waitedMs: number, paced: boolean): Permit {
    let released = false;
    return {
      key,
      id,
      acquiredAt,
      waitedMs,
      async release(outcome: PacerOutcome) {
        if (released) return;
        released = true;
        await store.release(key, {
          now: clock.now(),
          id,
          outcome,
          acquiredAt,
          minRate,
          maxRate,
          holdMs,
          maxHoldMs,
          jitterFactor: 1 + jitter * random(),
          stateTtlMs,
          releaser: instance,
          cut,
          increase,
          learnAfter,
          paced,
          slowStart,
        });
        wake(key);
      },
    };
  }

  return {
    acquire,
    status: (key) => store.status(key, clock.now()),
    ...storeAsItIs(store),
    clock,
    close: () => store.close(),
  };
}

function positive(n: number, name: string): number {
  if (!Number.isFinite(n) || n <= 0) throw new RangeError(`pacer ${name} must be a positive number of requests per second, got ${n}`);
  return n;
}
