// dvault's one lock, with an expiry, renewed while held: keeps two processes from syncing the same source,
// downloading the same file or refreshing the same token at once, frees itself if its holder is killed, and
// survives a reconnect (below). It lives in the coordination store (src/coord/coordinator.ts: Redis or PostgreSQL),
// a foundation module, so that every layer, the API client included, uses it.
import { randomBytes } from "node:crypto";
import type { Coordinator } from "./coordinator.ts";

export type HeldLock = {
  key: string;
  /** True once released; false when the store could not be reached within `patienceMs` (default: the TTL) and the TTL frees it. */
  release(options?: { patienceMs?: number }): Promise<boolean>;
  readonly lost: boolean;
  /**
   * Whether this holder holds the lock now (renewing it when so), asked of the store: false once it expired and
   * another took it, which a process paused past the TTL (a machine asleep) learns only here. A store that cannot be
   * reached throws.
   */
  confirm(): Promise<boolean>;
};

/**
 * `holder` (src/queue/holder.ts) is written into the lock, so that a lock left by a process proven dead
 * can be broken at once (breakLockOfDeadHolder) instead of waiting out its TTL.
 */
export async function acquireLock(coord: Coordinator, key: string, ttlMs = 30_000, { holder }: { holder?: string } = {}): Promise<HeldLock | undefined> {
  const owner = `${holder ? `${holder}|` : ""}${randomBytes(16).toString("hex")}`;
  const ok = await coord.putIfAbsent(key, owner, { ttlMs });
  // ioredis re-sends a command whose reply a reconnect lost: a SET that did go through the first time then
  // answers "exists" for our own lock. The owner token is unique to this call, so a match means we hold it.
  if (!ok && (await coord.get(key)) !== owner) return undefined;
  let lost = false;
  const timer = setInterval(
    async () => {
      try {
        if (!(await coord.extendIfEquals(key, owner, ttlMs))) lost = true;
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
    async confirm() {
      if (!(await coord.extendIfEquals(key, owner, ttlMs))) lost = true;
      return !lost;
    },
    async release({ patienceMs = ttlMs }: { patienceMs?: number } = {}) {
      clearInterval(timer);
      // A release lost to a restart of the store would leave the lock to its TTL, and the holder's own retry would
      // find it "held by another process": retry until it goes through, the caller's patience is spent, or
      // the lock has expired anyway.
      const deadline = Date.now() + Math.min(ttlMs, patienceMs);
      for (let waitMs = 50; ; waitMs = Math.min(waitMs * 2, 1000)) {
        try {
          await coord.removeIfEquals(key, owner);
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
export async function lockHolder(coord: Coordinator, key: string): Promise<{ holder: string; token: string } | undefined> {
  const token = await coord.get(key);
  const bar = token?.lastIndexOf("|") ?? -1;
  return token && bar > 0 ? { holder: token.slice(0, bar), token } : undefined;
}

/** Deletes the lock only if it still holds exactly `token`. */
export function dropLock(coord: Coordinator, key: string, token: string): Promise<boolean> {
  return coord.removeIfEquals(key, token);
}
