// The fault suite's harness: the sync harness with fast pacing and retries (so hostile runs converge in
// seconds), an archive and download deps, the environment a child worker process needs, and loops that
// drive every source and the downloads until they converge (bounded: a scenario that never converges fails).
// Downloads that fail are retried by dvault's own schedule (src/downloads/retry.ts): the loop only moves
// the simulated clock on to their next attempt; it never resets a row itself.
import { TEST_ENGINE } from "../helpers/env.ts";
import { randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { setTimeout as pause } from "node:timers/promises";
import { setDownloadTuning, type DownloadDeps } from "../../src/downloads/deps.ts";
import { runDownloadsOnce, type DownloadSummary } from "../../src/downloads/run-once.ts";
import { createLogger } from "../../src/log.ts";
import type { ServiceOverrides, Services } from "../../src/services.ts";
import type { DatasetOptions } from "../../src/simulator/dataset.ts";
import type { Simulator, SimulatorOptions } from "../../src/simulator/server.ts";
import { runSource } from "../../src/sync/run-source.ts";
import type { SourceDefinition, SourceName } from "../../src/sync/source.ts";
import { SOURCES } from "../../src/sync/sources/index.ts";
import { TEST_PACE_ENV, testConfig } from "../helpers/config.ts";
import { SIM_CLIENT_ID, SIM_CLIENT_SECRET, createSyncHarness, type SyncHarness } from "../helpers/sync-harness.ts";

/** Small enough that a full sync plus downloads takes a second or two. */
export const SMALL_DATASET: DatasetOptions = {
  deviations: 14,
  galleryFolders: 2,
  collectionFolders: 2,
  favourites: 4,
  notes: 8,
  noteFolders: 1,
  messages: 12,
  feedItems: 4,
  watchers: 3,
  friends: 3,
  trackedUsers: 0,
  trackedUserDeviations: 0,
  statuses: 2,
};

/** Every account-wide source (the keyed "tracked" source needs a tracked user; the dataset has none). */
export const FAULT_SOURCES: ReadonlyMap<SourceName, SourceDefinition> = new Map(SOURCES.filter((s) => s.name !== "tracked").map((s) => [s.name, s]));

/** Short enough that a killed process's sync lock frees itself quickly. */
export const FAULT_LOCK_TTL_MS = 1500;

/** Backoff kept to milliseconds: the scenarios test convergence, not the production delays. */
export const FAST_OVERRIDES: ServiceOverrides = {
  // A killed process's pacer permit frees itself within 1 s (requests here answer in milliseconds).
  pacer: { pollMs: 5, holdMs: 5, maxHoldMs: 50, lockTtlMs: 1000 },
  transport: { retry: { baseDelayMs: 5 } },
};

export type FaultHarness = SyncHarness & {
  deps: DownloadDeps;
  archiveDir: string;
  /** The environment of this harness's config, for a child worker process. */
  env: Record<string, string>;
  sourceMap: ReadonlyMap<SourceName, SourceDefinition>;
};

/** The configuration environment of a fault scenario: the simulator's client, a quota the dataset never reaches, no disk threshold. */
export function faultEnv(a: {
  databaseUrl: string;
  redisPrefix: string;
  simUrl: string;
  archiveDir: string;
  key: Buffer;
  redisUrl?: string;
  extra?: Record<string, string> | undefined;
}): Record<string, string> {
  return {
    DATABASE_URL: a.databaseUrl,
    ...(a.redisUrl ? { REDIS_URL: a.redisUrl } : {}),
    // The run's engine, so child workers queue where the harness's services do.
    DVAULT_ENGINE: TEST_ENGINE,
    DVAULT_REDIS_PREFIX: a.redisPrefix,
    DVAULT_API_BASE: a.simUrl,
    DVAULT_CLIENT_ID: SIM_CLIENT_ID,
    DVAULT_CLIENT_SECRET: SIM_CLIENT_SECRET,
    DVAULT_ARCHIVE_DIR: a.archiveDir,
    DVAULT_DOWNLOAD_QUOTA: "1000",
    DVAULT_MIN_FREE_BYTES: "0",
    DVAULT_SECRET_KEY: a.key.toString("hex"),
    ...TEST_PACE_ENV,
    ...a.extra,
  };
}

export async function createFaultHarness(
  opts: { sim?: SimulatorOptions; overrides?: ServiceOverrides; env?: Record<string, string>; apiBase?: (sim: Simulator) => string | Promise<string> } = {},
): Promise<FaultHarness> {
  const key = randomBytes(32);
  const h = await createSyncHarness({
    sim: { dataset: SMALL_DATASET, downloadQuota: 1000, ...opts.sim },
    overrides: { ...FAST_OVERRIDES, ...opts.overrides, secretKey: { key, source: "env", created: false } },
    ...(opts.apiBase ? { apiBase: opts.apiBase } : {}),
  });
  const archiveDir = await fs.mkdtemp(path.join(os.tmpdir(), "dvault-faults-"));
  const env = faultEnv({ databaseUrl: h.db.url, redisPrefix: h.redis.prefix, simUrl: h.services.config.apiBase, archiveDir, key, extra: opts.env });
  const services: Services = { ...h.services, config: testConfig(env) };
  const deps = setDownloadTuning(services, { lockTtlMs: FAULT_LOCK_TTL_MS });
  return {
    ...h,
    services,
    deps,
    archiveDir,
    env,
    sourceMap: FAULT_SOURCES,
    async close() {
      await h.close();
      await fs.rm(archiveDir, { recursive: true, force: true });
    },
  };
}

/**
 * Runs every source until each has finished ok or degraded; a failure (a fault that outlasted the
 * transport's retries) or a lock still held by a killed process is retried, at most `attempts` times.
 */
export async function syncUntilConverged(args: {
  services: Services;
  accountId: number;
  sources: ReadonlyMap<SourceName, SourceDefinition>;
  attempts?: number;
  /** Full sweeps (every folder and page walked again), as the weekly sweep does. */
  full?: boolean;
}): Promise<{ retries: number }> {
  let retries = 0;
  for (const name of args.sources.keys()) {
    for (let attempt = 1; ; attempt++) {
      const outcome = await runSource(
        { accountId: args.accountId, source: name, ...(args.full ? { full: true } : {}) },
        { services: args.services, sources: args.sources, lockTtlMs: FAULT_LOCK_TTL_MS },
      ).catch((err: unknown) => err as Error);
      if (!(outcome instanceof Error) && outcome.status !== "skipped") break;
      if (attempt >= (args.attempts ?? 40)) {
        throw new Error(`source ${name} did not converge: ${outcome instanceof Error ? outcome.message : outcome.reason}`);
      }
      retries++;
      await pause(outcome instanceof Error ? 5 : 200);
    }
  }
  return { retries };
}

/** Moves the simulator's clock on through its control API (works from any process, e.g. a child worker). */
export async function advanceSimClock(apiBase: string, ms: number): Promise<Date> {
  const res = await fetch(`${apiBase}/_sim/clock/advance`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ ms }) });
  if (!res.ok) throw new Error(`the simulator refused to advance its clock: HTTP ${res.status} ${await res.text()}`);
  return new Date(((await res.json()) as { now: string }).now);
}

