// The composition root shared by the worker, `dvault sync`, the other commands and the medium tests:
// connections, the pacer, the token manager, and an API client per account. Nothing here does work.
import type { Redis } from "ioredis";
import type { DaClient } from "./api/client.ts";
import type { UnreadableReport } from "./api/transport.ts";
import type { HttpTransport, HttpTransportOptions, TransportStats } from "./api/http.ts";
import { newTransportStats } from "./api/http/options.ts";
import { OAuthClient } from "./api/oauth.ts";
import { createPacer, type Pacer, type PacerOptions, type PacerStore } from "./api/pacer.ts";
import { redisPacerStore } from "./api/pacer-redis-store.ts";
import { sqlPacerStore } from "./api/pacer-sql-store.ts";
import type { AccountTokens } from "./api/account-tokens.ts";
import { TokenManager, type TokenManagerOptions } from "./api/token-manager.ts";
import type { Config } from "./config.ts";
import { TokenCipher } from "./crypto/token-cipher.ts";
import { AccountRepository } from "./db/account.repository.ts";
import { accountTokenStore } from "./db/account-token-store.ts";
import { createPgPool, type PgPool } from "./db/connect.ts";
import { pacerRows } from "./db/pacer-rows.ts";
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
  pacer?: Partial<Omit<PacerOptions, "store">>;
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

/** The namespace of an install's pace in PostgreSQL (its own database keeps it apart from other installs'). */
export const PACER_NAMESPACE = "dvault";

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
  const now = overrides.now ?? Date.now;
  const pacer = createPacer({
    store: redisPacerStore(redis, config.redisPrefix),
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
    async close() {
      await pacer.close();
      await redis.quit().catch(() => redis.disconnect());
      await pool.end().catch(() => undefined);
    },
  };
}
