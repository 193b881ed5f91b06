// The composition root shared by the worker, `dvault sync`, the other commands and the medium tests:
// connections, the pacer, the token manager, and an API client per account. Nothing here does work.
import type { Redis } from "ioredis";
import type { DaClient } from "./api/client.ts";
import type { UnreadableReport } from "./api/transport.ts";
import type { HttpTransport, HttpTransportOptions, TransportStats } from "./api/http.ts";
import { newTransportStats } from "./api/http/options.ts";
import { OAuthClient } from "./api/oauth.ts";
import { createPacer, type Pacer, type PacerOptions } from "./api/pacer.ts";
import type { AccountTokens } from "./api/account-tokens.ts";
import { TokenManager, type TokenManagerOptions } from "./api/token-manager.ts";
import type { Config } from "./config.ts";
import { TokenCipher } from "./crypto/token-cipher.ts";
import { AccountRepository } from "./db/account.repository.ts";
import { accountTokenStore } from "./db/account-token-store.ts";
import { createPgPool, type PgPool } from "./db/connect.ts";
import { assertDatabaseReady } from "./db/schema-check.ts";
import { QueueJobsRepository } from "./db/queue-jobs.repository.ts";
import { UnreadableResponseRepository } from "./db/unreadable-response.repository.ts";
import { UserError } from "./errors.ts";
import type { Logger } from "./log.ts";
import { createQueueBackend, type QueueBackend } from "./queue/backend.ts";
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
  tokens?: Partial<Omit<TokenManagerOptions, "repo" | "cipher" | "oauth" | "redis" | "redisPrefix" | "log">>;
  secretKey?: SecretKey;
  poolSize?: number;
};

export type Services = {
  config: Config;
  log: Logger;
  pool: PgPool;
  redis: Redis;
  /** Where the queues and their schedulers live: Redis, or PostgreSQL alone (DVAULT_ENGINE, src/queue/backend.ts). */
  queues: QueueBackend;
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

export async function createServices({
  config: configured,
  log,
  overrides = {},
}: {
  config: Config;
  log: Logger;
  overrides?: ServiceOverrides;
}): Promise<Services> {
  let config = configured;
  // One clear line for an unreachable, missing or unmigrated database, or Redis, before any library gets to be verbose.
  await assertDatabaseReady(config.databaseUrl);
  await checkRedis(config.redisUrl);
  registerSecret(config.clientSecret);

  // One pool per process, DVAULT_DB_POOL_SIZE connections: every repository runs on it (docs/ARCHITECTURE.md#db).
  const pool = createPgPool(config.databaseUrl, overrides.poolSize ?? config.dbPoolSize);
  const redis = createRedis(config.redisUrl);
  await redis.connect();
  // Every user of the services reads the prefix from services.config, settled here once.
  config = await settleRedisPrefix(redis, config);
  const queues = await createQueueBackend(config, { redis, tables: (schema) => new QueueJobsRepository(pool, schema) });
  const now = overrides.now ?? Date.now;
  const pacer = createPacer({
    redis,
    prefix: config.redisPrefix,
    // The same adaptive pace for every base URL: it learns what the service allows (docs/service-behaviour.md#rate-limits).
    startRate: config.apiRate.start,
    minRate: config.apiRate.min,
    maxRate: config.apiRate.max,
    ...overrides.pacer,
  });
  const accounts = new AccountRepository(pool);
  const apiTotals = newTransportStats();
  const unreadableRepo = new UnreadableResponseRepository(pool);
  const unreadable = { record: (report: UnreadableReport) => unreadableRepo.recordUnreadable(report, new Date(now())) };

  let manager: TokenManager | undefined;
  const tokens = (): TokenManager => {
    if (manager) return manager;
    if (!config.clientId) {
      throw new UserError("DVAULT_CLIENT_ID is not set: register an application on the service and set DVAULT_CLIENT_ID and DVAULT_CLIENT_SECRET (see README)");
    }
    const cipher = new TokenCipher(overrides.secretKey ?? loadSecretKey(config, (file) => log.warn({ path: file }, keyCreatedMessage(file))));
    const oauth = new OAuthClient({ serviceBase: config.apiBase, clientId: config.clientId, clientSecret: config.clientSecret, log });
    manager = new TokenManager({ repo: accountTokenStore(accounts), cipher, oauth, redis, redisPrefix: config.redisPrefix, log, now, ...overrides.tokens });
    return manager;
  };

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

  return {
    config,
    log,
    pool,
    redis,
    queues,
    pacer,
    accounts,
    apiTotals,
    now,
    tokens,
    apiFor: async (accountId) => apiOf(await tokens().forAccountId(accountId)),
    publicApi: async () => {
      if (!config.clientId || !config.clientSecret) return undefined;
      return apiOf(await tokens().forClient());
    },
    close: () => closeConnections(queues, redis, pool),
  };
}

/** The queues first (on PostgreSQL their pools), then Redis, then dvault's pool. */
async function closeConnections(queues: QueueBackend, redis: Redis, pool: PgPool): Promise<void> {
  await queues.close().catch(() => undefined);
  await redis.quit().catch(() => redis.disconnect());
  await pool.end().catch(() => undefined);
}
