// `dvault sync` as a user runs it (bin/dvault.js in a child process) against a worker running the job catalogue
// (real Redis, real Postgres, the simulator): every request runs every source again, however recently the last one
// finished, and `--full` is honoured (docs/ARCHITECTURE.md#the-life-of-a-deviation); `--due` keeps the due-only rule.
import type { Job, Queue } from "bullmq";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { WorkerContext } from "../../jobs/context.ts";
import { JOBS, JOB_DEFINITIONS } from "../../jobs/index.ts";
import { checkCatalogue } from "../../src/queue/job-definition.ts";
import { Producer } from "../../src/queue/producer.ts";
import { createRedis } from "../../src/queue/redis.ts";
import { WorkerHost } from "../../src/queue/worker-host.ts";
import { SOURCES } from "../../src/sync/sources/index.ts";
import { createDownloadHarness, type DownloadHarness } from "../helpers/download-harness.ts";
import { runDvault } from "../helpers/dvault-cli.ts";

let h: DownloadHarness;
let producer: Producer<(typeof JOB_DEFINITIONS)[number]>;
let host: WorkerHost<WorkerContext>;
let syncQueue: Queue;

beforeAll(async () => {
  // The command uses the wall clock: the simulator's week is this week.
  h = await createDownloadHarness({
    sim: { dataset: { deviations: 6, galleryFolders: 1, collectionFolders: 1, favourites: 2, trackedUsers: 0 }, startTime: new Date() },
  });
  producer = new Producer([...JOB_DEFINITIONS], h.redis.redis, h.redis.prefix);
  syncQueue = producer.queue("sync");
  const sources = new Map(SOURCES.map((s) => [s.name, s]));
  // The worker's processing code (src/worker.ts builds the same host) without its schedulers, whose first runs
  // would add runs nobody asked for.
  host = new WorkerHost<WorkerContext>({
    entries: checkCatalogue<WorkerContext>(JOBS),
    connection: () => createRedis(h.redis.url, "worker"),
    prefix: h.redis.prefix,
    log: h.log,
    queues: ["sync"],
    concurrency: { sync: 2 },
    makeContext: (base) => ({ ...base, services: h.services, sources, producer, everyMs: {} }),
  });
  host.start();
}, 120_000);

afterAll(async () => {
  await host?.close();
  await producer?.close();
  await h?.close();
});

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

describe("dvault sync", () => {
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

  it("with --due runs only the sources that are due, and right after a sync none is", async () => {
    const before = await syncQueue.count();
    const run = await runDvault(h, ["sync", "--due"]);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^nothing is due/m);
    expect(await syncQueue.count()).toBe(before);
  });

  it("with --once runs the sources here through the same handler, on a private queue the worker never sees", async () => {
    const before = await syncQueue.count();
    const run = await runDvault(h, ["sync", "--once", "--only", "gallery,notes", "--full"]);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^account\s+source\s+result\s+new\s+changed\s+removed\s+api calls\s+paced\s+throttled\s+time\s+note$/m);
    expect(run.stdout).toMatch(new RegExp(`^${h.account.name}\\s+gallery\\s+ok \\(full\\)\\s+0\\s+0\\s+0\\s+[1-9]`, "m"));
    expect(run.stdout).toMatch(new RegExp(`^${h.account.name}\\s+notes\\s+ok \\(full\\)`, "m"));
    expect(await syncQueue.count()).toBe(before);
    expect((await completedRuns()).get("gallery")).toHaveLength(4);
    expect(await h.redis.redis.keys(`${h.redis.prefix}:once-*`)).toEqual([]);
  });
});
