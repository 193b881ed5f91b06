// dvault's one Redis lock, with an expiry, renewed while held: keeps two processes from syncing the same source,
// downloading the same file or refreshing the same token at once, frees itself if its holder is killed, and
// survives a reconnect (below). A foundation module, so that every layer, the API client included, uses it.
import { randomBytes } from "node:crypto";
import type { Redis } from "ioredis";

const RELEASE = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`;
const EXTEND = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pexpire", KEYS[1], ARGV[2]) else return 0 end`;

export type HeldLock = {
  key: string;
  /** True once released; false when Redis could not be reached within `patienceMs` (default: the TTL) and the TTL frees it. */
  release(options?: { patienceMs?: number }): Promise<boolean>;
  readonly lost: boolean;
};

/**
 * `holder` (src/queue/holder.ts) is written into the lock, so that a lock left by a process proven dead
 * can be broken at once (breakLockOfDeadHolder) instead of waiting out its TTL.
 */
export async function acquireLock(redis: Redis, key: string, ttlMs = 30_000, { holder }: { holder?: string } = {}): Promise<HeldLock | undefined> {
  const owner = `${holder ? `${holder}|` : ""}${randomBytes(16).toString("hex")}`;
  const ok = await redis.set(key, owner, "PX", ttlMs, "NX");
  // ioredis re-sends a command whose reply a reconnect lost: a SET that did go through the first time then
  // answers "exists" for our own lock. The owner token is unique to this call, so a match means we hold it.
  if (ok !== "OK" && (await redis.get(key)) !== owner) return undefined;
  let lost = false;
  const timer = setInterval(
    async () => {
      try {
        if ((await redis.eval(EXTEND, 1, key, owner, String(ttlMs))) !== 1) lost = true;
      } catch {
        /* the next renewal or the TTL decides */
      }
    },
    Math.max(1000, Math.floor(ttlMs / 3)),
  );
  timer.unref();
  return {
    key,
    get lost() {
      return lost;
    },
    async release({ patienceMs = ttlMs }: { patienceMs?: number } = {}) {
      clearInterval(timer);
      // A release lost to a Redis restart would leave the lock to its TTL, and the holder's own retry would
      // find it "held by another process": retry until it goes through, the caller's patience is spent, or
      // the lock has expired anyway.
      const deadline = Date.now() + Math.min(ttlMs, patienceMs);
      for (let waitMs = 50; ; waitMs = Math.min(waitMs * 2, 1000)) {
        try {
          await redis.eval(RELEASE, 1, key, owner);
          return true;
        } catch {
          if (Date.now() + waitMs >= deadline) return false;
          await new Promise((resolve) => setTimeout(resolve, waitMs));
        }
      }
    },
  };
}

/** The holder named in a lock and its exact token; undefined when the lock is free or names no holder. */
export async function lockHolder(redis: Redis, key: string): Promise<{ holder: string; token: string } | undefined> {
  const token = await redis.get(key);
  const bar = token?.lastIndexOf("|") ?? -1;
  return token && bar > 0 ? { holder: token.slice(0, bar), token } : undefined;
}

/** Deletes the lock only if it still holds exactly `token`. */
export async function dropLock(redis: Redis, key: string, token: string): Promise<boolean> {
  return (await redis.eval(RELEASE, 1, key, token)) === 1;
}
