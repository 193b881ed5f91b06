// The only throttle in dvault: per-identity pacing state in Redis, shared by every process (workers, CLI,
// scheduler). Keyed by pacerKey(identity) — client id + user, never the access token — because the
// service's limits are per client, per user and per IP velocity filters that keep blocking while you keep
// hammering (docs/service-behaviour.md#rate-limits). Every check-and-update runs in one Lua script, so two
// processes cannot both decide a key is free.
//
// Per key:
//   <prefix>:pacer:<key>          hash  blockedUntil, level, successes, lastSend, throttledAt (epoch ms)
//   <prefix>:pacer:<key>:holders  zset  permit id → lock expiry; expired holders are dropped on every
//                                       acquire, so a process killed mid-request stalls others ≤ lockTtlMs
//   <prefix>:pacer:<key>:queue    zset  waiting permit id → arrival (first come, first served)
//   <prefix>:pacer:<key>:waiters  zset  waiting permit id → expiry (a dead waiter loses its place)
// All keys carry TTLs (the hash: remaining block + stateTtlMs; holders: 2 × lockTtlMs; the queue: until
// its last waiter is due back).
//
// Waiting: a wait for the spacing or a backoff is exact (the Lua script says how long). A wait because every
// permit is held, or because earlier waiters come first, ends early when a permit of the key is released:
// in this process directly, in the others through a Redis message on <prefix>:pacer:<key>:released (one
// subscriber connection per pacer, opened on the first such wait). pollMs is only the fallback, for a
// holder that died or a message that was lost; without the wake-up a waiter that lost a race for the
// key slept a whole poll while the key stood idle, which cost a fifth of the budget with 50 ms spacing.
//
// Backoff: each throttle signal raises `level` and blocks the key for base·2^(level−1) (1 s, 2 s, 4 s …,
// capped at maxDelayMs) plus jitter. While level > 0 the same delay is also the minimum spacing between
// requests (the filter must decay, docs/service-behaviour.md#rate-limits); every `relaxAfter` successes
// lower the level by one, halving that delay, until the key is back to minSpacingMs.
import { setTimeout as sleepTimer } from "node:timers/promises";
import type { Redis } from "ioredis";
import { ThrottleDelayError } from "./errors.ts";
import { ACQUIRE_LUA, RELEASE_LUA } from "./pacer-scripts.ts";

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

/**
 * A polite minimum spacing for the real service: one request per second per key. No numbers are published;
 * users report blocks after ~18 requests in 6 s and gallery-dl keeps ≥ 2 s once throttled
 * (docs/service-behaviour.md#rate-limits). The default (0) suits the simulator and tests; production
 * config should pass this or more.
 */
export const REAL_SERVICE_MIN_SPACING_MS = 1000;

export type PacerOptions = {
  redis: Redis;
  /** config.redisPrefix; keys live under `<prefix>:pacer:`. */
  prefix: string;
  clock?: PacerClock;
  /** Requests in flight per key across all processes (1 = strictly sequential, docs/service-behaviour.md#rate-limits). */
  concurrency?: number;
  /** A permit not released within this long is dropped (its holder died). Must exceed the request timeout. */
  lockTtlMs?: number;
  /** Minimum time between two request starts on a key; see REAL_SERVICE_MIN_SPACING_MS. */
  minSpacingMs?: number;
  /** First backoff step (DA's docs: 1 s). */
  baseDelayMs?: number;
  /** Backoff cap. */
  maxDelayMs?: number;
  /** Random extra wait, as a fraction of the delay (0.2 → up to +20 %). */
  jitter?: number;
  /** Successes needed to lower the level by one. */
  relaxAfter?: number;
  /** How often a waiter re-checks a busy key (all permits held). */
  pollMs?: number;
  /** How long an idle key's state is kept. */
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

export type PacerStatus = {
  key: string;
  level: number;
  /** Epoch ms until which nobody may send with this key (0 when never blocked). */
  blockedUntil: number;
  /** Time until the next request may start: the block or the spacing, whichever is later. */
  waitMs: number;
  /** The backoff delay at the current level (also the spacing while level > 0). */
  delayMs: number;
  successes: number;
  /** Permits currently held (live locks). */
  holders: number;
  /** Requests queued for the key across all processes. */
  waiters: number;
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
  dvaultPacerAcquire(state: string, holders: string, queue: string, alive: string, ...args: Array<string | number>): Promise<[number, number, string]>;
  dvaultPacerRelease(state: string, holders: string, channel: string, ...args: Array<string | number>): Promise<[number, number]>;
};

let permitSeq = 0;
let pacerSeq = 0;

export function createPacer(options: PacerOptions): Pacer {
  const clock = options.clock ?? realClock;
  const concurrency = Math.max(1, Math.floor(options.concurrency ?? 1));
  const lockTtlMs = options.lockTtlMs ?? 60_000;
  const minSpacingMs = options.minSpacingMs ?? 0;
  const baseDelayMs = options.baseDelayMs ?? 1000;
  const maxDelayMs = Math.max(baseDelayMs, options.maxDelayMs ?? 5 * 60_000);
  const jitter = options.jitter ?? 0.2;
  const relaxAfter = Math.max(1, options.relaxAfter ?? 5);
  const pollMs = Math.max(1, options.pollMs ?? 100);
  // How long a waiter's place in the queue outlives its expected return (a dead waiter blocks no longer).
  const graceMs = 2 * pollMs + 500;
  const stateTtlMs = options.stateTtlMs ?? 24 * 3600_000;
  const random = options.random ?? Math.random;
  // The first level whose delay reaches the cap; escalating further would only grow a number.
  const maxLevel = 1 + Math.ceil(Math.log2(maxDelayMs / baseDelayMs));

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
  const delayAt = (level: number) => (level > 0 ? Math.min(maxDelayMs, baseDelayMs * 2 ** (level - 1)) : 0);

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
          minSpacingMs,
          baseDelayMs,
          maxDelayMs,
          stateTtlMs,
          pollMs,
          graceMs,
        );
        // waitedMs counts only real waits (a clock tick between two now() calls is not one).
        if (granted === 1) return makePermit(key, id, now, attempt === 0 ? 0 : now - start);
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

  function makePermit(key: string, id: string, acquiredAt: number, waitedMs: number): Permit {
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
          baseDelayMs,
          maxDelayMs,
          maxLevel,
          1 + jitter * random(),
          relaxAfter,
          stateTtlMs,
          instance,
        );
        wake(key);
      },
    };
  }

  async function status(key: string): Promise<PacerStatus> {
    const now = clock.now();
    const [state, holders, waiters] = await Promise.all([
      redis.hmget(stateKey(key), "blockedUntil", "level", "successes", "lastSend"),
      redis.zcount(holdersKey(key), `(${now}`, "+inf"),
      redis.zcount(aliveKey(key), `(${now}`, "+inf"),
    ]);
    const [blocked, lvl, succ, last] = state.map((v) => Number(v ?? 0));
    const blockedUntil = blocked ?? 0;
    const level = lvl ?? 0;
    const delayMs = delayAt(level);
    const spacing = Math.max(minSpacingMs, delayMs);
    const nextAt = Math.max(blockedUntil, (last ?? 0) + spacing);
    return { key, level, blockedUntil, waitMs: Math.max(0, nextAt - now), delayMs, successes: succ ?? 0, holders, waiters };
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