/**
 * Runs the downloads until none is wanted, queued or failed any more. Files that failed on a transient
 * fault are left failed by dvault with a next attempt (src/downloads/retry.ts); between rounds the clock
 * moves on to the earliest of them, so the next round is dvault's own retry, due by its own schedule.
 * `advance` moves the clock that `services.now` follows (default: the simulator's, through its control
 * API — right when services.now is the simulator's clock, as in createFaultHarness). A permanent failure
 * (failed with no next attempt) never converges: it fails at once, with the row's error.
 */
export async function downloadUntilConverged(args: {
  services: Services;
  deps: DownloadDeps;
  rounds?: number;
  advance?: (ms: number) => unknown;
  /** A fixed number of attempts per file in each round instead of the run's patience (src/queue/run-patience.ts). */
  attempts?: number;
}): Promise<{ rounds: number; last: DownloadSummary; retries: number; advancedMs: number }> {
  const log = createLogger({ level: "silent" });
  const advance = args.advance ?? ((ms: number) => advanceSimClock(args.services.config.apiBase, ms));
  let retries = 0;
  let advancedMs = 0;
  for (let round = 1; ; round++) {
    const last = await runDownloadsOnce({
      services: args.services,
      deps: args.deps,
      log,
      progressEveryMs: 60_000,
      retryDelayMs: 5,
      busyWaitMs: 10_000,
      // A failure that passes is tried again within the round for up to 5 s, from 5 ms apart.
      patience: { itemMs: 5000, runMs: 20_000, baseMs: 5, capMs: 500 },
      ...(args.attempts !== undefined ? { attempts: args.attempts } : {}),
    });
    const { rows } = await args.services.pool.query<{ todo: number; retrying: number; next: Date | null }>(
      `SELECT count(*) FILTER (WHERE status IN ('wanted', 'queued'))::int AS todo,
              count(*) FILTER (WHERE status = 'failed' AND next_attempt_at IS NOT NULL)::int AS retrying,
              min(next_attempt_at) FILTER (WHERE status = 'failed') AS next
       FROM downloads`,
    );
    const { todo, retrying, next } = rows[0]!;
    const { rows: permanent } = await args.services.pool.query<{ deviationid: string; kind: string; last_error: string | null }>(
      "SELECT deviationid, kind::text AS kind, last_error FROM downloads WHERE status = 'failed' AND next_attempt_at IS NULL LIMIT 3",
    );
    if (permanent.length > 0) throw new Error(`downloads failed for good (never retried): ${JSON.stringify(permanent)}`);
    if (todo === 0 && retrying === 0) return { rounds: round, last, retries, advancedMs };
    if (round >= (args.rounds ?? 20)) {
      throw new Error(
        `downloads did not converge: ${todo} wanted or queued, ${retrying} waiting for a retry; last run ${JSON.stringify(last.failures.slice(0, 3))}`,
      );
    }
    if (retrying > 0 && next) {
      // dvault's own schedule makes them due: move the clock to the earliest next attempt, not past it.
      const waitMs = Math.max(0, next.getTime() - args.services.now());
      await advance(waitMs);
      if (args.services.now() < next.getTime())
        throw new Error("downloadUntilConverged: advance did not move services.now (pass an advance that moves the clock services.now follows)");
      advancedMs += waitMs;
      retries += retrying;
    }
  }
}
