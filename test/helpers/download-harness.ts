// The sync harness plus what the downloads need: a temporary archive, a config naming it (and the
// allowance, the disk threshold), downloads deps tuned for tests, and the environment a child process
// needs to run the same worker against the same simulator, database and Redis prefix.
import { randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { Config } from "../../src/config.ts";
import { setDownloadTuning, type DownloadDeps, type DownloadTuning } from "../../src/downloads/deps.ts";
import { runDownloadsOnce, type DownloadSummary, type RunOnceOptions } from "../../src/downloads/run-once.ts";
import { createLogger, type Logger } from "../../src/log.ts";
import type { Services } from "../../src/services.ts";
import type { SimulatorOptions } from "../../src/simulator/server.ts";
import type { SourceDefinition, SourceName } from "../../src/sync/source.ts";
import { TEST_PACE_ENV, testConfig } from "./config.ts";
import { TEST_ENGINE } from "./env.ts";
import { SIM_CLIENT_ID, SIM_CLIENT_SECRET, createSyncHarness, type SyncHarness } from "./sync-harness.ts";

export type DownloadHarness = Omit<SyncHarness, "services"> & {
  services: Services;
  deps: DownloadDeps;
  archiveDir: string;
  /** The environment of this harness's config: a child process builds the same config from it. */
  env: Record<string, string>;
  keyHex: string;
  log: Logger;
  runOnce(opts?: Partial<RunOnceOptions>): Promise<DownloadSummary>;
  /** Runs sync sources so the downloads table has its wanted rows. */
  syncAll(sources: SourceName[]): Promise<void>;
};

export type DownloadHarnessOptions = {
  sim?: SimulatorOptions;
  sources?: readonly SourceDefinition[];
  /** DVAULT_DOWNLOAD_QUOTA (default 10). */
  quota?: number;
  /** DVAULT_MIN_FREE_BYTES (default "0": no guard). */
  minFreeBytes?: string;
  tuning?: DownloadTuning;
  log?: Logger;
  /** An existing folder to archive into (kept afterwards); default a fresh temporary one. */
  archiveDir?: string;
  /** More variables of the config, e.g. a bucket's (startS3Server's env) to store the originals in. */
  env?: Record<string, string>;
  /** A Redis prefix in the hash-tag form ({dvault-test-…}) the default prefix has. */
  hashTaggedPrefix?: boolean;
};

export async function createDownloadHarness(options: DownloadHarnessOptions = {}): Promise<DownloadHarness> {
  const key = randomBytes(32);
  const log = options.log ?? createLogger({ level: "silent" });
  const h = await createSyncHarness({
    ...(options.sim ? { sim: options.sim } : {}),
    ...(options.sources ? { sources: options.sources } : {}),
    log,
    ...(options.hashTaggedPrefix ? { hashTaggedPrefix: true } : {}),
    // The pacer lets one API request per token in flight; waiters re-check every 5 ms instead of 100.
    overrides: { secretKey: { key, source: "env", created: false }, pacer: { pollMs: 5 } },
  });
  const archiveDir = options.archiveDir ?? (await fs.mkdtemp(path.join(os.tmpdir(), "dvault-archive-")));
  const env: Record<string, string> = {
    DATABASE_URL: h.db.url,
    DVAULT_REDIS_PREFIX: h.redis.prefix,
    DVAULT_API_BASE: h.sim.url,
    DVAULT_CLIENT_ID: SIM_CLIENT_ID,
    DVAULT_CLIENT_SECRET: SIM_CLIENT_SECRET,
    DVAULT_ARCHIVE_DIR: archiveDir,
    DVAULT_DOWNLOAD_QUOTA: String(options.quota ?? 10),
    DVAULT_MIN_FREE_BYTES: options.minFreeBytes ?? "0",
    DVAULT_SECRET_KEY: key.toString("hex"),
    ...TEST_PACE_ENV,
    // The engine of the harness's services, so `dvault` children (runDvault) queue where its workers take.
    DVAULT_ENGINE: TEST_ENGINE,
    ...options.env,
  };
  const config: Config = testConfig(env);
  // The harness's services with this config: downloads read the archive, allowance and threshold from it.
  const services: Services = { ...h.services, config };
  const deps = setDownloadTuning(services, { lockTtlMs: 3000, ...options.tuning });
  return {
    ...h,
    services,
    deps,
    archiveDir,
    env,
    keyHex: key.toString("hex"),
    log,
    runOnce: (opts = {}) =>
      runDownloadsOnce({
        services,
        deps,
        log,
        progressEveryMs: 60_000,
        retryDelayMs: 20,
        // A failure that passes is tried again for up to 3 s, from 20 ms apart (src/queue/run-patience.ts).
        patience: { itemMs: 3000, runMs: 10_000, baseMs: 20, capMs: 500 },
        ...opts,
      }),
    async syncAll(sources) {
      for (const source of sources) {
        const result = await h.runSource(source);
        if (result.status === "skipped") throw new Error(`sync ${source} skipped: ${result.reason ?? "?"}`);
      }
    },
    async close() {
      await h.close();
      if (!options.archiveDir) await fs.rm(archiveDir, { recursive: true, force: true });
    },
  };
}

/** The first `n` deviations (by id) whose original the service offers and that are not deleted. */
export async function downloadableOriginals(pool: Pick<DownloadHarness["pool"], "query">, n: number): Promise<string[]> {
  const { rows } = await pool.query<{ deviationid: string }>(
    `SELECT d.deviationid FROM downloads d JOIN deviations v USING (deviationid)
      WHERE d.kind = 'original' AND v.is_downloadable AND NOT v.is_deleted ORDER BY d.deviationid LIMIT $1`,
    [n],
  );
  return rows.map((r) => r.deviationid);
}

/** Originals of the weekly allowance spent, by the ledger, over every account and week. */
export async function originalsUsed(pool: Pick<DownloadHarness["pool"], "query">): Promise<number> {
  const { rows } = await pool.query<{ used: number }>("SELECT coalesce(sum(used), 0)::int AS used FROM download_quota_usage");
  return rows[0]?.used ?? Number.NaN;
}

/**
 * Leaves only the originals of `ids` in the downloads table, parked as failed (with no next attempt, so
 * nothing claims them) until a test wants one.
 */
export async function parkOriginalsOf(pool: Pick<DownloadHarness["pool"], "query">, ids: readonly string[]): Promise<void> {
  await pool.query("DELETE FROM downloads WHERE NOT (kind = 'original' AND deviationid = ANY($1))", [ids]);
  await pool.query("UPDATE downloads SET status = 'failed', next_attempt_at = NULL");
}

/** Marks one deviation's download wanted again and returns the simulator's log position, to read its traffic from. */
export async function wantAgain(h: Pick<DownloadHarness, "pool" | "lastSeq">, id: string): Promise<number> {
  await h.pool.query("UPDATE downloads SET status = 'wanted' WHERE deviationid = $1", [id]);
  return h.lastSeq();
}

/** What the simulator saw for one deviation since `seq`: download calls and CDN answers, in order ("api 200", "cdn 429"). */
export function downloadTraffic(h: Pick<DownloadHarness, "sim">, id: string, seq: number): string[] {
  return h.sim
    .log()
    .filter((e) => e.seq > seq && e.path.toLowerCase().includes(id.toLowerCase()))
    .map((e) => (e.route.endsWith("/deviation/download/{deviationid}") ? `api ${e.status}` : `cdn ${e.status}`));
}
