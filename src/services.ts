// The composition root shared by the worker, `dvault sync`, the other commands and the medium tests:
// connections, the coordination store, the pacer, the token manager, and an API client per account. Nothing here
// does work.
import type { Redis } from "ioredis";
import type { DaClient } from "./api/client.ts";
import type { UnreadableReport, UnreadableSink } from "./api/transport.ts";
import type { HttpTransport, HttpTransportOptions, TransportStats } from "./api/http.ts";
import { newTransportStats } from "./api/http/options.ts";
import { OAuthClient } from "./api/oauth.ts";
import { createPacer, type Pacer, type PacerOptions } from "./api/pacer.ts";
import type { AccountTokens } from "./api/account-tokens.ts";
import { TokenManager, type TokenManagerOptions } from "./api/token-manager.ts";
import type { Config } from "./config.ts";
import type { Coordinator } from "./coord/coordinator.ts";
import { postgresCoordinator } from "./coord/postgres.ts";
import { redisCoordinator } from "./coord/redis.ts";
import { TokenCipher } from "./crypto/token-cipher.ts";
import { AccountRepository } from "./db/account.repository.ts";
import { accountTokenStore } from "./db/account-token-store.ts";
import { createPgPool, type PgPool } from "./db/connect.ts";
import { type ResolvedDatabase, resolveDatabase } from "./db/embedded/resolve.ts";
import { assertDatabaseReady } from "./db/schema-check.ts";
import { UnreadableResponseRepository } from "./db/unreadable-response.repository.ts";
import { UserError } from "./errors.ts";
import type { Logger } from "./log.ts";
import { checkRedis, createRedis } from "./queue/redis.ts";
import { settleRedisPrefix } from "./queue/redis-prefix.ts";
import { registerSecret } from "./redact.ts";
import { keyCreatedMessage, loadSecretKey, type SecretKey } from "./secret-key.ts";

/** An account's API access: its token provider, its transport (with call counters) and the typed client. */
export type AccountApi = { tokens: AccountTokens; transport: HttpTransport; client: DaClient };

export type ServiceOverrides = {
  /** Epoch ms for token expiry and sync bookkeeping; tests follow the simulator's clock. The pacer keeps real time. */
  now?: () => number;
  pacer?: Partial<Omit<PacerOptions, "redis" | "prefix">>;
  transport?: Partial<Omit<HttpTransportOptions, "apiBase" | "tokens" | "pacer" | "log">>;
  tokens?: Partial<Omit<TokenManagerOptions, "repo" | "cipher" | "oauth" | "coord" | "redisPrefix" | "log">>;
  secretKey?: SecretKey;
  poolSize?: number;
};

export type Services = {
  config: Config;
  log: Logger;
  pool: PgPool;
  /**
   * BullMQ's connection on the Redis engine. On the PostgreSQL engine no Redis connection is made and reading this
   * throws: everything but BullMQ's queues uses `coord`.
   */
  redis: Redis;
  /** Locks, leases, heartbeats, switches: the coordination seam (src/coord/coordinator.ts), on the engine's store. */
  coord: Coordinator;
  pacer: Pacer;
  accounts: AccountRepository;
  /** API calls, throttle waits, retries and refreshes of every transport this process made (for /metrics). */
  apiTotals: TransportStats;
  now(): number;
  /** The token manager; throws a one-line UserError when the app's credentials are not configured. */
  tokens(): TokenManager;
  /** A user account's API access. */
  apiFor(accountId: number): Promise<AccountApi>;
  /** Client-credentials access for public endpoints, when the app's credentials are configured. */
  publicApi(): Promise<AccountApi | undefined>;
  close(): Promise<void>;
};

/**
 * The database (DATABASE_URL=embedded: the server dvault runs, attached until close(), src/db/embedded/resolve.ts)
 * refused with one clear line when unreachable, missing or unmigrated (Redis is checked by openCoordination).
 */
async function checkedDatabase(configured: Config): Promise<ResolvedDatabase> {
  const database = await resolveDatabase(configured);
  try {
    await assertDatabaseReady(database.config.databaseUrl);
    return database;
  } catch (err) {
    database.release();
    throw err;
  }
}

/** Where the transports record answers they could not read (the unreadable_responses table). */
function unreadableRecorder(pool: PgPool, now: () => number): UnreadableSink {
  const repo = new UnreadableResponseRepository(pool);
  return { record: (report) => repo.recordUnreadable(report, new Date(now())) };
}

