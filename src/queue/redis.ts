// Redis connections (ioredis) for BullMQ and dvault's own keys, with one-line failures.
import { Redis, type RedisOptions } from "ioredis";
import { ServiceUnavailableError } from "../errors.ts";
import { maskUrl } from "../redact.ts";

const START_HINT =
  "Start it (redis-server --daemonize yes --bind 127.0.0.1 --port 6379, or docker compose up -d redis) or point REDIS_URL at a running server.";

export type RedisRole = "command" | "worker";

/**
 * A connection. BullMQ workers need `maxRetriesPerRequest: null` so a blocking call survives reconnects;
 * command connections fail fast instead.
 */
export function createRedis(url: string, role: RedisRole = "command", extra: RedisOptions = {}): Redis {
  const redis = new Redis(url, {
    lazyConnect: true,
    connectTimeout: 5000,
    maxRetriesPerRequest: role === "worker" ? null : 3,
    enableOfflineQueue: true,
    ...extra,
  });
  // Without a listener ioredis prints "Unhandled error event" with a stack; failures surface on commands.
  redis.on("error", () => undefined);
  return redis;
}

/** Connects and pings once, without retrying; a failure becomes a ServiceUnavailableError. */
export async function checkRedis(url: string): Promise<void> {
  const redis = createRedis(url, "command", { retryStrategy: () => null, maxRetriesPerRequest: 0 });
  // connect() rejects with a generic "Connection is closed."; the cause arrives as an "error" event.
  let cause: (Error & { code?: string }) | undefined;
  redis.on("error", (err: Error) => (cause ??= err));
  try {
    await redis.connect();
    await redis.ping();
  } catch (err) {
    const e = cause ?? (err as Error & { code?: string });
    const reason = e.code ?? e.message.replace(/\s+/g, " ").slice(0, 120);
    throw new ServiceUnavailableError("Redis", maskUrl(url), reason, START_HINT);
  } finally {
    redis.disconnect();
  }
}

/** Deletes every key under a prefix (SCAN, never KEYS): a demo's or a test's private namespace. */
export async function deleteKeysByPrefix(redis: Redis, prefix: string): Promise<number> {
  let cursor = "0";
  let deleted = 0;
  do {
    const [next, keys] = await redis.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 500);
    cursor = next;
    if (keys.length) deleted += await redis.del(...keys);
  } while (cursor !== "0");
  return deleted;
}
