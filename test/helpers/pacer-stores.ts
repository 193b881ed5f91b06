// The pacer's two stores (src/api/pacer-store.ts) as test fixtures, so each pacer test runs on both: Redis under
// a prefix of the file's own, PostgreSQL on a database of the file's own (schema dvault_pacer) under a namespace
// of its own. Each answers what a test asks of the stored state (queued waiters, listeners, expiries) its way.
import { randomBytes } from "node:crypto";
import type { PacerStore } from "../../src/api/pacer-store.ts";
import { redisPacerStore } from "../../src/api/pacer-redis-store.ts";
import { sqlPacerStore } from "../../src/api/pacer-sql-store.ts";
import { createPgPool, type PgPool } from "../../src/db/connect.ts";
import { pacerRows } from "../../src/db/pacer-rows.ts";
import { createTestDatabase, type TestDatabase } from "./db.ts";
import { REDIS_IN_RUN } from "./needs-redis.ts";
import { createTestRedis, type TestRedis } from "./redis.ts";

export type PacerEngine = "redis" | "postgres";
/** The engines the pacer tests run on: both, or on a run with no Redis (test/helpers/test-servers.ts says so) PostgreSQL alone. */
export const PACER_ENGINES: readonly PacerEngine[] = REDIS_IN_RUN ? ["redis", "postgres"] : ["postgres"];

export type PacerStores = {
  engine: PacerEngine;
  /** The URL a child process connects to (test/helpers/pacer-holder.ts, pacer-runner.ts). */
  url: string;
  /** The file's own namespace (Redis: its prefix). */
  namespace: string;
  /** A new store on the file's connection (Redis) or pool (PostgreSQL) under `namespace`. */
  store(namespace?: string): PacerStore;
  /** A store on a connection of its own, as another process has. */
  separate(namespace?: string): Promise<{ store: PacerStore; close(): Promise<void> }>;
  /** Waiters in the key's queue. */
  queued(key: string, namespace?: string): Promise<number>;
  /** Connections listening for the key's releases. */
  listeners(key: string, namespace?: string): Promise<number>;
  /** How long from `now` the key's state and its holders are kept (Redis: the keys' TTLs). */
  keptFor(key: string, now: number): Promise<{ stateMs: number; holdersMs: number }>;
  cleanup(): Promise<void>;
};

/** The fixture of `engine`; call in beforeAll, clean up in afterAll. */
export async function createPacerStores(engine: PacerEngine): Promise<PacerStores> {
  return engine === "redis" ? redisStores(await createTestRedis()) : postgresStores(await createTestDatabase());
}

function redisStores(r: TestRedis): PacerStores {
  const base = (key: string, ns: string) => `${ns}:pacer:${key}`;
  return {
    engine: "redis",
    url: r.url,
    namespace: r.prefix,
    store: (ns = r.prefix) => redisPacerStore(r.redis, ns),
    async separate(ns = r.prefix) {
      const other = r.redis.duplicate();
      await other.connect();
      const store = redisPacerStore(other, ns);
      const close = async () => {
        await store.close();
        await other.quit();
      };
      return { store, close };
    },
    queued: (key, ns = r.prefix) => r.redis.zcard(`${base(key, ns)}:queue`),
    listeners: async (key, ns = r.prefix) => Number((await r.redis.pubsub("NUMSUB", `${base(key, ns)}:released`))[1]),
    async keptFor(key) {
      const [stateMs, holdersMs] = await Promise.all([r.redis.pttl(base(key, r.prefix)), r.redis.pttl(`${base(key, r.prefix)}:holders`)]);
      return { stateMs, holdersMs };
    },
    cleanup: () => r.cleanup(),
  };
}

function postgresStores(db: TestDatabase): PacerStores {
  const namespace = `dvault-test-${randomBytes(5).toString("hex")}`;
  const pools: PgPool[] = [];
  const rows = (ns: string) => pacerRows(db.pool, { namespace: ns });
  return {
    engine: "postgres",
    url: db.url,
    namespace,
    store: (ns = namespace) => sqlPacerStore(rows(ns)),
    async separate(ns = namespace) {
      const pool = createPgPool(db.url, 2);
      pools.push(pool);
      const store = sqlPacerStore(pacerRows(pool, { namespace: ns }));
      const close = async () => {
        await store.close();
        await pool.end();
      };
      return { store, close };
    },
    queued: async (key, ns = namespace) => Object.keys((await rows(ns).read(key))?.queue ?? {}).length,
    // One channel serves every key: the sessions of this database that listen on it.
    async listeners() {
      const r = await db.pool.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN dvault_pacer%'");
      return Number(r.rows[0]?.n ?? 0);
    },
    async keptFor(key, now) {
      const row = await rows(namespace).read(key);
      const holders = Object.values(row?.holders ?? {});
      return { stateMs: row?.stateTtlMs ?? -2, holdersMs: holders.length ? Math.max(...holders) - now : -2 };
    },
    async cleanup() {
      // The database is the file's own: dropping it drops the namespace too.
      await Promise.all(pools.map((p) => p.end().catch(() => undefined)));
      await db.drop();
    },
  };
}

/** A Redis prefix and a database of the file's own at once, for tests that compare or choose between the engines. */
export async function createBothEngines(): Promise<{ r: TestRedis; db: TestDatabase; cleanup(): Promise<void> }> {
  const [r, db] = await Promise.all([createTestRedis(), createTestDatabase()]);
  return { r, db, cleanup: async () => void (await Promise.all([r.cleanup(), db.drop()])) };
}
