// `dvault status`: the report over a synced mirror validates against its schema (also through the real
// CLI, --json), says what is wrong and how to fix it, reads queues, downloads, disk and heartbeats, and
// every field of the stable JSON form is documented in docs/status.md.
import { execFile } from "node:child_process";
import { readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPacer } from "../../src/api/pacer.ts";
import { formatStatus } from "../../src/cli/status.ts";
import { overviewPage } from "../../src/http/pages/overview.ts";
import { clearMovedTo, noteMovedTo } from "../../src/queue/holder.ts";
import { QueueAdmin } from "../../src/queue/queue-admin.ts";
import { collectStatus, fixFor, serviceWeekStart } from "../../src/status/collect.ts";
import {
  AccountStatusSchema,
  ArchiveStatusSchema,
  DownloadsStatusSchema,
  EngineStatusSchema,
  NotArchivableArtistSchema,
  NotArchivableReasonSchema,
  NotArchivableSchema,
  QueueStatusSchema,
  PacingStatusSchema,
  QuotaStatusSchema,
  SourceStatusSchema,
  StatusReportSchema,
  type StatusReport,
  WorkerStatusSchema,
} from "../../src/status/schema.ts";
import { archiveFile, artworkPng } from "../helpers/archive-fixtures.ts";
import { HEAVY_PACKAGES, readLoaded, RECORD_IMPORTS } from "../helpers/loaded-modules.ts";
import { SIM_CLIENT_ID, SIM_CLIENT_SECRET, createSyncHarness, type SyncHarness } from "../helpers/sync-harness.ts";
import { downloadsPausedKey } from "../../src/coord/downloads-pause.ts";
import { pacerStoreFor } from "../../src/services.ts";
import { TEST_ENGINE } from "../helpers/env.ts";
import { itNeedingRedis } from "../helpers/needs-redis.ts";

const run = promisify(execFile);
let h: SyncHarness;
let queues: QueueAdmin;
const archiveDir = path.join(os.tmpdir(), `dvault-status-${process.pid}`);

beforeAll(async () => {
  h = await createSyncHarness({ sim: { seed: 3, dataset: { deviations: 30, notes: 10, messages: 10, favourites: 5 } } });
  await h.runSource("gallery");
  await h.runSource("notes");
  // A client-credentials account, as `dvault auth client` (or a first static sync) creates it.
  await h.services.tokens().requestClientToken();
  queues = new QueueAdmin(h.services.queues);
});
afterAll(async () => {
  await queues?.close();
  await h?.close();
});

function deps() {
  return { ...h.services, config: { ...h.services.config, archiveDir }, queues, tokens: h.services.tokens };
}

