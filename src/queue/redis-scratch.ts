// The scratch prefixes of `--once` runs on Redis (`<prefix>:once-<hex>`, src/queue/backend.ts#scratch), which a run
// killed outright never removed: each SIGKILL left its queues' keys for good. A live run keeps a liveness key with a
// short TTL fresh and is listed in a registry of runs; the next run removes the keys of every listed run whose
// liveness key is gone, as PostgreSQL's advisory lock per scratch schema does there (src/db/queue-jobs.repository.ts;
// test/medium/once-scratch-leak.test.ts). Only that, a rare kill, costs a SCAN of the keyspace: a run that finds
// nobody dead reads the registry alone, where a SCAN on each run cost seconds on a big shared Redis (2 million keys:
// 3.4 s, every `--once` run's end waiting for it). Runs of versions before the registry are found by one SCAN per
// prefix, once.
import type { Redis } from "ioredis";
import { globEscaped, scanKeys } from "../redis-scan.ts";
import { unlinkKeys } from "./redis.ts";

/** How long a liveness key outlives its run's last renewal, and how often the run renews it (a test gives its own). */
export type ScratchLiveness = { ttlMs: number; everyMs: number };

/**
 * As long as a holder's lease (src/queue/holder.ts): a live run whose renewals stop this long (its Redis away from
 * it, its event loop stalled) would lose its queues' keys to the next run's sweep, a run killed outright keeps its
 * keys until a run starts this long after.
 */
export const SCRATCH_LIVENESS: ScratchLiveness = { ttlMs: 30_000, everyMs: 5_000 };

const ID_LENGTH = 12;
const SCRATCH_ID = new RegExp(`^([0-9a-f]{${ID_LENGTH}}):`);

/** The scratch prefix of one run: `id` is ID_LENGTH hex digits. */
export const scratchPrefix = (prefix: string, id: string) => `${prefix}:once-${id}`;
export const SCRATCH_ID_BYTES = ID_LENGTH / 2;

/** Under the scratch prefix, beside its queues' keys (`<scratch>:<queue>:…`; no queue is named "alive"). */
export const livenessKey = (scratch: string) => `${scratch}:alive`;

/** The ids of `prefix`'s scratch prefixes that may hold keys: each run's, from before its first key until it removed them. */
export const scratchRegistryKey = (prefix: string) => `${prefix}:scratch-runs`;

/** Set once the keyspace was scanned for the scratch prefixes of runs before the registry (sweepDeadScratchPrefixes). */
const unregisteredSweptKey = (prefix: string) => `${prefix}:scratch-swept`;

/**
 * Marks the scratch prefix `id` of `prefix` as in use by this process and lists it in the registry, before any of its
 * keys is made, and keeps it so until the returned call or the process's end, however it ends (the TTL then removes
 * the mark; the listing stays for the sweep). The call removes the mark, and the listing when `removed` says that
 * every key of the prefix is gone.
 */
export async function holdScratchPrefix(
  redis: Redis,
  prefix: string,
  id: string,
  { ttlMs, everyMs }: ScratchLiveness,
): Promise<(removed: boolean) => Promise<void>> {
  const key = livenessKey(scratchPrefix(prefix, id));
  const renew = () => redis.set(key, String(process.pid), "PX", ttlMs);
  await renew();
  // Listed after the mark is set: a sweep that finds the listing finds the mark too while the run lives.
  await redis.sadd(scratchRegistryKey(prefix), id);
  // A failed renewal (Redis away) is tried again by the next tick; SET makes the key anew if it lapsed meanwhile.
  const timer = setInterval(() => void renew().catch(() => undefined), everyMs);
  timer.unref();
  return async (removed) => {
    clearInterval(timer);
    if (removed) await redis.srem(scratchRegistryKey(prefix), id).catch(() => undefined);
    await redis.unlink(key).catch(() => undefined);
  };
}

/**
 * Removes the keys of `prefix`'s scratch prefixes whose liveness key is gone: those of `--once` runs killed outright
 * (or whose removal failed). A run sets its liveness key before it makes any other, so a key seen here whose run's
 * mark is absent afterwards belongs to a run that ended. Only keys named `<prefix>:once-<12 hex>:…` are touched. How
 * many prefixes it swept.
 */
export async function sweepDeadScratchPrefixes(redis: Redis, prefix: string): Promise<number> {
  const registry = scratchRegistryKey(prefix);
  const listed = await redis.smembers(registry);
  const dead = new Set<string>();
  for (const id of listed) if (!(await isAlive(redis, prefix, id))) dead.add(id);
  const unregistered = (await redis.exists(unregisteredSweptKey(prefix))) === 0;
  if (dead.size === 0 && !unregistered) return 0;
  let swept = 0;
  for (const [id, keys] of await scratchKeysByRun(redis, prefix)) {
    if (!dead.has(id) && !unregistered) continue;
    if (await isAlive(redis, prefix, id)) continue;
    await unlinkKeys(redis, keys);
    dead.add(id);
    swept++;
  }
  if (dead.size > 0) await redis.srem(registry, ...dead);
  if (unregistered) await redis.set(unregisteredSweptKey(prefix), new Date().toISOString());
  return swept;
}

function isAlive(redis: Redis, prefix: string, id: string): Promise<boolean> {
  return redis.exists(livenessKey(scratchPrefix(prefix, id))).then((n) => n === 1);
}

/** Every key named `<prefix>:once-<12 hex>:…`, by the run's id: a SCAN of the whole keyspace. */
async function scratchKeysByRun(redis: Redis, prefix: string): Promise<Map<string, string[]>> {
  const base = `${prefix}:once-`;
  const keysOf = new Map<string, string[]>();
  for (const key of await scanKeys(redis, `${globEscaped(base)}*`)) {
    const id = key.startsWith(base) ? SCRATCH_ID.exec(key.slice(base.length))?.[1] : undefined;
    if (id === undefined) continue;
    const keys = keysOf.get(id);
    if (keys) keys.push(key);
    else keysOf.set(id, [key]);
  }
  return keysOf;
}
