// The pacer's store on Redis (src/api/pacer-store.ts): every check-and-update in one Lua script
// (src/api/pacer-scripts.ts), wake-ups through a message on <prefix>:pacer:<key>:released (one subscriber
// connection per store, opened on the first wait that needs it, closed with the store's connection). The keys
// are those of every install so far (src/api/pacer.ts lists them), so an install keeps what it learned.
import type { Redis } from "ioredis";
import { ACQUIRE_LUA, RELEASE_LUA } from "./pacer-scripts.ts";
import { listPacerKeys, readPacerStatus, readSavedPace, writeSavedPace } from "./pacer-state.ts";
import type { AcquireAnswer, PacerStore } from "./pacer-store.ts";

// The scripts as commands on the connection.
type PacerCommands = {
  /** [1, paced (1 | 0), "ok"] or [0, waitMs, "blocked" | "busy"]. */
  dvaultPacerAcquire(state: string, holders: string, queue: string, alive: string, ...args: Array<string | number>): Promise<[number, number, string]>;
  dvaultPacerRelease(state: string, holders: string, channel: string, ...args: Array<string | number>): Promise<[string, number]>;
};

/** The store on `redis` under `<prefix>:pacer:` (prefix: config.redisPrefix). */
export function redisPacerStore(redis: Redis, prefix: string): PacerStore {
  // Once per connection: a status read builds a store per call (src/status/redis-state.ts).
  if (!("dvaultPacerAcquire" in redis)) {
    redis.defineCommand("dvaultPacerAcquire", { lua: ACQUIRE_LUA, numberOfKeys: 4 });
    redis.defineCommand("dvaultPacerRelease", { lua: RELEASE_LUA, numberOfKeys: 3 });
  }
  // defineCommand adds methods at run time; this is their shape.
  const commands = redis as unknown as PacerCommands;
  const base = (key: string) => `${prefix}:pacer:${key}`;
  const channelOf = (key: string) => `${base(key)}:released`;

  let listener: (key: string, releaser: string) => void = () => undefined;
  let subscriber: Redis | undefined;
  const subscribed = new Map<string, Promise<void>>();
  const keyOfChannel = new Map<string, string>();
  const closeSubscriber = () => {
    subscriber?.disconnect();
    subscriber = undefined;
    subscribed.clear();
  };

  return {
    async acquire(key, a): Promise<AcquireAnswer> {
      const [granted, value, reason] = await commands.dvaultPacerAcquire(
        ...([base(key), `${base(key)}:holders`, `${base(key)}:queue`, `${base(key)}:waiters`] as const),
        ...[a.now, a.id, a.concurrency, a.lockTtlMs, a.startRate, a.minRate, a.maxRate, a.stateTtlMs, a.pollMs, a.graceMs, a.idleMs],
      );
      if (granted === 1) return { granted: true, paced: value === 1 };
      return { granted: false, waitMs: value, reason: reason === "blocked" ? "blocked" : "busy" };
    },
    async release(key, r) {
      await commands.dvaultPacerRelease(
        ...([base(key), `${base(key)}:holders`, channelOf(key)] as const),
        ...[r.now, r.id, r.outcome, r.acquiredAt, r.minRate, r.maxRate, r.holdMs, r.maxHoldMs, r.jitterFactor, r.stateTtlMs, r.releaser],
        ...[r.cut, r.increase, r.learnAfter, r.paced ? 1 : 0, r.slowStart],
      );
    },
    async leave(key, id) {
      await redis
        .multi()
        .zrem(`${base(key)}:queue`, id)
        .zrem(`${base(key)}:waiters`, id)
        .exec();
    },
    onRelease(fn) {
      listener = fn;
    },
    watch(key) {
      const known = subscribed.get(key);
      if (known) return known;
      if (redis.status === "end") return Promise.reject(new Error("the pacer's Redis connection has ended"));
      if (!subscriber) {
        // Closed with the store's connection, so a process that quits its Redis is not kept alive by this one.
        redis.once("end", closeSubscriber);
        subscriber = redis.duplicate();
        subscriber.on("error", () => undefined);
        subscriber.on("message", (channel: string, releaser: string) => {
          const k = keyOfChannel.get(channel);
          if (k !== undefined) listener(k, releaser);
        });
      }
      keyOfChannel.set(channelOf(key), key);
      const done = subscriber.subscribe(channelOf(key)).then(() => undefined);
      subscribed.set(key, done);
      // A failed subscription is tried again at the next wait; meanwhile waiting is polling.
      done.catch(() => subscribed.delete(key));
      return done;
    },
    status: (key, now) => readPacerStatus(redis, prefix, key, now),
    keys: () => listPacerKeys(redis, prefix),
    saved: (key) => readSavedPace(redis, prefix, key),
    restore: (key, saved) => writeSavedPace(redis, prefix, key, saved),
    async close() {
      redis.off("end", closeSubscriber);
      closeSubscriber();
    },
  };
}
