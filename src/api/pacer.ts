// The only throttle in dvault: an adaptive pace per identity, its state in Redis, shared by every process
// (workers, CLI, scheduler). Keyed by pacerKey(identity) — client id + user, never the access token — because
// the service's limits are per client, per user and per IP velocity filters that keep blocking while you keep
// hammering, and publish no numbers (docs/service-behaviour.md#rate-limits). Every check-and-update runs in
// one Lua script (src/api/pacer-scripts.ts), so two processes cannot both decide a key is free.
//
// Per key:
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
// in this process directly, in the others through a Redis message on <prefix>:pacer:<key>:released (one
// subscriber connection per pacer, opened on the first such wait). pollMs is only the fallback, for a
// holder that died or a message that was lost.
import { setTimeout as sleepTimer } from "node:timers/promises";
import type { Redis } from "ioredis";
import { DEFAULT_API_RATE } from "../config-defaults.ts";
import { ThrottleDelayError } from "./errors.ts";
import { ACQUIRE_LUA, RELEASE_LUA } from "./pacer-scripts.ts";
import { type PacerStatus, readPacerStatus } from "./pacer-state.ts";

export type PacerOutcome = "success" | "throttled" | "error";

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
  redis: Redis;
  /** config.redisPrefix; keys live under `<prefix>:pacer:`. */
  prefix: string;
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
  readonly clock: PacerClock;
  /** Closes the wake-up subscription (also closed when the pacer's Redis connection ends). */
  close(): Promise<void>;
};

// The scripts (src/api/pacer-scripts.ts) as commands on the connection.
type PacerCommands = {
  /** [1, paced (1 | 0), "ok"] or [0, waitMs, "blocked" | "busy"]. */
  dvaultPacerAcquire(state: string, holders: string, queue: string, alive: string, ...args: Array<string | number>): Promise<[number, number, string]>;
  dvaultPacerRelease(state: string, holders: string, channel: string, ...args: Array<string | number>): Promise<[string, number]>;
};

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

  const redis = options.redis;
  redis.defineCommand("dvaultPacerAcquire", { lua: ACQUIRE_LUA, numberOfKeys: 4 });
  redis.defineCommand("dvaultPacerRelease", { lua: RELEASE_LUA, numberOfKeys: 3 });
  // defineCommand adds methods at run time; this is their shape.
  const commands = redis as unknown as PacerCommands;

  const stateKey = (key: string) => `${options.prefix}:pacer:${key}`;
  const holdersKey = (key: string) => `${options.prefix}:pacer:${key}:holders`;
  const queueKey = (key: string) => `${options.prefix}:pacer:${key}:queue`;
  const aliveKey = (key: string) => `${options.prefix}:pacer:${key}:waiters`;
  const channelOf = (key: string) => `${options.prefix}:pacer:${key}:released`;

  // ---- wake-ups: a busy waiter sleeps until a permit of its key is released (or pollMs passes) ----
  const instance = `${process.pid}-${++pacerSeq}-${Math.floor(random() * 1e9).toString(36)}`;
  const sleepers = new Map<string, Set<() => void>>();
  /** Releases seen per key: a release between a waiter's check and its sleep must not be missed. */
  const releases = new Map<string, number>();
  let subscriber: Redis | undefined;
  const subscribed = new Set<string>();
  const keyOfChannel = new Map<string, string>();
  const wake = (key: string) => {
    releases.set(key, (releases.get(key) ?? 0) + 1);
    const set = sleepers.get(key);
    if (!set) return;
    sleepers.delete(key);
    for (const fn of set) fn();
  };
  const closeSubscriber = () => {
    subscriber?.disconnect();
    subscriber = undefined;
    subscribed.clear();
  };
  function subscribe(key: string): void {
    if (subscribed.has(key) || redis.status === "end") return;
    subscribed.add(key);
    if (!subscriber) {
      // Closed with the pacer's connection, so a process that quits its Redis is not kept alive by this one.
      redis.once("end", closeSubscriber);
      subscriber = redis.duplicate();
      subscriber.on("error", () => undefined);
      subscriber.on("message", (channel: string, releaser: string) => {
        const k = keyOfChannel.get(channel);
        if (k !== undefined && releaser !== instance) wake(k);
      });
    }
    keyOfChannel.set(channelOf(key), key);
    // A failed subscription only means waiting by polling, as before.
    subscriber.subscribe(channelOf(key)).catch(() => subscribed.delete(key));
  }
  /** Sleeps up to `ms`, returning early when a permit of `key` is released. */
  async function sleepUntilRelease(key: string, ms: number, signal: AbortSignal | undefined, seen: number): Promise<void> {
    subscribe(key);
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
    const keys = [stateKey(key), holdersKey(key), queueKey(key), aliveKey(key)] as const;
    let attempt = 0;
    try {
      for (;;) {
        signal?.throwIfAborted();
        const now = clock.now();
        const seen = releases.get(key) ?? 0;
        const [granted, waitMs, reason] = await commands.dvaultPacerAcquire(
          ...keys,
          now,
          id,
          concurrency,
          lockTtlMs,
          startRate,
          minRate,
          maxRate,
          stateTtlMs,
          pollMs,
          graceMs,
          idleMs,
        );
        // Granted, the second value says whether the call came as soon as the pace allowed (1) or later (0).
        // waitedMs counts only real waits (a clock tick between two now() calls is not one).
        if (granted === 1) return makePermit(key, id, now, attempt === 0 ? 0 : now - start, waitMs === 1);
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
      await redis
        .multi()
        .zrem(keys[2], id)
        .zrem(keys[3], id)
        .exec()
        .catch(() => undefined);
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
        await commands.dvaultPacerRelease(
          stateKey(key),
          holdersKey(key),
          channelOf(key),
          clock.now(),
          id,
          outcome,
          acquiredAt,
          minRate,
          maxRate,
          holdMs,
          maxHoldMs,
          1 + jitter * random(),
          stateTtlMs,
          instance,
          cut,
          increase,
          learnAfter,
          paced ? 1 : 0,
          slowStart,
        );
        wake(key);
      },
    };
  }

  async function status(key: string): Promise<PacerStatus> {
    return readPacerStatus(redis, options.prefix, key, clock.now());
  }

  return {
    acquire,
    status,
    clock,
    async close() {
      redis.off("end", closeSubscriber);
      closeSubscriber();
    },
  };
}

function positive(n: number, name: string): number {
  if (!Number.isFinite(n) || n <= 0) throw new RangeError(`pacer ${name} must be a positive number of requests per second, got ${n}`);
  return n;
}
