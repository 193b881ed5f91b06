// The scratch prefixes of `--once` runs on Redis (`<prefix>:once-<hex>`, src/queue/backend.ts#scratch), which a run
// killed outright never removed: each SIGKILL left its queues' keys for good. A live run keeps a liveness key with a
// short TTL fresh; the next run removes the keys of every scratch prefix whose liveness key is gone, as PostgreSQL's
// advisory lock per scratch schema does there (src/db/queue-jobs.repository.ts; test/medium/once-scratch-leak.test.ts).
import type { Redis } from "ioredis";
import { scanKeys } from "../redis-scan.ts";
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

/**
 * Marks `scratch` as in use by this process, before any of its keys is made, and keeps it so until the returned call
 * (which removes the mark) or the process's end, however it ends (the TTL then removes it).
 */
export async function holdScratchPrefix(redis: Redis, scratch: string, { ttlMs, everyMs }: ScratchLiveness): Promise<() => Promise<void>> {
  const key = livenessKey(scratch);
  const renew = () => redis.set(key, String(process.pid), "PX", ttlMs);
  await renew();
  // A failed renewal (Redis away) is tried again by the next tick; SET makes the key anew if it lapsed meanwhile.
  const timer = setInterval(() => void renew().catch(() => undefined), everyMs);
  timer.unref();
  return async () => {
    clearInterval(timer);
    await redis.unlink(key).catch(() => undefined);
  };
}

/**
 * Removes the keys of `prefix`'s scratch prefixes whose liveness key is gone: those of `--once` runs killed outright.
 * A run sets its liveness key before it makes any other, so a key seen here whose run's mark is absent afterwards
 * belongs to a run that ended. Only keys named `<prefix>:once-<12 hex>:…` are touched. How many prefixes it swept.
 */
export async function sweepDeadScratchPrefixes(redis: Redis, prefix: string): Promise<number> {
  const base = `${prefix}:once-`;
  const keysOf = new Map<string, string[]>();
  for (const key of await scanKeys(redis, `${globEscape(base)}*`)) {
    const id = key.startsWith(base) ? SCRATCH_ID.exec(key.slice(base.length))?.[1] : undefined;
    if (id === undefined) continue;
    const keys = keysOf.get(id);
    if (keys) keys.push(key);
    else keysOf.set(id, [key]);
  }
  let swept = 0;
  for (const [id, keys] of keysOf) {
    if ((await redis.exists(livenessKey(scratchPrefix(prefix, id)))) === 1) continue;
    await unlinkKeys(redis, keys);
    swept++;
  }
  return swept;
}

/** `text` matched literally by SCAN's MATCH (a prefix set by hand may hold * ? [ ] or \). */
function globEscape(text: string): string {
  return text.replace(/[*?[\]\\]/g, "\\$&");
}
