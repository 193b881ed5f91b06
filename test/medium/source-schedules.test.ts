// Schedules you choose (README "Schedules"): DVAULT_SCHEDULE_<SOURCE> becomes the source's BullMQ job scheduler, a
// cron expression read in DVAULT_SCHEDULE_TZ fires at its time on BullMQ's own clock (Date, injected here), and a
// changed schedule re-installs that source's scheduler only: the others keep their next run.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { JOB_DEFINITIONS } from "../../jobs/index.ts";
import { loadConfig } from "../../src/config.ts";
import { applySettings } from "../../src/config/settings-file.ts";
import { createLogger } from "../../src/log.ts";
import { startWorker } from "../../src/worker.ts";
import { testConfig } from "../helpers/config.ts";
import { Producer } from "../../src/queue/producer.ts";
import { SyncStateRepository } from "../../src/db/sync-state.repository.ts";
import { QueueAdmin } from "../../src/queue/queue-admin.ts";
import { collectStatus } from "../../src/status/collect.ts";
import { reconcileSchedules } from "../../src/sync/schedules.ts";
import type { SourceName } from "../../src/sync/source.ts";
import { SOURCES } from "../../src/sync/sources/index.ts";
import { createSyncHarness, type SyncHarness } from "../helpers/sync-harness.ts";
import { queueOf } from "../helpers/producer-queue.ts";

let h: SyncHarness;
let producer: Producer;

const sourcesOf = (...names: SourceName[]) => new Map(SOURCES.filter((s) => names.includes(s.name)).map((s) => [s.name, s]));
const schedulesOf = (env: Record<string, string>) => loadConfig({ HOME: "/nonexistent-home", ...env }).schedules;

beforeAll(async () => {
  h = await createSyncHarness();
  producer = new Producer([...JOB_DEFINITIONS], h.services.queues);
});

afterEach(async () => {
  vi.useRealTimers();
  // Schedulers, jobs and dedupe keys alike: each test starts from an empty sync queue.
  await queueOf(producer, "sync").obliterate({ force: true });
});

afterAll(async () => {
  await producer?.close();
  await h?.close();
});

async function schedulers() {
  const list = await queueOf(producer, "sync").getJobSchedulers(0, -1);
  return new Map(list.map((s) => [String(s.template?.data?.source ?? s.key), s]));
}

