// `dvault sync` as a user runs it (bin/dvault.js in a child process) against a worker running the job catalogue
// (real Redis, real Postgres, the simulator): every request runs every source again, however recently the last one
// finished, and `--full` is honoured (docs/ARCHITECTURE.md#the-life-of-a-deviation); `--due` keeps the due-only rule.
import { spawn } from "node:child_process";
import path from "node:path";
import type { Job, Queue } from "bullmq";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { WorkerContext } from "../../jobs/context.ts";
import { JOBS, JOB_DEFINITIONS } from "../../jobs/index.ts";
import { JOBS_SCHEMA } from "../../src/queue/backend.ts";
import { checkCatalogue } from "../../src/queue/job-definition.ts";
import { TEST_ENGINE } from "../helpers/env.ts";
import { Producer } from "../../src/queue/producer.ts";
import { WorkerHost } from "../../src/queue/worker-host.ts";
import { SOURCES } from "../../src/sync/sources/index.ts";
import { createDownloadHarness, type DownloadHarness } from "../helpers/download-harness.ts";
import { collectRun, runDvault } from "../helpers/dvault-cli.ts";
import { queueOf } from "../helpers/producer-queue.ts";

let h: DownloadHarness;
let producer: Producer;
let host: WorkerHost<WorkerContext>;
let syncQueue: Queue;

/**
 * A fresh account and a worker for it. Each describe below starts its own: the first counts every run the worker
 * makes from an account never synced; the second runs sources of its own account here.
 */
async function startAccountAndWorker(): Promise<void> {
  // The command uses the wall clock: the simulator's week is this week.
  h = await createDownloadHarness({
    sim: { dataset: { deviations: 6, galleryFolders: 1, collectionFolders: 1, favourites: 2, trackedUsers: 0 }, startTime: new Date() },
  });
  producer = new Producer([...JOB_DEFINITIONS], h.services.queues);
  syncQueue = queueOf(producer, "sync");
  const sources = new Map(SOURCES.map((s) => [s.name, s]));
  // The worker's processing code (src/worker.ts builds the same host) without its schedulers, whose first runs
  // would add runs nobody asked for.
  host = new WorkerHost<WorkerContext>({
    entries: checkCatalogue<WorkerContext>(JOBS),
    backend: h.services.queues,
    log: h.log,
    queues: ["sync"],
    concurrency: { sync: 2 },
    makeContext: (base) => ({ ...base, services: h.services, sources, producer, everyMs: {} }),
  });
  host.start();
}

async function stopAccountAndWorker(): Promise<void> {
  await host?.close();
  await producer?.close();
  await h?.close();
}

/** The sync jobs the worker completed, per source, in the order they finished. */
async function completedRuns(): Promise<Map<string, Job[]>> {
  const jobs = (await syncQueue.getJobs(["completed"], 0, -1)).sort((a, b) => (a.finishedOn ?? 0) - (b.finishedOn ?? 0));
  const bySource = new Map<string, Job[]>();
  for (const job of jobs) bySource.set(String(job.data.source), [...(bySource.get(String(job.data.source)) ?? []), job]);
  return bySource;
}

async function syncAndWait(args: string[], round: number): Promise<void> {
  const run = await runDvault(h, ["sync", ...args]);
  expect(run.stderr).toBe("");
  expect(run.code).toBe(0);
  expect(run.stdout).toContain(`queued ${SOURCES.length - 1} source run(s) for the worker`);
  // Every source but "tracked" (no tracked users, so no keys) runs once more per request.
  await expect
    .poll(async () => [...(await completedRuns()).values()].map((jobs) => jobs.length), { timeout: 60_000, interval: 200 })
    .toEqual(Array(SOURCES.length - 1).fill(round));
}

/** What --once's private queues left on the run's engine: Redis keys under <prefix>:once-*, or PostgreSQL schemas. */
async function onceLeftovers(): Promise<string[]> {
  if (TEST_ENGINE === "redis") return h.redis.redis.keys(`${h.redis.prefix}:once-*`);
  const { rows } = await h.pool.query<{ nspname: string }>("SELECT nspname FROM pg_namespace WHERE nspname LIKE $1", [`${JOBS_SCHEMA}_once_%`]);
  return rows.map((r) => r.nspname);
}

describe("dvault sync", () => {
  beforeAll(startAccountAndWorker, 120_000);
  afterAll(stopAccountAndWorker);

  it("runs every source on each request, three times in a row, then a full sweep with --full", async () => {
    await syncAndWait([], 1);
    await syncAndWait([], 2);
    await syncAndWait([], 3);
    await syncAndWait(["--full"], 4);
    const runs = await completedRuns();
    expect(runs.size).toBe(SOURCES.length - 1);
    for (const [source, jobs] of runs) {
      const sweeps = jobs.map((j) => (j.returnvalue as { full?: boolean }).full);
      // The first run of a source is a full sweep by itself; the next two are incremental; --full forces one.
      expect({ source, sweeps }).toEqual({ source, sweeps: [true, false, false, true] });
      expect(jobs.map((j) => j.data.full)).toEqual([undefined, undefined, undefined, true]);
      for (const job of jobs) expect(job.returnvalue).toMatchObject({ status: "done" });
    }
  }, 240_000);
});