export async function createServices({
  config: configured,
  log,
  overrides = {},
}: {
  config: Config;
  log: Logger;
  overrides?: ServiceOverrides;
}): Promise<Services> {
  // DATABASE_URL=embedded: the server dvault runs, held until close() (src/db/embedded/resolve.ts).
  const database = await checkedDatabase(configured);
  registerSecret(configured.clientSecret);
  // One pool per process, DVAULT_DB_POOL_SIZE connections: every repository runs on it (docs/ARCHITECTURE.md#db).
  const pool = createPgPool(database.config.databaseUrl, overrides.poolSize ?? configured.dbPoolSize);
  const { config, redis, coord } = await openCoordination(database.config, pool).catch(async (err: unknown) => {
    await pool.end().catch(() => undefined);
    database.release();
    throw err;
  });
  const now = overrides.now ?? Date.now;
  const pacer = redis ? redisPacer(config, redis, overrides.pacer) : undefined;
  const pacerOrThrow = (): Pacer => pacer ?? noPostgresPacer();
  const accounts = new AccountRepository(pool);
  const apiTotals = newTransportStats();
  const unreadable = unreadableRecorder(pool, now);

  let manager: TokenManager | undefined;
  const tokens = (): TokenManager => {
    if (manager) return manager;
    if (!config.clientId) {
      throw new UserError("DVAULT_CLIENT_ID is not set: register an application on the service and set DVAULT_CLIENT_ID and DVAULT_CLIENT_SECRET (see README)");
    }
    const cipher = new TokenCipher(overrides.secretKey ?? loadSecretKey(config, (file) => log.warn({ path: file }, keyCreatedMessage(file))));
    const oauth = new OAuthClient({ serviceBase: config.apiBase, clientId: config.clientId, clientSecret: config.clientSecret, log });
    manager = new TokenManager({ repo: accountTokenStore(accounts), cipher, oauth, coord, redisPrefix: config.redisPrefix, log, now, ...overrides.tokens });
    return manager;
  };

  // The HTTP layer and the client (got and the endpoint catalogue) load with the first API access, so
  // commands that make no call (`dvault status`) start without them (docs/PERFORMANCE.md#start-up).
  const apiOf = async (provider: AccountTokens): Promise<AccountApi> => {
    const [{ createHttpTransport }, { DaClient }] = await Promise.all([import("./api/http.ts"), import("./api/client.ts")]);
    const transport = createHttpTransport({
      apiBase: config.apiBase,
      tokens: provider,
      pacer: pacerOrThrow(),
      log,
      unreadable,
      maxBodyBytes: config.apiMaxBody,
      minBytesPerSecond: config.minThroughput,
      ...overrides.transport,
      totals: apiTotals,
    });
    const tokenKind = provider.identity().kind;
    return { tokens: provider, transport, client: new DaClient(transport, { tokenKind, matureContent: tokenKind === "user" }) };
  };

  const services: Omit<Services, "redis" | "pacer"> = {
    config,
    log,
    pool,
    coord,
    accounts,
    apiTotals,
    now,
    tokens,
    apiFor: async (accountId) => apiOf(await tokens().forAccountId(accountId)),
    publicApi: async () => {
      if (!config.clientId || !config.clientSecret) return undefined;
      return apiOf(await tokens().forClient());
    },
    async close() {
      await coord.close();
      if (redis) await redis.quit().catch(() => redis.disconnect());
      await pool.end().catch(() => undefined);
      database.release();
    },
  };
  return withEngineConnections(services, redis, pacer);
}

/**
 * `redis` and `pacer` as plain fields on the Redis engine. On the PostgreSQL engine, getters that throw a clear
 * line, and are not enumerable, so that `{ ...services }` (status, the dashboard) still works and only a caller
 * that reads them fails.
 */
function withEngineConnections(services: Omit<Services, "redis" | "pacer">, redis: Redis | undefined, pacer: Pacer | undefined): Services {
  if (redis && pacer) return { ...services, redis, pacer };
  const unavailable = (what: string) => () => {
    throw new Error(`${what} on the PostgreSQL engine (DVAULT_ENGINE=postgres): this caller must use services.coord`);
  };
  return Object.defineProperties(services, {
    redis: { get: unavailable("no Redis connection"), enumerable: false },
    pacer: { get: noPostgresPacer, enumerable: false },
  }) as Services;
}

// TODO(pacer seam): the pacer's PacerStore replaces this Redis-only construction; on the PostgreSQL engine the
// pacer is unavailable until then.
function redisPacer(config: Config, redis: Redis, overrides: ServiceOverrides["pacer"]): Pacer {
  return createPacer({
    redis,
    prefix: config.redisPrefix,
    // The same adaptive pace for every base URL: it learns what the service allows (docs/service-behaviour.md#rate-limits).
    startRate: config.apiRate.start,
    minRate: config.apiRate.min,
    maxRate: config.apiRate.max,
    ...overrides,
  });
}

function noPostgresPacer(): never {
  throw new Error("the API pacer has no PostgreSQL store yet on the PostgreSQL engine (DVAULT_ENGINE=postgres)");
}

/** The coordination store of the configured engine, with the connection it runs on and the config it settled. */
export type Coordination = { config: Config; coord: Coordinator; redis: Redis | undefined };

/**
 * Opens the engine's coordination store (config.engine, never switched by itself). Redis: after a one-line check
 * of the server, a command connection and the settled key prefix (src/queue/redis-prefix.ts: every user of the
 * services reads it from services.config). PostgreSQL: the dvault_coord schema in the mirror's database, created
 * or upgraded on `pool`; no Redis connection is made.
 */
export async function openCoordination(config: Config, pool: PgPool): Promise<Coordination> {
  if (config.engine === "postgres") return { config, coord: await postgresCoordinator(pool), redis: undefined };
  await checkRedis(config.redisUrl);
  const redis = createRedis(config.redisUrl);
  await redis.connect();
  try {
    return { config: await settleRedisPrefix(redis, config), coord: redisCoordinator(redis), redis };
  } catch (err) {
    redis.disconnect();
    throw err;
  }
}
