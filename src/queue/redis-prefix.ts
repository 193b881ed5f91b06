// Which key prefix an install uses in Redis when DVAULT_REDIS_PREFIX is unset (docs/ARCHITECTURE.md#redis-keys).
// The default is the hash tag "{dvault}": Redis Cluster (and Valkey, Dragonfly's cluster mode) puts every key
// whose name starts with it in one slot, so BullMQ's scripts, the pacer's scripts, the locks and the holder
// registry never touch keys of two slots. Installs older than that kept their keys under "dvault": queued and
// failed jobs, learned API paces, leases. Those keys are not moved (a worker of the older version may still be
// writing them, and BullMQ keeps job keys inside its own values); such an install keeps "dvault", which
// `dvault status` says, until its keys are gone or DVAULT_REDIS_PREFIX names a prefix.
import type { Redis } from "ioredis";
import { DEFAULT_REDIS_PREFIX, type Config } from "../config.ts";
import { scanKeys } from "../redis-scan.ts";

/** The prefix of installs that predate the hash tag. */
export const LEGACY_REDIS_PREFIX = "dvault";

/** Written under the prefix an install settled on, so later starts need no scan. */
const markerKey = (prefix: string) => `${prefix}:keyspace`;

/** Whether `prefix` is a Redis Cluster hash tag, so that all keys under it share one slot. */
export function isHashTagged(prefix: string): boolean {
  return /^\{[^{}]+\}/.test(prefix);
}

/**
 * The prefix to use: the configured one, else "{dvault}" unless an older install's keys live under "dvault"
 * (then "dvault", kept for good by a marker key). The config returned carries it in `redisPrefix`.
 */
export async function settleRedisPrefix(redis: Redis, config: Config): Promise<Config> {
  if (config.redisPrefixSet || config.redisPrefix !== DEFAULT_REDIS_PREFIX) return config;
  const prefix = await chooseDefaultPrefix(redis);
  return prefix === config.redisPrefix ? config : Object.freeze({ ...config, redisPrefix: prefix });
}

async function chooseDefaultPrefix(redis: Redis): Promise<string> {
  // Two reads, not one MGET: the two keys lie in different cluster slots.
  if ((await redis.exists(markerKey(DEFAULT_REDIS_PREFIX))) === 1) return DEFAULT_REDIS_PREFIX;
  if ((await redis.exists(markerKey(LEGACY_REDIS_PREFIX))) === 1) return LEGACY_REDIS_PREFIX;
  const chosen = (await hasKeysUnder(redis, `${LEGACY_REDIS_PREFIX}:`)) ? LEGACY_REDIS_PREFIX : DEFAULT_REDIS_PREFIX;
  await redis.set(markerKey(chosen), new Date().toISOString(), "NX");
  return chosen;
}

/** One SCAN over the keyspace (on a cluster, of every master), at the first start of this version only. */
async function hasKeysUnder(redis: Redis, base: string): Promise<boolean> {
  return (await scanKeys(redis, `${base}*`, 1000)).length > 0;
}
