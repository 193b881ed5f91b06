// Shared set-up for the OAuth and token tests: a fresh database, a Redis prefix, the simulator, and a
// TokenManager wired the way the app wires it, with a fake clock that moves with the simulator's.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Writable } from "node:stream";
import got from "got";
import type { Redis } from "ioredis";
import { createHttpTransport, type HttpTransport } from "../../src/api/http.ts";
import { OAuthClient, type ClientAuthMethod } from "../../src/api/oauth.ts";
import { createPacer } from "../../src/api/pacer.ts";
import type { AccountTokens } from "../../src/api/account-tokens.ts";
import { TokenManager, type TokenManagerOptions } from "../../src/api/token-manager.ts";
import { TokenCipher } from "../../src/crypto/token-cipher.ts";
import { AccountRepository } from "../../src/db/account.repository.ts";
import { createLogger, type Logger } from "../../src/log.ts";
import type { SecretKey } from "../../src/secret-key.ts";
import { startSimulator, type Simulator, type SimulatorOptions } from "../../src/simulator/server.ts";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";
import { createTestRedis, type TestRedis } from "../helpers/redis.ts";
import { TEST_ENGINE } from "../helpers/env.ts";
import type { Coordinator } from "../../src/coord/coordinator.ts";
import { postgresCoordinator } from "../../src/coord/postgres.ts";
import { pacerStoreFor } from "../../src/services.ts";

export const CLIENT_ID = "1001";
export const CLIENT_SECRET = "sim-secret-1001";

/** Every log line written, as text (the secrets scan reads it). */
export type LogCapture = { logger: Logger; lines: string[] };

export function captureLog(): LogCapture {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(...chunk.toString("utf8").split("\n").filter(Boolean));
      done();
    },
  });
  return { logger: createLogger({ level: "trace", destination: stream, pretty: false }), lines };
}

/** A clock the test moves by hand; `advance` moves the simulator's clock by the same amount. */
export type TestClock = { now(): number; advance(ms: number): void };

export function followSimClock(sim: Simulator): TestClock {
  let t = sim.clock.now().getTime();
  return {
    now: () => t,
    advance(ms) {
      t += ms;
      sim.clock.advance(ms);
    },
  };
}

export type Fixture = {
  db: TestDatabase;
  redis: TestRedis;
  sim: Simulator;
  key: SecretKey;
  /** The token manager's folder of grants waiting for the database (a folder of the fixture's own). */
  pendingDir: string;
  log: LogCapture;
  clock: TestClock;
  repo: AccountRepository;
  /** The coordination store the managers' refresh locks live in (Redis, or PostgreSQL alone). */
  coord: Coordinator;
  cipher: TokenCipher;
  oauth: OAuthClient;
  manager: TokenManager;
  newManager(overrides?: Partial<TokenManagerOptions>): TokenManager;
  transport(provider: AccountTokens): HttpTransport;
  tokenRequests(): Array<{ grant: string | undefined; status: number }>;
  close(): Promise<void>;
};

export async function createFixture(
  options: {
    sim?: SimulatorOptions;
    manager?: Partial<TokenManagerOptions>;
    clientAuth?: ClientAuthMethod;
    clientId?: string;
    clientSecret?: string | undefined;
  } = {},
): Promise<Fixture> {
  const db = await createTestDatabase();
  const redis = await createTestRedis();
  const sim = await startSimulator(options.sim ?? {});
  const key: SecretKey = { key: randomBytes(32), source: "file", path: "/tmp/dvault-test/secret.key", created: false };
  const pendingDir = path.join(mkdtempSync(path.join(os.tmpdir(), "dvault-tokens-")), "pending-grants");
  const log = captureLog();
  const clock = followSimClock(sim);
  const repo = new AccountRepository(db.pool);
  const cipher = new TokenCipher(key);
  const oauth = new OAuthClient({
    serviceBase: sim.url,
    clientId: options.clientId ?? CLIENT_ID,
    clientSecret: "clientSecret" in options ? options.clientSecret : CLIENT_SECRET,
    timeoutMs: 5000,
    // Refreshes sent again (docs/service-behaviour.md#unknown-grant-type) wait 10, 20, 40 ms.
    refreshRetryDelayMs: 10,
    log: log.logger,
  });
  // The pace and the refresh lock on the run's engine (Redis, or PostgreSQL alone in the file's database).
  const engine = { engine: TEST_ENGINE, redisPrefix: redis.prefix };
  const coord = TEST_ENGINE === "redis" ? redis.coord : await postgresCoordinator(db.pool);
  const pacer = createPacer({
    store: pacerStoreFor(engine, { pool: db.pool, namespace: redis.prefix, ...(TEST_ENGINE === "redis" ? { redis: redis.redis } : {}) }),
  });
  const newManager = (overrides: Partial<TokenManagerOptions> = {}) =>
    new TokenManager({
      repo,
      pendingDir,
      cipher,
      oauth,
      coord,
      redisPrefix: redis.prefix,
      log: log.logger,
      now: clock.now,
      pollMs: 20,
      ...options.manager,
      ...overrides,
    });
  return {
    db,
    redis,
    sim,
    key,
    pendingDir,
    log,
    clock,
    repo,
    coord,
    cipher,
    oauth,
    manager: newManager(),
    newManager,
    transport: (provider) =>
      createHttpTransport({
        apiBase: sim.url,
        tokens: provider,
        pacer,
        log: log.logger,
        retry: { serverRetries: 0, networkRetries: 0, throttleRetries: 0, baseDelayMs: 1 },
      }),
    tokenRequests: () =>
      sim
        .log()
        .filter((e) => e.route === "/oauth2/token")
        .map((e) => ({
          grant: typeof e.form.grant_type === "string" ? e.form.grant_type : typeof e.query.grant_type === "string" ? e.query.grant_type : undefined,
          status: e.status,
        })),
    async close() {
      await sim.close();
      if (TEST_ENGINE !== "redis") await coord.close();
      await redis.cleanup();
      await db.drop();
      rmSync(path.dirname(pendingDir), { recursive: true, force: true });
    },
  };
}

