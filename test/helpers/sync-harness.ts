// A sync source running through the real runner against the simulator over real sockets, on a fresh
// database and Redis prefix, with the simulator's owner logged in (its grant stored encrypted).
import { randomBytes } from "node:crypto";
import type pg from "pg";
import { createLogger, type Logger } from "../../src/log.ts";
import type { SecretKey } from "../../src/secret-key.ts";
import { createServices, type ServiceOverrides, type Services } from "../../src/services.ts";
import { storeOwnerGrant } from "./owner-grant.ts";
import { startSimulator, type Simulator, type SimulatorOptions } from "../../src/simulator/server.ts";
import { runSource, type RunSourceResult } from "../../src/sync/run-source.ts";
import type { SourceDefinition, SourceName, SyncAccount } from "../../src/sync/source.ts";
import { createTestDatabase, type TestDatabase } from "./db.ts";
import { testConfig } from "./config.ts";
import { createTestRedis, type TestRedis } from "./redis.ts";

export const SIM_CLIENT_ID = "1001";
export const SIM_CLIENT_SECRET = "sim-secret-1001";

export type SyncHarness = {
  sim: Simulator;
  db: TestDatabase;
  pool: pg.Pool;
  redis: TestRedis;
  services: Services;
  /** The key the account's tokens are sealed with (the services' override): what a second set of services needs. */
  secretKey: SecretKey;
  account: SyncAccount;
  /** Runs a source through the real runner. */
  runSource(source: SourceName, opts?: { key?: string; full?: boolean; signal?: AbortSignal }): Promise<RunSourceResult>;
  /** API requests (not OAuth, not control) the simulator logged since `seq` (default: since the harness started). */
  apiCallsSince(seq?: number): number;
  /** The simulator's last log sequence number, to measure one run. */
  lastSeq(): number;
  close(): Promise<void>;
};

export type SyncHarnessOptions = {
  sim?: SimulatorOptions;
  /** Sources to run; default: the registry in src/sync/sources/index.ts. */
  sources?: readonly SourceDefinition[];
  log?: Logger;
  overrides?: ServiceOverrides;
  /** The API base dvault is given, once the simulator runs (default its own URL; a proxy in front of it). */
  apiBase?: (sim: Simulator) => string | Promise<string>;
  /** A Redis prefix in the hash-tag form ({dvault-test-…}) the default prefix has. */
  hashTaggedPrefix?: boolean;
};

export async function createSyncHarness(options: SyncHarnessOptions = {}): Promise<SyncHarness> {
  const sim = await startSimulator(options.sim ?? {});
  const db = await createTestDatabase();
  const redis = await createTestRedis({ hashTag: options.hashTaggedPrefix ?? false });
  const log = options.log ?? createLogger({ level: "silent" });
  const config = testConfig({
    DATABASE_URL: db.url,
    DVAULT_REDIS_PREFIX: redis.prefix,
    DVAULT_API_BASE: options.apiBase ? await options.apiBase(sim) : sim.url,
    DVAULT_CLIENT_ID: SIM_CLIENT_ID,
    DVAULT_CLIENT_SECRET: SIM_CLIENT_SECRET,
  });
  // The key the account's tokens are sealed with: a second set of services over the same database needs it too.
  const secretKey = { key: randomBytes(32), source: "env", created: false } as const;
  const services = await createServices({
    config,
    log,
    overrides: {
      now: () => sim.clock.now().getTime(),
      secretKey,
      transport: { retry: { baseDelayMs: 10 } },
      // A refused refresh is sent again 3 times (docs/service-behaviour.md#refresh-refused): 5, 10 and 20 ms apart here,
      // not 0.5, 1 and 2 s, before the account is marked needs_reauth.
      oauth: { refreshRetryDelayMs: 5 },
      ...options.overrides,
    },
  });
  const sources = new Map<SourceName, SourceDefinition>((options.sources ?? (await import("../../src/sync/sources/index.ts")).SOURCES).map((s) => [s.name, s]));
  const account = await storeOwnerGrant(services, sim);
  const startSeq = lastLogSeq(sim);
  return {
    sim,
    db,
    pool: services.pool,
    redis,
    services,
    secretKey,
    account,
    runSource: (source, opts = {}) =>
      runSource(
        { accountId: account.id, source, ...(opts.key !== undefined ? { key: opts.key } : {}), ...(opts.full !== undefined ? { full: opts.full } : {}) },
        { services, sources, ...(opts.signal ? { signal: opts.signal } : {}) },
      ),
    apiCallsSince: (seq = startSeq) => sim.log().filter((e) => e.seq > seq && e.route.startsWith("/api/v1/oauth2")).length,
    lastSeq: () => lastLogSeq(sim),
    async close() {
      await services.close();
      await sim.close();
      await redis.cleanup();
      await db.drop();
    },
  };
}

function lastLogSeq(sim: Simulator): number {
  const log = sim.log();
  return log.length ? (log[log.length - 1]?.seq ?? 0) : 0;
}

/** A minute later on the simulator's clock, one run of a source, with its API calls and the routes it asked ("route status"). */
export async function runSourceLater(
  h: Pick<SyncHarness, "sim" | "runSource" | "apiCallsSince" | "lastSeq">,
  source: SourceName,
  opts: { key?: string; full?: boolean } = {},
): Promise<{ result: RunSourceResult; calls: number; routes: string[] }> {
  h.sim.clock.advance(60_000);
  const seq = h.lastSeq();
  const result = await h.runSource(source, opts);
  return {
    result,
    calls: h.apiCallsSince(seq),
    routes: h.sim
      .log()
      .filter((e) => e.seq > seq)
      .map((e) => `${e.route} ${e.status}`),
  };
}