describe("the sources' schedules from the settings", () => {
  it("fires a source's cron schedule at its time in DVAULT_SCHEDULE_TZ", async () => {
    // Half a second before 08:00 in Berlin (07:00 UTC in November), on the clock BullMQ reads (Date).
    vi.useFakeTimers({ toFake: ["Date"], shouldAdvanceTime: true, now: new Date("2026-11-03T06:59:59.500Z") });
    // A gallery that ran before: only its cron time runs it (a first run starts at once: the next test).
    await new SyncStateRepository(h.pool).saveSourceState({ accountId: h.account.id, source: "gallery" }, { lastRunAt: new Date("2026-11-02T07:00:00Z") });
    const schedules = schedulesOf({ DVAULT_SCHEDULE_TZ: "Europe/Berlin", DVAULT_SCHEDULE_GALLERY: "0 8 * * *" });
    await reconcileSchedules({ services: h.services, producer, sources: sourcesOf("gallery"), schedules });
    const installed = (await schedulers()).get("gallery");
    expect(installed).toMatchObject({ pattern: "0 8 * * *", tz: "Europe/Berlin", next: Date.parse("2026-11-03T07:00:00Z") });

    const fired: { source: string; at: number }[] = [];
    // A worker of the run's engine (Redis, or PostgreSQL alone).
    const worker = h.services.queues.worker("sync", async (job) => void fired.push({ source: job.data.source, at: Date.now() }), { concurrency: 1 });
    try {
      await expect.poll(() => fired.length, { timeout: 5000 }).toBe(1);
      expect(fired[0]?.source).toBe("gallery");
      expect(fired[0]?.at).toBeGreaterThanOrEqual(Date.parse("2026-11-03T07:00:00Z"));
      // The next one is tomorrow at 08:00 Berlin time.
      await expect.poll(async () => (await schedulers()).get("gallery")?.next).toBe(Date.parse("2026-11-04T07:00:00Z"));
    } finally {
      await worker.close();
    }
  });

  it("starts a source that never ran at once on a cron schedule too, and leaves one that ran to its time", async () => {
    // README step 3 and `track add`: the first sync starts at once, whatever the schedule (BullMQ would wait for the cron time).
    await new SyncStateRepository(h.pool).saveSourceState({ accountId: h.account.id, source: "profile" }, { lastRunAt: new Date() });
    const schedules = schedulesOf({ DVAULT_SCHEDULE_COMMENTS: "0 3 * * *", DVAULT_SCHEDULE_PROFILE: "0 3 * * *" });
    const sources = sourcesOf("comments", "profile");
    const now = async () => (await queueOf(producer, "sync").getJobs(["waiting", "prioritized", "active"])).map((j) => j.data.source);
    await reconcileSchedules({ services: h.services, producer, sources, schedules });
    expect(await now()).toEqual(["comments"]);
    // The next reconcile (every 5 minutes) folds into the run already waiting.
    await reconcileSchedules({ services: h.services, producer, sources, schedules });
    expect(await now()).toEqual(["comments"]);
  });

  it("re-installs only the scheduler whose schedule changed, and an account's own schedule wins", async () => {
    const sources = sourcesOf("gallery", "notes", "messages");
    const before = schedulesOf({ DVAULT_SCHEDULE_GALLERY: "6h", DVAULT_SCHEDULE_NOTES: "10min" });
    expect(await reconcileSchedules({ services: h.services, producer, sources, schedules: before })).toMatchObject({ scheduled: 3, changed: 3 });
    const first = await schedulers();
    const delayedIds = async () => (await queueOf(producer, "sync").getDelayed()).map((j) => j.id).sort();
    const jobsBefore = await delayedIds();

    const after = schedulesOf({
      DVAULT_SCHEDULE_TZ: "Europe/Berlin",
      DVAULT_SCHEDULE_GALLERY: "0 * * * *",
      DVAULT_SCHEDULE_NOTES: "10min",
      DVAULT_SCHEDULE_MESSAGES: `10min; ${h.account.name}=30 7 * * *`,
    });
    expect(await reconcileSchedules({ services: h.services, producer, sources, schedules: after })).toMatchObject({ scheduled: 3, changed: 2 });
    const second = await schedulers();
    expect(second.get("gallery")).toMatchObject({ pattern: "0 * * * *", tz: "Europe/Berlin" });
    expect(second.get("messages")).toMatchObject({ pattern: "30 7 * * *", tz: "Europe/Berlin" });
    // notes kept its scheduler and its waiting job as they were.
    expect(second.get("notes")).toEqual(first.get("notes"));
    const notesJobs = (ids: (string | undefined)[]) => ids.filter((id) => id?.includes("-notes-"));
    expect(notesJobs(await delayedIds())).toEqual(notesJobs(jobsBefore));
  });

  it("shows each source's schedule and its scheduler's next run in the status", async () => {
    // A gallery that ran once, as the runner records it (a run of its own is the sync tests').
    await new SyncStateRepository(h.pool).saveSourceState({ accountId: h.account.id, source: "gallery" }, { lastResult: "ok", nextRunAt: new Date(0) });
    const schedules = schedulesOf({ DVAULT_SCHEDULE_TZ: "Europe/Berlin", DVAULT_SCHEDULE_GALLERY: "0 8 * * *" });
    await reconcileSchedules({ services: h.services, producer, sources: sourcesOf("gallery"), schedules });
    const next = (await schedulers()).get("gallery")?.next;
    const queues = new QueueAdmin(h.services.queues);
    try {
      const { services } = h;
      const report = await collectStatus({
        config: { ...services.config, schedules },
        pool: services.pool,
        pacer: services.pacer,
        coord: services.coord,
        accounts: services.accounts,
        queues,
      });
      expect(report.sources.find((s) => s.source === "gallery")).toMatchObject({
        schedule: "cron 0 8 * * * (Europe/Berlin)",
        nextRunAt: new Date(next ?? 0).toISOString(),
      });
    } finally {
      await queues.close();
    }
  });

  it("re-reads the settings file's schedules on SIGHUP, without a restart", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "dvault-sighup-"));
    const file = path.join(dir, "dvault.env");
    writeFileSync(file, "DVAULT_SCHEDULE_GALLERY=6h\n");
    applySettings({ configFlag: file });
    const signals = ["SIGHUP", "SIGTERM", "SIGINT"] as const;
    const before = new Map(signals.map((s) => [s, process.listeners(s)]));
    const worker = await startWorker({
      config: testConfig({ DATABASE_URL: h.db.url, DVAULT_REDIS_PREFIX: h.redis.prefix, DVAULT_API_BASE: h.sim.url, DVAULT_SCHEDULE_GALLERY: "6h" }),
      log: createLogger({ level: "silent" }),
      // Only the maintenance queue runs here: the sync jobs the schedulers add wait, unprocessed.
      roles: ["maintenance"],
      overrides: { secretKey: { key: randomBytes(32), source: "env", created: false } },
    });
    try {
      writeFileSync(file, 'DVAULT_SCHEDULE_GALLERY="0 * * * *"\n');
      process.emit("SIGHUP", "SIGHUP");
      await expect.poll(async () => (await schedulers()).get("gallery")?.pattern, { timeout: 5000 }).toBe("0 * * * *");
    } finally {
      await worker.stop("test");
      for (const s of signals) for (const l of process.listeners(s)) if (!before.get(s)?.includes(l)) process.off(s, l);
      delete process.env.DVAULT_SCHEDULE_GALLERY;
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