describe("dvault sync --due and --once", () => {
  beforeAll(startAccountAndWorker, 120_000);
  afterAll(stopAccountAndWorker);

  /** Every source run once here, as right after a sync (whatever another test of this account left unfinished). */
  async function synced(): Promise<void> {
    const run = await runDvault(h, ["sync", "--once"]);
    expect(run.code, run.stdout + run.stderr).toBe(0);
  }

  it("with --due runs only the sources that are due (never run, past their interval, or failed last time); right after a sync none is", async () => {
    await synced();
    const before = await syncQueue.count();
    const run = await runDvault(h, ["sync", "--due"]);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^nothing is due/m);
    expect(await syncQueue.count()).toBe(before);

    // One source failed last time, one is past its interval, one has never run (sync --help's three): those, no other.
    const mark = (sql: string, source: string) => h.pool.query(`UPDATE sync_sources SET ${sql} WHERE account_id = $1 AND source = $2`, [h.account.id, source]);
    await mark("last_result = 'failed'", "gallery");
    await mark("next_run_at = now() - interval '1 minute'", "notes");
    await mark("next_run_at = NULL", "static");
    const due = await runDvault(h, ["sync", "--once", "--due", "--json"]);
    expect(due.code, due.stderr).toBe(0);
    expect((JSON.parse(due.stdout) as { source: string }[]).map((r) => r.source).sort()).toEqual(["gallery", "notes", "static"]);
    expect(await syncQueue.count()).toBe(before);
  });

  it("with --once runs the sources here through the same handler, on a private queue the worker never sees", async () => {
    await synced();
    const before = await syncQueue.count();
    const galleryRuns = (await completedRuns()).get("gallery")?.length ?? 0;
    const run = await runDvault(h, ["sync", "--once", "--only", "gallery,notes", "--full"]);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^account\s+source\s+result\s+new\s+changed\s+removed\s+api calls\s+paced\s+throttled\s+time\s+note$/m);
    expect(run.stdout).toMatch(new RegExp(`^${h.account.name}\\s+gallery\\s+ok \\(full\\)\\s+0\\s+0\\s+0\\s+[1-9]`, "m"));
    expect(run.stdout).toMatch(new RegExp(`^${h.account.name}\\s+notes\\s+ok \\(full\\)`, "m"));
    expect(await syncQueue.count()).toBe(before);
    expect((await completedRuns()).get("gallery")?.length ?? 0).toBe(galleryRuns);
    expect(await onceLeftovers()).toEqual([]);
  });

  it("with --once stopped by Ctrl-C: STOPPED with what did not finish, exit 130, and nothing left in Redis", async () => {
    // Every API answer takes a second: the run is still walking the gallery when the signal comes.
    h.sim.faults.add({ kind: "latency", latencyMs: 1000 });
    try {
      const seq = h.lastSeq();
      const child = spawn(process.execPath, [path.resolve("bin/dvault.js"), "sync", "--once", "--only", "gallery", "--full"], {
        env: { PATH: process.env.PATH ?? "", HOME: "/nonexistent-home", LOG_LEVEL: "warn", REDIS_URL: h.redis.url, ...h.env },
        stdio: ["ignore", "pipe", "pipe"],
      });
      const done = collectRun(child, Date.now());
      await expect.poll(() => h.sim.log().some((e) => e.seq > seq && e.route.includes("/gallery")), { timeout: 30_000, interval: 50 }).toBe(true);
      child.kill("SIGINT");
      const run = await done;
      expect(run.code, run.stdout + run.stderr).toBe(130);
      expect(run.stdout).toMatch(new RegExp(`^${h.account.name}\\s+gallery\\s+STOPPED\\s`, "m"));
      expect(run.stderr).toContain("stopped before the end: 1 source run(s) did not finish (STOPPED above); run dvault sync --once again to continue");
    } finally {
      h.sim.faults.clear();
    }
    expect(await onceLeftovers()).toEqual([]);
  });
});

describe("dvault sync and archive --only given no source", () => {
  it("refuse it in one line before opening anything: an empty --only ran every source, one of commas none (saying nothing is due)", async () => {
    // No database or Redis is needed (nor reached: the port below refuses).
    const nowhere = { redis: { url: "redis://127.0.0.1:1" }, env: {} };
    const runs = await Promise.all([
      runDvault(nowhere, ["sync", "--only", " , "]),
      runDvault(nowhere, ["sync", "--once", "--only", ","]),
      runDvault(nowhere, ["archive", "--once", "--only=,"]),
    ]);
    const line = `dvault: --only names no source: give one or more of ${SOURCES.map((s) => s.name).join(", ")}, or leave it out to run them all\n`;
    expect(runs.map((r) => r.stderr)).toEqual([line, line, line]);
    expect(runs.map((r) => r.code)).toEqual([1, 1, 1]);
    // An empty one is refused as every option given an empty value is (src/cli/program.ts refuseEmptyValues).
    const empty = await runDvault(nowhere, ["archive", "--once", "--only="]);
    expect(empty.stderr).toBe("dvault: --only was given an empty value (a variable left unset?): give one, or leave the option out\n");
  }, 30_000);
});