describe(collectStatus.name, () => {
  it("reports accounts, sources, queues, downloads, archive and workers, valid against the schema", async () => {
    const prefix = h.services.config.redisPrefix;
    const waiting = { jobId: "status-waiting", timestamp: Date.now() - 90_000 };
    await queues.queue("sync").add("sync.source", { accountId: h.account.id, source: "gallery", key: "" }, waiting);
    await h.services.coord.put(`${prefix}:heartbeat:testhost:4242`, JSON.stringify({ id: "testhost:4242", at: new Date().toISOString() }), { ttlMs: 60_000 });
    const { rows } = await h.pool.query<{ deviationid: string }>("SELECT deviationid FROM deviations WHERE type = 'image' ORDER BY deviationid LIMIT 2");
    const files = [];
    for (const [i, r] of rows.entries()) files.push(await archiveFile(h.pool, archiveDir, r.deviationid, artworkPng(i + 1, 16, 16)));

    const report = StatusReportSchema.parse(await collectStatus(deps()));
    expect(report.problems).toEqual([]);
    // The user's grant, and the client-credentials identity the sync used for public endpoints.
    expect(report.accounts.filter((a) => a.kind === "user")).toEqual([
      expect.objectContaining({ name: h.account.name, state: "ok", needsReauth: false, fix: null, hasRefreshToken: true, refreshTokenAgeDays: 0 }),
    ]);
    expect(report.accounts.find((a) => a.kind === "client")).toMatchObject({ name: "client:1001", hasRefreshToken: false, fix: null });
    expect(report.accounts[0]!.accessExpiresInS).toBeGreaterThan(0);
    const gallery = report.sources.find((s) => s.source === "gallery")!;
    expect(gallery).toMatchObject({ account: h.account.name, lastResult: "ok", inProgress: false, unavailableReason: null });
    expect(gallery.items.new).toBeGreaterThan(0);
    expect(gallery.lastCompleteSweepAt).not.toBeNull();
    expect(Date.parse(gallery.nextRunAt!)).toBeGreaterThan(Date.parse(gallery.lastRunAt!));
    expect(report.sources.map((s) => s.source).sort()).toEqual(["gallery", "notes"]);
    expect(report.queues.map((q) => q.name)).toEqual(["sync", "downloads", "maintenance", "digest"]);
    expect(report.queues[0]).toMatchObject({ name: "sync", waiting: 1, paused: false });
    // The job waits since 90 s before the report; a slow run adds seconds, never removes them.
    expect(report.queues[0]!.oldestWaitingS).toBeGreaterThanOrEqual(90);
    expect(report.queues[0]!.oldestWaitingS).toBeLessThan(150);
    expect(report.downloads.byStatus.done).toBe(2);
    expect(report.downloads.bytesStored).toBe(files[0]!.size + files[1]!.size);
    expect(report.downloads.quota).toEqual([
      expect.objectContaining({
        account: h.account.name,
        used: 0,
        limit: h.services.config.downloadQuota,
        limitFrom: "configured",
        configuredLimit: h.services.config.downloadQuota,
        remaining: h.services.config.downloadQuota,
      }),
    ]);
    expect(report.archive).toMatchObject({ dir: archiveDir, exists: true, files: 2, sizeBytes: files[0]!.size + files[1]!.size });
    expect(report.archive).toMatchObject({ storage: "local", store: archiveDir });
    expect(report.archive.freeBytes).toBeGreaterThan(0);
    expect(report.workers).toEqual([expect.objectContaining({ id: "testhost:4242", host: "testhost", pid: 4242 })]);
    // The syncs paced the user's key; nothing refused them, so no time was lost.
    const userKey = `${SIM_CLIENT_ID}:${h.sim.truth.ownerId}`;
    expect(report.pacing.find((p) => p.key === userKey)).toMatchObject({ refusedRate: null, heldUntil: null, throttledS: 0 });
    expect(report.pacing.find((p) => p.key === userKey)?.rate).toBeGreaterThan(0);
    expect(formatStatus(report)).toMatch(new RegExp(`API pace[\\s\\S]*${userKey}`));
  });

  it("names the bucket, not a folder, when the files are kept in S3, and never its credentials", async () => {
    const storage = {
      kind: "s3" as const,
      bucket: "art",
      prefix: "dvault/",
      endpoint: "http://s3.internal:9000",
      region: "us-east-1",
      forcePathStyle: true,
      presign: false,
      presignTtlSeconds: 300,
      credentials: { accessKeyId: "AKIDSTATUS", secretAccessKey: "status-secret-never-shown" },
    };
    const report = await collectStatus({ ...deps(), config: { ...deps().config, storage } });
    expect(report.archive).toMatchObject({ storage: "s3", store: "s3://art/dvault/ at s3.internal:9000", dir: archiveDir });
    const text = formatStatus(report);
    expect(text).toContain("s3://art/dvault/ at s3.internal:9000");
    expect(text).toContain(`working folder (partial files) ${archiveDir}`);
    expect(`${text}${JSON.stringify(report)}`).not.toMatch(/status-secret-never-shown|AKIDSTATUS/);
  });

  it("shows a throttled key's rate, learned rate and time lost", async () => {
    const key = "status-test:held";
    // A clock that skips its waits: each refusal comes when the hold before it has passed.
    let skipped = 0;
    const clock = { now: () => Date.now() + skipped, sleep: async (ms: number) => void (skipped += ms) };
    // The store the report reads (the engine's: services.pacer's).
    const store = pacerStoreFor(h.services.config, { pool: h.services.pool, ...(TEST_ENGINE === "redis" ? { redis: h.services.redis } : {}) });
    const pacer = createPacer({ store, holdMs: 60_000, jitter: 0, clock });
    // Three refusals in a row (held 1, 2, 4 min): the third cuts the rate.
    for (let i = 0; i < 3; i++) await (await pacer.acquire(key, { maxWaitMs: 300_000 })).release("throttled");
    const report = await collectStatus(deps());
    const pacing = report.pacing.find((p) => p.key === key);
    expect(pacing).toMatchObject({ refusedRate: 2, rate: 1, learnedRate: 1, throttledS: 420 });
    expect(Date.parse(pacing!.heldUntil!)).toBeGreaterThan(Date.now() + 400_000);
    expect(formatStatus(report)).toMatch(/status-test:held\s+1\.0\/s\s+1\.0\/s\s+2\.0\/s\s+7 min\s+until/);
    // The dashboard's overview shows the same row.
    expect(overviewPage(report)).toMatch(
      /<h2>API pace<\/h2>[\s\S]*<td data-label="key">status-test:held<\/td><td data-label="rate" class="num">1\.0\/s<\/td><td data-label="learned" class="num">1\.0\/s<\/td><td data-label="last refused at" class="num">2\.0\/s<\/td><td data-label="lost to throttling" class="num">7 min<\/td>/,
    );
  });

  it("counts the overview's files archived as the archive's files: one three rows share once, a kept rendition too", async () => {
    const { rows } = await h.pool.query<{ deviationid: string }>(
      "SELECT deviationid FROM deviations WHERE type = 'image' AND deviationid NOT IN (SELECT deviationid FROM downloads WHERE path IS NOT NULL) ORDER BY deviationid LIMIT 4",
    );
    const [a, b, c, e] = rows.map((r) => r.deviationid);
    const same = artworkPng(31, 16, 16);
    try {
      await archiveFile(h.pool, archiveDir, a!, same);
      await archiveFile(h.pool, archiveDir, b!, same);
      await archiveFile(h.pool, archiveDir, e!, same);
      await archiveFile(h.pool, archiveDir, c!, artworkPng(32, 16, 16));
      await h.pool.query("UPDATE downloads SET status = 'not_downloadable' WHERE deviationid = $1", [c]);
      const report = await collectStatus(deps());
      const d = report.downloads.byStatus;
      // The rows (done and degraded) and the files differ here: the case where one number was shown for the other.
      expect((d.done ?? 0) + (d.degraded ?? 0)).not.toBe(report.archive.files);
      const page = overviewPage(report);
      expect(page).toContain(`<b>${report.archive.files}</b><span>files archived</span>`);
      expect(page).toContain(`in ${report.archive.files} files`);
      expect(formatStatus(report)).toContain(`in ${report.archive.files} files`);
    } finally {
      await h.pool.query("DELETE FROM downloads WHERE deviationid = ANY($1)", [[a, b, c, e]]);
    }
  });

  it("says which account needs re-authorization and the command that fixes it", async () => {
    await h.pool.query("UPDATE accounts SET state = 'needs_reauth', state_reason = 'the service rejected its refresh token' WHERE id = $1", [h.account.id]);
    try {
      const report = await collectStatus(deps());
      expect(report.accounts.find((a) => a.id === h.account.id)).toMatchObject({
        state: "needs_reauth",
        needsReauth: true,
        fix: `dvault auth login --account ${h.account.name}`,
      });
      const text = formatStatus(report);
      expect(text).toContain("NEEDS_REAUTH");
      expect(text).toContain(`fix: dvault auth login --account ${h.account.name}`);
    } finally {
      await h.pool.query("UPDATE accounts SET state = 'ok', state_reason = NULL WHERE id = $1", [h.account.id]);
    }
  });

  it("reports deferred downloads with the next window and a paused queue", async () => {
    const { rows } = await h.pool.query<{ deviationid: string }>(
      "SELECT d.deviationid FROM deviations d WHERE NOT EXISTS (SELECT 1 FROM downloads dl WHERE dl.deviationid = d.deviationid AND dl.status = 'done') ORDER BY 1 LIMIT 1",
    );
    await h.pool.query(
      `INSERT INTO downloads (deviationid, kind, status) VALUES ($1, 'original', 'deferred_quota')
       ON CONFLICT (deviationid, kind) DO UPDATE SET status = 'deferred_quota'`,
      [rows[0]!.deviationid],
    );
    await queues.pause("digest");
    const pausedKey = downloadsPausedKey(h.services.config.redisPrefix);
    await h.services.coord.put(
      pausedKey,
      JSON.stringify({ since: new Date().toISOString(), reason: "downloads paused: 1.2 GiB free, below DVAULT_MIN_FREE_BYTES" }),
    );
    try {
      const report = await collectStatus(deps());
      expect(report.downloads.deferredByQuota).toBe(1);
      // No scheduled attempt: the next service week, counted from the report's clock (the simulator's here).
      expect(report.downloads.nextWindowAt).toBe(new Date(serviceWeekStart(Date.parse(report.generatedAt)).getTime() + 7 * 86_400_000).toISOString());
      expect(report.queues.find((q) => q.name === "digest")?.paused).toBe(true);
      expect(formatStatus(report)).toMatch(/1 deferred by the weekly quota; next window/);
      // A window that opened with no run since: its files are due, not waiting for it ('next window … 3 h ago').
      const passed = { ...report, downloads: { ...report.downloads, nextWindowAt: new Date(Date.parse(report.generatedAt) - 3 * 3600_000).toISOString() } };
      expect(formatStatus(passed)).toMatch(/1 deferred by the weekly quota; the earliest window opened .* \(3 h ago\): its files are due now/);
      expect(formatStatus(passed)).not.toMatch(/next window/);
      expect(report.downloads).toMatchObject({ paused: true, pausedReason: "downloads paused: 1.2 GiB free, below DVAULT_MIN_FREE_BYTES" });
      expect(formatStatus(report)).toContain("Downloads (PAUSED: downloads paused: 1.2 GiB free");
    } finally {
      await h.services.coord.remove(pausedKey);
      await queues.resume("digest");
    }
  });

  it("keeps reporting when a part fails, and names it", async () => {
    const broken = { ...deps(), queues: { counts: () => Promise.reject(new Error("queue store unreachable")) } as unknown as QueueAdmin };
    const report = StatusReportSchema.parse(await collectStatus(broken));
    expect(report.problems).toEqual(["queues: queue store unreachable"]);
    expect(report.accounts.map((a) => a.name)).toContain(h.account.name);
  });

  /** The environment `bin/dvault.js status` runs with: this harness's database, Redis, simulator and archive. */
  const cliEnv = () => ({
    PATH: process.env.PATH ?? "",
    HOME: "/nonexistent-home",
    DATABASE_URL: h.db.url,
    REDIS_URL: h.redis.url,
    DVAULT_ENGINE: TEST_ENGINE,
    DVAULT_REDIS_PREFIX: h.services.config.redisPrefix,
    DVAULT_API_BASE: h.sim.url,
    DVAULT_CLIENT_ID: SIM_CLIENT_ID,
    DVAULT_CLIENT_SECRET: SIM_CLIENT_SECRET,
    DVAULT_ARCHIVE_DIR: archiveDir,
    LOG_LEVEL: "silent",
  });

  it("prints the same report through the CLI, --json valid against the schema", async () => {
    const { stdout } = await run(process.execPath, ["bin/dvault.js", "status", "--json"], {
      env: cliEnv(),
      timeout: 30_000,
    });
    const report = StatusReportSchema.parse(JSON.parse(stdout));
    expect(report.accounts.map((a) => a.name)).toEqual([h.account.name, "client:1001"]);
    expect(report.sources.length).toBe(2);
    expectEngine(report, TEST_ENGINE);
  });

  it("gives no report when Redis does not answer at the start: one line naming it, exit 3 (docs/status.md)", async () => {
    const failed = await run(process.execPath, ["bin/dvault.js", "status", "--json"], {
      env: { ...cliEnv(), DVAULT_ENGINE: "redis", REDIS_URL: "redis://127.0.0.1:1" },
      timeout: 30_000,
    }).catch((err: { code: number; stdout: string; stderr: string }) => err);
    expect(failed).toMatchObject({ code: 3, stdout: "" });
    expect((failed as { stderr: string }).stderr).toMatch(/^dvault: cannot reach Redis at redis:\/\/127\.0\.0\.1:1 \(ECONNREFUSED\)\. Start it .*\n$/);
  });

  /** The engine block of a report made on `engine`: it names the engine and the prefix; Redis's key block only on Redis. */
  const expectEngine = (report: StatusReport, engine: "redis" | "postgres") => {
    const prefix = h.services.config.redisPrefix;
    expect(report.engine).toEqual({ name: engine, prefix, movedTo: null });
    expect(report.redis).toEqual(engine === "redis" ? { prefix, hashTagged: false, legacy: false } : null);
  };

  // The run's engine is the test above's; the other one on the same mirror here.
  const otherEngine = TEST_ENGINE === "redis" ? "postgres" : "redis";
  (otherEngine === "redis" ? itNeedingRedis : it)(`names the ${otherEngine} engine in --json's engine block too`, async () => {
    const { stdout } = await run(process.execPath, ["bin/dvault.js", "status", "--json"], {
      env: { ...cliEnv(), DVAULT_ENGINE: otherEngine },
      timeout: 30_000,
    });
    const report = StatusReportSchema.parse(JSON.parse(stdout));
    expectEngine(report, otherEngine);
    expect(report.problems).toEqual([]);
  });

  it("opens with a warning, and names the engine in --json, when dvault engine migrate moved the install away from this engine", async () => {
    const { coord, config } = h.services;
    const other = TEST_ENGINE === "redis" ? "postgres" : "redis";
    await noteMovedTo(coord, config.redisPrefix, other, new Date("2026-11-29T09:00:00Z"));
    try {
      const text = (await run(process.execPath, ["bin/dvault.js", "status"], { env: cliEnv(), timeout: 30_000 })).stdout;
      expect(text.split("\n")[2]).toBe(
        `WARNING: this install was moved to ${other} by dvault engine migrate (2026-11-29 09:00 UTC); this status was read on ${TEST_ENGINE}, which it left: its queues, workers and pace are not the install's. Set DVAULT_ENGINE=${other} where it is set (the settings file or the environment)`,
      );
      const json = StatusReportSchema.parse(
        JSON.parse((await run(process.execPath, ["bin/dvault.js", "status", "--json"], { env: cliEnv(), timeout: 30_000 })).stdout),
      );
      expect(json.engine.movedTo).toEqual({ to: other, at: "2026-11-29T09:00:00.000Z" });
    } finally {
      await clearMovedTo(coord, config.redisPrefix);
    }
    // Gone with the note (a move back removes it).
    expect((await collectStatus(deps())).engine.movedTo).toBeNull();
    expect(formatStatus(await collectStatus(deps()))).not.toContain("WARNING: this install was moved");
  });

  it("runs through the CLI without loading what it does not use (docs/PERFORMANCE.md#start-up)", async () => {
    const record = path.join(os.tmpdir(), `dvault-status-imports-${process.pid}.txt`);
    try {
      await run(process.execPath, ["--import", RECORD_IMPORTS, "bin/dvault.js", "status"], {
        env: { ...cliEnv(), DVAULT_RECORD_IMPORTS: record },
        timeout: 30_000,
      });
      const { packages } = readLoaded(record);
      expect(packages).toContain("kysely"); // the accounts it reads: the record is not empty
      expect(HEAVY_PACKAGES.filter((p) => packages.has(p))).toEqual([]);
    } finally {
      rmSync(record, { force: true });
    }
  });
});

