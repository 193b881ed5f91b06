// The composition root shared by the worker, `dvault sync`, the other commands and the medium tests:
// connections, the coordination store, the pacer, the token manager, and an API client per account. Nothing here
// does work.
import type { Redis } from "ioredis";
import type { DaClient } from "./api/client.ts";
import type { UnreadableSink } from "./api/transport.ts";
import type { HttpTransport, HttpTransportOptions, TransportStats } from "./api/http.ts";
import { newTransportStats } from "./api/http/options.ts";
import { OAuthClient, type OAuthClientOptions } from "./api/oauth.ts";
import { createPacer, type Pacer, type PacerOptions, type PacerStore } from "./api/pacer.ts";
import { redisPacerStore } from "./api/pacer-redis-store.ts";
import { sqlPacerStore } from "./api/pacer-sql-store.ts";
import type { AccountTokens } from "./api/account-tokens.ts";
import { ReauthRequiredError } from "./api/token-errors.ts";
import { TokenManager, type TokenManagerOptions } from "./api/token-manager.ts";
import type { Config } from "./config.ts";
import type { Coordinator } from "./coord/coordinator.ts";
import { postgresCoordinator } from "./coord/postgres.ts";
import { redisCoordinator } from "./coord/redis.ts";
import { type InstallKey, installKey, unreadableTokens } from "./crypto/install-key.ts";
import { TokenCipher } from "./crypto/token-cipher.ts";
import { AccountRepository } from "./db/account.repository.ts";
import { accountTokenStore } from "./db/account-token-store.ts";
import { createPgPool, type PgPool } from "./db/connect.ts";
import { type ResolvedDatabase, resolveDatabase } from "./db/embedded/resolve.ts";
import { pacerRows } from "./db/pacer-rows.ts";
import { assertDatabaseReady } from "./db/schema-check.ts";
import { QueueJobsRepository } from "./db/queue-jobs.repository.ts";
import { UnreadableResponseRepository } from "./db/unreadable-response.repository.ts";
import { UserError } from "./errors.ts";
import type { Logger } from "./log.ts";
import { createQueueBackend, type QueueBackend } from "./queue/backend.ts";
import { checkRedis, closeRedis, createRedis } from "./queue/redis.ts";
import { settleRedisPrefix } from "./queue/redis-prefix.ts";
import { registerSecret } from "./redact.ts";
import { existingSecretKey, keyCreatedMessage, loadSecretKey, pendingGrantsDir, type SecretKey } from "./secret-key.ts";

/** An account's API access: its token provider, its transport (with call counters) and the typed client. */
export type AccountApi = { tokens: AccountTokens; transport: HttpTransport; client: DaClient };

/** What a caller may set of the app's token manager: timings and the clock, never where tokens are kept. */
type AppTokenOptions = Partial<Omit<TokenManagerOptions, "repo" | "pendingDir" | "cipher" | "oauth" | "coord" | "redisPrefix" | "log">>;

