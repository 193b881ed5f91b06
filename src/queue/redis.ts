// Redis connections (ioredis) for BullMQ and dvault's own keys, with one-line failures. A REDIS_URL of the
// form redis+cluster://host:port (rediss+cluster:// for TLS) names one node of a Redis Cluster, whose client
// follows its redirections (docs/ARCHITECTURE.md#redis-keys).
import { Cluster, Redis, type RedisOptions } from "ioredis";
import { ServiceUnavailableError, UserError } from "../errors.ts";
import { scanKeys } from "../redis-scan.ts";
import { maskUrl } from "../redact.ts";

const START_HINT =
  "Start it (redis-server --daemonize yes --bind 127.0.0.1 --port 6379, or docker compose up -d redis) or point REDIS_URL at a running server.";

export type RedisRole = "command" | "worker";

const DISCONNECT_TIMEOUT_MS = 200;

/**
 * A connection. BullMQ workers need `maxRetriesPerRequest: null` so a blocking call survives reconnects;
 * command connections fail fast instead.
 */
export function createRedis(url: string, role: RedisRole = "command", extra: RedisOptions = {}): Redis {
  const options: RedisOptions = {
    lazyConnect: true,
    connectTimeout: 5000,
    // How long a dropped connection's socket may take to close before ioredis destroys it. Its own 2 s is a timer
    // that waits for a close which, when the server went away mid-run, had already happened: every command then
    // exited 2 s after its work. Destroying a socket that disconnect() has already given up on loses nothing.
    disconnectTimeout: DISCONNECT_TIMEOUT_MS,
    maxRetriesPerRequest: role === "worker" ? null : 3,
    enableOfflineQueue: true,
    ...extra,
  };
  const redis = isClusterUrl(url) ? clusterClient(url, options) : new Redis(url, options);
  // Without a listener ioredis prints "Unhandled error event" with a stack; failures surface on commands.
  redis.on("error", () => undefined);
  return redis;
}

const CLUSTER_PROTOCOLS = ["redis+cluster:", "rediss+cluster:"];

export function isClusterUrl(url: string): boolean {
  try {
    return CLUSTER_PROTOCOLS.includes(new URL(url).protocol);
  } catch {
    return false;
  }
}

/**
 * A cluster client seeded with the URL's node. It answers the commands dvault sends the way a single Redis
 * does, since all keys of an install share one slot; the few places that differ (SCAN, below) check for it.
 */
function clusterClient(url: string, options: RedisOptions): Redis {
  const u = new URL(url);
  const { lazyConnect, enableOfflineQueue, retryStrategy, ...nodeOptions } = options;
  const cluster = new Cluster([{ host: u.hostname, port: Number(u.port || 6379) }], {
    ...(lazyConnect !== undefined ? { lazyConnect } : {}),
    ...(enableOfflineQueue !== undefined ? { enableOfflineQueue } : {}),
    ...(retryStrategy ? { clusterRetryStrategy: retryStrategy } : {}),
    redisOptions: {
      ...nodeOptions,
      ...(u.username ? { username: decodeURIComponent(u.username) } : {}),
      ...(u.password ? { password: decodeURIComponent(u.password) } : {}),
      ...(u.protocol === "rediss+cluster:" ? { tls: {} } : {}),
    },
  });
  // Callers hold it as a Redis: the commands, multi(), eval and duplicate() they use exist on both.
  return cluster as unknown as Redis;
}

/**
 * Ends a connection made by createRedis: QUIT while it is open, so that the server sees a clean close, and drops it
 * at once otherwise (its server went away, or it never opened).
 */
export async function closeRedis(redis: Redis): Promise<void> {
  if (redis.status === "end") return;
  if (
    redis.status === "ready" &&
    (await redis.quit().then(
      () => true,
      () => false,
    ))
  )
    return;
  redis.disconnect();
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
    await checkDatabaseIndex(redis, url);
  } catch (err) {
    if (err instanceof UserError) throw err;
    const e = cause ?? (err as Error & { code?: string });
    const reason = e.code ?? e.message.replace(/\s+/g, " ").slice(0, 120);
    // A server that answers and refuses the URL's credentials is running: starting it is not the fix.
    if (/^NOAUTH\b/.test(e.message))
      throw new UserError(`Redis at ${maskUrl(url)} asks for a password REDIS_URL does not give (NOAUTH): write it in (redis://:<password>@host:port)`);
    if (/^WRONGPASS\b/.test(e.message)) throw new UserError(`Redis at ${maskUrl(url)} refused REDIS_URL's user and password (WRONGPASS): correct them`);
    throw new ServiceUnavailableError("Redis", maskUrl(url), reason, START_HINT);
  } finally {
    // A connection that never opened has ended already: ioredis's disconnect() would start a 2 s timer waiting for a
    // socket that closed before it looked, and every command stopping on an unreachable Redis would exit 2 s late.
    if (redis.status !== "end") redis.disconnect();
  }
}

/**
 * Whether a Redis server answers at `url`, as `dvault init` and `dvault demo` ask before choosing the engine: one
 * that answers but refuses what the URL asks (a database it does not have) still answers, so the install keeps
 * Redis and the first command says what to fix, instead of being moved to PostgreSQL alone (as postgresAnswers,
 * src/db/server-answers.ts, does for PostgreSQL).
 */
export function redisAnswers(url: string): Promise<boolean> {
  return checkRedis(url).then(
    () => true,
    (err: unknown) => !(err instanceof ServiceUnavailableError),
  );
}

/**
 * The database the URL names exists on the server: ioredis's SELECT at connect fails only as an "error" event and
 * leaves the connection on database 0, so a /99 would silently mix an install's keys into another's.
 */
async function checkDatabaseIndex(redis: Redis, url: string): Promise<void> {
  const db = Number(new URL(url).pathname.replace(/^\/+|\/+$/g, "") || 0);
  if (db === 0 || isClusterUrl(url)) return;
  try {
    await redis.select(db);
  } catch (err) {
    const count = await redis
      .config("GET", "databases")
      .then((answer) => Number((answer as string[])[1]))
      .catch(() => undefined);
    const range = count ? `0 to ${count - 1}` : "a lower number";
    throw new UserError(
      `REDIS_URL names database ${db}, which the Redis server at ${maskUrl(url)} does not have (${(err as Error).message}): use ${range}, or raise "databases" in its redis.conf`,
    );
  }
}

/** Deletes every key under a prefix (SCAN, never KEYS): a demo's or a test's private namespace. */
export async function deleteKeysByPrefix(redis: Redis, prefix: string): Promise<number> {
  return unlinkKeys(redis, await scanKeys(redis, `${prefix}*`));
}

/** Deletes `keys` in batches (UNLINK: the server frees their memory apart); how many there were. */
export async function unlinkKeys(redis: Redis, keys: readonly string[]): Promise<number> {
  // On a cluster one UNLINK per key: keys of a prefix without a hash tag may lie in several slots.
  const batch = redis instanceof Cluster ? 1 : 500;
  let deleted = 0;
  for (let i = 0; i < keys.length; i += batch) deleted += await redis.unlink(...keys.slice(i, i + batch));
  return deleted;
}