/** Stores a grant issued by the simulator (as if a login had just happened) and returns its provider. */
export async function seedAccount(
  f: Fixture,
  name = "alice",
  opts: { scopes?: string[] /** 0 or absent: the simulator's owner; n: its n-th other user. */; user?: number } = {},
): Promise<{ provider: AccountTokens; issued: { access_token: string; refresh_token: string } }> {
  // Each account is another simulated user (user ids are unique per account).
  const others = [...f.sim.truth.users.keys()].filter((id) => id !== f.sim.truth.ownerId);
  const userId = !opts.user ? f.sim.truth.ownerId : others[opts.user - 1];
  if (userId === undefined) throw new Error(`the simulator has no user #${opts.user}`);
  const issued = f.sim.issueUserToken({ userId, ...(opts.scopes ? { scopes: opts.scopes } : {}) });
  await f.manager.storeGrant({
    name,
    kind: "user",
    grantType: "authorization_code",
    grant: {
      accessToken: issued.access_token,
      tokenType: "Bearer",
      expiresIn: issued.expires_in,
      refreshToken: issued.refresh_token,
      scopes: issued.scope.split(" "),
    },
    clientAuth: "basic",
    requestedAt: f.clock.now(),
    userId,
    username: f.sim.truth.users.get(userId)?.username ?? "owner",
  });
  return { provider: await f.manager.forAccount(name), issued };
}

/** Plays the browser: asks the authorize endpoint (auto-approve) and returns where it redirects to. */
export async function approveInBrowser(authorizeUrl: string): Promise<string> {
  const res = await got(authorizeUrl, { followRedirect: false, throwHttpErrors: false });
  const location = res.headers.location;
  if (res.statusCode !== 302 || !location) throw new Error(`authorize answered ${res.statusCode}: ${res.body.slice(0, 200)}`);
  return location;
}

/** Every key and value under the prefix, as text (strings, hashes, sorted sets, lists). */
/**
 * Everything dvault keeps outside its mirror on the run's engine, as text to scan: every key and value under the
 * prefix in Redis (dumpRedis), or on PostgreSQL alone every row of every table outside the mirror's own schema
 * (the coordination tables, the pace's, BullMQ's), one JSON text per row.
 */
export async function dumpEngine(f: Fixture): Promise<string[]> {
  if (TEST_ENGINE === "redis") return dumpRedis(f.redis.redis, f.redis.prefix);
  const { rows: tables } = await f.db.pool.query<{ schema: string; name: string }>(
    `SELECT table_schema AS schema, table_name AS name FROM information_schema.tables
      WHERE table_type = 'BASE TABLE' AND table_schema NOT IN ('public', 'pg_catalog', 'information_schema')`,
  );
  const out: string[] = [];
  for (const t of tables) {
    const ident = `"${t.schema.replaceAll('"', '""')}"."${t.name.replaceAll('"', '""')}"`;
    const { rows } = await f.db.pool.query<{ j: string }>(`SELECT row_to_json(r)::text AS j FROM ${ident} r`);
    out.push(`${t.schema}.${t.name}`, ...rows.map((r) => r.j));
  }
  return out;
}

export async function dumpRedis(redis: Redis, prefix: string): Promise<string[]> {
  const out: string[] = [];
  let cursor = "0";
  do {
    const [next, keys] = await redis.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 500);
    cursor = next;
    for (const key of keys) {
      out.push(key);
      const type = await redis.type(key);
      if (type === "string") out.push((await redis.get(key)) ?? "");
      else if (type === "hash") out.push(JSON.stringify(await redis.hgetall(key)));
      else if (type === "zset") out.push(JSON.stringify(await redis.zrange(key, "0", "-1", "WITHSCORES")));
      else if (type === "list") out.push(JSON.stringify(await redis.lrange(key, 0, -1)));
      else if (type === "set") out.push(JSON.stringify(await redis.smembers(key)));
      else out.push(`(${type})`);
    }
  } while (cursor !== "0");
  return out;
}