export type ServiceOverrides = {
  /** Epoch ms for token expiry and sync bookkeeping; tests follow the simulator's clock. The pacer keeps real time. */
  now?: () => number;
  pacer?: Partial<Omit<PacerOptions, "store">>;
  transport?: Partial<Omit<HttpTransportOptions, "apiBase" | "tokens" | "pacer" | "log">>;
  tokens?: AppTokenOptions;
  /** The token endpoint's waits between sending a refused refresh again (tests: milliseconds, not seconds). */
  oauth?: Pick<OAuthClientOptions, "refreshRetryDelayMs">;
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
  /** Where the queues and their schedulers live: Redis, or PostgreSQL alone (DVAULT_ENGINE, src/queue/backend.ts). */
  queues: QueueBackend;
  pacer: Pacer;
  accounts: AccountRepository;
  /** API calls, throttle waits, retries and refreshes of every transport this process made (for /metrics). */
  apiTotals: TransportStats;
  now(): number;
  /** The token manager; throws a one-line UserError when the app's credentials are not configured. */
  tokens(): TokenManager;
  /**
   * The key the stored tokens are read with, or why they cannot be (src/crypto/install-key.ts): the one that exists,
   * never one made now; what the runs and status check each account's tokens against before they use them.
   */
  installKey(): InstallKey;
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

/** The API pace on the engine's store: the same adaptive pace for every base URL, learning what the service allows (docs/service-behaviour.md#rate-limits). */
export function pacerOf(config: Config, connections: { redis?: Redis | undefined; pool: PgPool }, overrides: ServiceOverrides["pacer"] = {}): Pacer {
  return createPacer({
    store: pacerStoreFor(config, connections),
    startRate: config.apiRate.start,
    minRate: config.apiRate.min,
    maxRate: config.apiRate.max,
    ...overrides,
  });
}

/** Where the transports record answers they could not read (the unreadable_responses table). */
function unreadableRecorder(pool: PgPool, now: () => number): UnreadableSink {
  const repo = new UnreadableResponseRepository(pool);
  return { record: (report) => repo.recordUnreadable(report, new Date(now())) };
}

/** The namespace of an install's pace in PostgreSQL (its own database keeps it apart from other installs'). */
export const PACER_NAMESPACE = "dvault";

/** The install's key (src/crypto/install-key.ts), or the one a test or the demo gives the services. */
function keyOf(config: Config, given: SecretKey | undefined): InstallKey {
  return given ? { cipher: new TokenCipher(given) } : installKey(config);
}

/**
 * Checked before the token manager is made, which would make a key file where none is found (src/secret-key.ts):
 * tokens the install's key cannot read are a login to redo (ReauthRequiredError), never a reason to make another key.
 */
async function assertTokensReadable(accounts: AccountRepository, key: InstallKey, accountId: number): Promise<void> {
  const row = await accounts.findById(accountId);
  const why = row ? unreadableTokens(row, key) : undefined;
  if (row && why) throw new ReauthRequiredError(row.name, why);
}

/**
 * The pacer's store on the configured engine (config.engine, never switched implicitly; createServices still builds Redis's): Redis under the
 * install's prefix (the keys every install so far has, so it keeps what it learned), or PostgreSQL alone
 * (schema dvault_pacer, on `pool`). `namespace` keeps tests and benchmarks apart.
 */
export function pacerStoreFor(
  config: Pick<Config, "engine" | "redisPrefix">,
  { redis, pool, namespace = PACER_NAMESPACE }: { redis?: Redis; pool?: PgPool; namespace?: string },
): PacerStore {
  if (config.engine === "postgres") {
    if (!pool) throw new Error("the PostgreSQL engine's pacer needs the process's pool");
    return sqlPacerStore(pacerRows(pool, { namespace }));
  }
  if (!redis) throw new Error("the Redis engine's pacer needs a Redis connection");
  return redisPacerStore(redis, config.redisPrefix);
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
  const queues = await createQueueBackend(config, { ...(redis ? { redis } : {}), tables: (schema) => new QueueJobsRepository(pool, schema) });
  const now = overrides.now ?? Date.now;
  const pacer = pacerOf(config, { redis, pool }, overrides.pacer);
  const accounts = new AccountRepository(pool);
  const apiTotals = newTransportStats();
  const unreadable = unreadableRecorder(pool, now);
  const tokens = tokenManagerOf({ config, log, accounts, coord, now, overrides });

  // The HTTP layer and the client (got and the endpoint catalogue) load with the first API access, so
  // commands that make no call (`dvault status`) start without them (docs/PERFORMANCE.md#start-up).
  const apiOf = async (provider: AccountTokens): Promise<AccountApi> => {
    const [{ createHttpTransport }, { DaClient }] = await Promise.all([import("./api/http.ts"), import("./api/client.ts")]);
    const transport = createHttpTransport({
      apiBase: config.apiBase,
      tokens: provider,
      pacer,
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

  const services: Omit<Services, "redis"> = {
    config,
    log,
    pool,
    coord,
    queues,
    pacer,
    accounts,
    apiTotals,
    now,
    tokens,
    installKey: () => keyOf(config, overrides.secretKey),
    apiFor: async (accountId) => {
      await assertTokensReadable(accounts, services.installKey(), accountId);
      return apiOf(await tokens().forAccountId(accountId));
    },
    publicApi: async () => {
      if (!config.clientId || !config.clientSecret) return undefined;
      return apiOf(await tokens().forClient());
    },
    close: () => closeConnections({ queues, pacer, coord, redis, pool, database }),
  };
  return withEngineConnections(services, redis);
}

/**
 * The token manager, made at the first access (the client id checked then) and again when the key on disk changed:
 * a key file restored over a wrong or lost one takes effect at the next access, without a restart, as the checks
 * read it (installKey). A manager made with another key is left to what holds it.
 */
function tokenManagerOf(c: {
  config: Config;
  log: Logger;
  accounts: AccountRepository;
  coord: Coordinator;
  now: () => number;
  overrides: ServiceOverrides;
}): () => TokenManager {
  const { config, log, accounts, coord, now, overrides } = c;
  let manager: { tokens: TokenManager; key: Buffer } | undefined;
  const build = (secret: SecretKey, clientId: string): TokenManager => {
    const cipher = new TokenCipher(secret);
    const oauth = new OAuthClient({ serviceBase: config.apiBase, clientId, clientSecret: config.clientSecret, log, ...overrides.oauth });
    const tokens = appTokenManager({ config, accounts, cipher, oauth, coord, log }, { now, ...overrides.tokens });
    manager = { tokens, key: secret.key };
    return tokens;
  };
  return () => {
    if (!config.clientId) {
      throw new UserError("DVAULT_CLIENT_ID is not set: register an application on the service and set DVAULT_CLIENT_ID and DVAULT_CLIENT_SECRET (see README)");
    }
    // Only the first build may make a key (a fresh install's first grant).
    if (!manager) return build(overrides.secretKey ?? loadSecretKey(config, (file) => log.warn({ path: file }, keyCreatedMessage(file))), config.clientId);
    // Later, a key file gone or unreadable keeps the manager there is, never one made now in place of a lost one (the
    // checks before each access say the key is lost); another key on disk (restored) gets a manager of its own.
    let onDisk: SecretKey | undefined;
    try {
      onDisk = overrides.secretKey ?? existingSecretKey(config);
    } catch {
      return manager.tokens;
    }
    return !onDisk || manager.key.equals(onDisk.key) ? manager.tokens : build(onDisk, config.clientId);
  };
}

/**
 * The token manager as every entrance of the app makes it (the services, the `auth` commands): the accounts table, and
 * beside the key file the folder where a refreshed grant waits while the database does not take it.
 */
export function appTokenManager(
  c: { config: Config; accounts: AccountRepository; cipher: TokenCipher; oauth: OAuthClient; coord: Coordinator; log: Logger },
  options: AppTokenOptions = {},
): TokenManager {
  const { config, accounts, cipher, oauth, coord, log } = c;
  return new TokenManager({
    repo: accountTokenStore(accounts),
    pendingDir: pendingGrantsDir(config),
    cipher,
    oauth,
    coord,
    redisPrefix: config.redisPrefix,
    log,
    ...options,
  });
}

/** Closes what createServices opened, the queues first and the embedded server's lease last. */
async function closeConnections(c: {
  queues: QueueBackend;
  pacer: Pacer;
  coord: Coordinator;
  redis: Redis | undefined;
  pool: PgPool;
  database: ResolvedDatabase;
}): Promise<void> {
  await c.queues.close().catch(() => undefined);
  await c.pacer.close();
  await c.coord.close();
  if (c.redis) await closeRedis(c.redis);
  await c.pool.end().catch(() => undefined);
  c.database.release();
}

/**
 * `redis` as a plain field on the Redis engine. On the PostgreSQL engine, a getter that throws a clear line, and is
 * not enumerable, so that `{ ...services }` (status, the dashboard) still works and only a caller that reads it fails.
 */
function withEngineConnections(services: Omit<Services, "redis">, redis: Redis | undefined): Services {
  if (redis) return { ...services, redis };
  return Object.defineProperty(services, "redis", {
    get: () => {
      throw new Error("no Redis connection on the PostgreSQL engine (DVAULT_ENGINE=postgres): this caller must use services.coord");
    },
    enumerable: false,
  }) as Services;
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
  const opened = await openRedis(config);
  return { ...opened, coord: redisCoordinator(opened.redis) };
}

/**
 * The Redis engine's command connection, after a one-line check of the server, with the config whose key prefix
 * it settled (src/queue/redis-prefix.ts): what the services and `dvault jobs` open on that engine.
 */
export async function openRedis(config: Config): Promise<{ config: Config; redis: Redis }> {
  await checkRedis(config.redisUrl);
  const redis = createRedis(config.redisUrl);
  await redis.connect();
  try {
    return { config: await settleRedisPrefix(redis, config), redis };
  } catch (err) {
    redis.disconnect();
    throw err;
  }
}