describe("docs/status.md", () => {
  it("documents every field of the JSON form", () => {
    const doc = readFileSync("docs/status.md", "utf8");
    const schemas = [
      StatusReportSchema,
      AccountStatusSchema,
      SourceStatusSchema,
      QueueStatusSchema,
      DownloadsStatusSchema,
      ArchiveStatusSchema,
      WorkerStatusSchema,
      EngineStatusSchema,
      PacingStatusSchema,
      QuotaStatusSchema,
      NotArchivableSchema,
      NotArchivableReasonSchema,
      NotArchivableArtistSchema,
    ];
    const missing = schemas.flatMap((s) => Object.keys(s.shape)).filter((key) => !doc.includes(`\`${key}\``));
    expect(missing).toEqual([]);
  });
});

describe(fixFor.name, () => {
  it("names the command for each state", () => {
    expect(fixFor({ name: "me", kind: "user", state: "ok", hasRefreshToken: true })).toBeNull();
    expect(fixFor({ name: "me", kind: "user", state: "revoked", hasRefreshToken: false })).toBe("dvault auth login --account me");
    expect(fixFor({ name: "me", kind: "user", state: "expiring", hasRefreshToken: true })).toBe("dvault auth status");
    expect(fixFor({ name: "me", kind: "user", state: "expiring", hasRefreshToken: false })).toBe("dvault auth login --account me");
  });
});

describe(serviceWeekStart.name, () => {
  it("is Monday 00:00 UTC", () => {
    expect(serviceWeekStart(Date.parse("2026-11-22T23:59:00Z")).toISOString()).toBe("2026-11-16T00:00:00.000Z");
    expect(serviceWeekStart(Date.parse("2026-11-23T00:00:00Z")).toISOString()).toBe("2026-11-23T00:00:00.000Z");
  });
});
