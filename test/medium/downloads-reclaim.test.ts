// Work held by a dead process comes back soon, never twice (docs/RELIABILITY.md#work-held-by-a-dead-process):
// a worker SIGKILLed mid-file and a killed `dvault download --once` have their files stored by a worker
// within seconds (not after BullMQ's 30–60 s stalled check, a 15 s file lock, or the hourly queue rebuild),
// each with exactly one /deviation/download; a live worker streaming a slow file is never taken from; and a
// job whose activation never reached its live worker runs within seconds too. A write of bytes in memory that a
// killed process left in the partial folder is removed by the next run; a live process's is not.
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs/promises";
import path from "node:path";
import { Writable } from "node:stream";
import { type Queue, Worker } from "bullmq";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { JOB_DEFINITIONS } from "../../jobs/definitions.ts";
import { enqueueDueDownloads } from "../../src/downloads/enqueue-due.ts";
import { createLogger } from "../../src/log.ts";
import { Producer } from "../../src/queue/producer.ts";
import { createRedis } from "../../src/queue/redis.ts";
import { holdLease, isHolderDead, thisHolder, thisWriterTag } from "../../src/queue/holder.ts";
import { downloadableOwnerDeviations, generateDataset, type DatasetOptions } from "../../src/simulator/dataset.ts";
import { gallerySource } from "../../src/sync/sources/gallery.ts";
import { startWorker, type RunningWorker, type WorkerIntervals } from "../../src/worker.ts";
import { testConfig } from "../helpers/config.ts";
import { createDownloadHarness, type DownloadHarness } from "../helpers/download-harness.ts";
import { TEST_ENGINE } from "../helpers/env.ts";
import { itNeedingRedis } from "../helpers/needs-redis.ts";
import { partialNamesDuring } from "../helpers/partial-names.ts";
import { writerOfChild } from "../helpers/writer-child.ts";

const DATASET: DatasetOptions = { deviations: 12, galleryFolders: 1, collectionFolders: 1, favourites: 0, trackedUsers: 0 };
// The commands use the wall clock: the simulator's week is this week.
const START = new Date();
const MIB = 1024 * 1024;
const ids = downloadableOwnerDeviations(generateDataset(1, DATASET, START)).map((d) => d.deviationid);
/** The SIGKILLed worker's file, the live slow worker's, the lost activation's, the `--once` run's four. */
const [killed, live, lost, ...onceFiles] = [ids[0]!, ids[1]!, ids[2]!, ...ids.slice(3, 7)];
/** The work of the test whose worker went away holding it (the others' are above). */
const away = ids[7]!;

let h: DownloadHarness;
let worker: RunningWorker | undefined;
const children: ChildProcess[] = [];

beforeAll(async () => {
  expect(onceFiles).toHaveLength(4);
  h = await createDownloadHarness({
    sim: {
      dataset: DATASET,
      startTime: START,
      downloadQuota: 100,
      fileSizes: { [killed]: 8 * MIB, [live]: 5 * MIB, ...Object.fromEntries(onceFiles.map((id) => [id, 3 * MIB])) },
    },
    sources: [gallerySource],
    quota: 100,
  });
  await h.syncAll(["gallery"]);
  // Nothing is due until a test wants it (a terminal status: a sync leaves the rows alone).
  await h.pool.query("UPDATE downloads SET status = 'not_downloadable'");
}, 120_000);

afterEach(async () => {
  await worker?.stop("test done");
  worker = undefined;
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  h.sim.setCdn({ bytesPerSecond: null });
});

afterAll(async () => {
  await h?.close();
});

async function want(deviationids: readonly string[]): Promise<void> {
  await h.pool.query("UPDATE downloads SET status = 'wanted', queued_at = NULL WHERE kind = 'original' AND deviationid = ANY($1)", [deviationids]);
}

async function statuses(deviationids: readonly string[]): Promise<string[]> {
  const { rows } = await h.pool.query<{ status: string }>(
    "SELECT status::text FROM downloads WHERE kind = 'original' AND deviationid = ANY($1) ORDER BY deviationid",
    [deviationids],
  );
  return rows.map((r) => r.status);
}

const about = (id: string) => (e: { path: string }) => e.path.toLowerCase().includes(id.toLowerCase());
/** Successful /deviation/download calls for one deviation: each spends one of the week's originals. */
const downloadCalls = (id: string) =>
  h.sim.log().filter((e) => e.route.endsWith("/deviation/download/{deviationid}") && e.status === 200 && about(id)(e)).length;
const cdnAnswers = (id: string) =>
  h.sim
    .log()
    .filter((e) => e.route.startsWith("/_cdn/") && about(id)(e))
    .map((e) => e.status);

/** The real worker in this process; its warnings are kept. */
async function startHere(intervals: Partial<WorkerIntervals> = {}): Promise<{ worker: RunningWorker; warnings: string[]; reclaimedFrom: string[] }> {
  const warnings: string[] = [];
  /** The holders ("host:pid:nonce") whose downloads this worker took back. */
  const reclaimedFrom: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split("\n").filter(Boolean)) {
        const entry = JSON.parse(line) as { msg?: string; holder?: string };
        warnings.push(entry.msg ?? "");
        if (entry.msg === "took back the downloads of a process that died" && entry.holder) reclaimedFrom.push(entry.holder);
      }
      done();
    },
  });
  worker = await startWorker({
    config: testConfig(h.env),
    log: createLogger({ level: "warn", destination, pretty: false }),
    handleSignals: false,
    overrides: {
      now: () => h.sim.clock.now().getTime(),
      secretKey: { key: Buffer.from(h.keyHex, "hex"), source: "env", created: false },
      pacer: { pollMs: 5 },
    },
    // Only what the test wants is queued: no periodic enqueue during it.
    intervals: { downloadsEnqueueMs: 10 * 60_000, ...intervals },
  });
  return { worker, warnings, reclaimedFrom };
}

/** A worker process (test/medium/downloads-child.ts: default file lock of 15 s) or `dvault download --once`. */
function spawnChild(kind: "worker" | "once"): ChildProcess {
  const child =
    kind === "worker"
      ? spawn(process.execPath, ["--import", "tsx", path.resolve("test/medium/downloads-child.ts")], {
          env: { ...process.env, DL_ENV: JSON.stringify(h.env), DL_NOW: String(h.sim.clock.now().getTime()) },
          stdio: ["ignore", "pipe", "pipe"],
        })
      : spawn(process.execPath, [path.resolve("bin/dvault.js"), "download", "--once", "--concurrency", "2"], {
          env: { PATH: process.env.PATH ?? "", HOME: "/nonexistent-home", LOG_LEVEL: "warn", REDIS_URL: h.redis.url, ...h.env },
          stdio: ["ignore", "pipe", "pipe"],
        });
  let output = "";
  child.stdout?.on("data", (c: Buffer) => (output = (output + c.toString()).slice(-4000)));
  child.stderr?.on("data", (c: Buffer) => (output = (output + c.toString()).slice(-4000)));
  child.once("exit", (code, signal) => {
    if (signal !== "SIGKILL" && process.env.DVAULT_TEST_CHILD_LOG) console.info(`${kind} exited ${code ?? signal}: ${output}`);
  });
  children.push(child);
  return child;
}

async function sigkill(child: ChildProcess): Promise<number> {
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGKILL");
  await exited;
  return Date.now();
}

/** Bytes of the partial file of an original. */
const partialBytes = async (id: string) => (await h.deps.archive.partialState(`${id}-original`)).size;

describe("work held by a dead process", () => {
  it("a worker SIGKILLed mid-file: a new worker stores the file within seconds, with one /deviation/download", async () => {
    await want([killed]);
    h.sim.setCdn({ bytesPerSecond: 2 * MIB });
    const child = spawnChild("worker");
    await expect.poll(() => partialBytes(killed), { timeout: 30_000, interval: 20 }).toBeGreaterThan(MIB);
    const killedAt = await sigkill(child);
    expect(await statuses([killed])).toEqual(["queued"]);
    h.sim.setCdn({ bytesPerSecond: null });

    await startHere();
    await expect.poll(() => statuses([killed]), { timeout: 15_000, interval: 50 }).toEqual(["done"]);
    const tookMs = Date.now() - killedAt;
    console.info(`SIGKILLed worker's file stored ${tookMs} ms after the kill`);
    // BullMQ's stalled check alone: 30–60 s; the dead worker's file lock alone: 15 s.
    expect(tookMs).toBeLessThan(10_000);
    expect(downloadCalls(killed)).toBe(1);
    // The taker resumed the dead worker's partial file with the URL it had paid for.
    expect(cdnAnswers(killed)).toEqual([200, 206]);
    const { rows } = await h.pool.query<{ sha256: string }>("SELECT sha256 FROM downloads WHERE kind = 'original' AND deviationid = $1", [killed]);
    expect(rows[0]?.sha256).toBe(await h.sim.fileSha256(killed));
  }, 60_000);

  it("a killed `dvault download --once`: the running worker takes its rows back within seconds", async () => {
    const { warnings } = await startHere();
    // The worker's own start-up work (its syncs, which queue what they find wanted; the first downloads.enqueue, and
    // the one it queues a few seconds later) is over before the rows are wanted, so that the `--once` run claims them.
    // A job delayed once (not a repeat's next run, minutes away) counts: a downloads.enqueue due 3 s after the start
    // took the rows when it ran between the want and the run's first claim (1 run in 3 on PostgreSQL). (A killed
    // child's jobs may still show active: only this worker's count.)
    const queues = ["sync", "maintenance"].map((name) => h.services.queues.queue(name));
    const pending = async (q: Queue) => {
      const counts = await q.getJobCounts("wait", "prioritized");
      const active = (await q.getActive()).filter((j) => j.processedBy === thisHolder()).length;
      const delayedOnce = (await q.getDelayed()).filter((j) => !(j.opts as { repeat?: unknown }).repeat).length;
      return (counts.wait ?? 0) + (counts.prioritized ?? 0) + active + delayedOnce;
    };
    try {
      await expect.poll(async () => (await Promise.all(queues.map(pending))).reduce((a, b) => a + b, 0), { timeout: 20_000 }).toBe(0);
    } finally {
      await Promise.all(queues.map((q) => q.close()));
    }
    await want(onceFiles);
    h.sim.setCdn({ bytesPerSecond: MIB });
    const once = spawnChild("once");
    await expect.poll(async () => Math.max(...(await Promise.all(onceFiles.map(partialBytes)))), { timeout: 30_000, interval: 20 }).toBeGreaterThan(256 * 1024);
    // The run holds its rows: queued, with no job in the worker's queue.
    const downloads = h.services.queues.queue("downloads");
    const held = await h.pool.query<{ deviationid: string }>(
      "SELECT deviationid FROM downloads WHERE kind = 'original' AND status = 'queued' AND deviationid = ANY($1)",
      [onceFiles],
    );
    const jobless = (await Promise.all(held.rows.map((r) => downloads.getJobState(`dl-${r.deviationid}-original`)))).filter((state) => state === "unknown");
    await downloads.close();
    expect(jobless).toHaveLength(onceFiles.length);
    const killedAt = await sigkill(once);
    h.sim.setCdn({ bytesPerSecond: null });

    await expect.poll(() => statuses(onceFiles), { timeout: 15_000, interval: 50 }).toEqual(onceFiles.map(() => "done"));
    const tookMs = Date.now() - killedAt;
    console.info(`killed --once run's ${onceFiles.length} rows stored ${tookMs} ms after the kill`);
    // Before: until the worker's hourly rebuild of the queue.
    expect(tookMs).toBeLessThan(10_000);
    expect(onceFiles.map(downloadCalls)).toEqual(onceFiles.map(() => 1));
    expect(warnings).toContain("took back the downloads of a process that died");
  }, 60_000);

  it("a live worker whose transfer is slow is never taken from", async () => {
    await want([live]);
    h.sim.setCdn({ bytesPerSecond: MIB });
    const child = spawnChild("worker");
    await expect.poll(() => partialBytes(live), { timeout: 30_000, interval: 20 }).toBeGreaterThan(256 * 1024);
    // Another worker checks every 200 ms for the rest of the ~5 s transfer.
    const { reclaimedFrom } = await startHere({ reclaimMs: 200 });
    await expect.poll(() => statuses([live]), { timeout: 20_000, interval: 50 }).toEqual(["done"]);
    expect(child.exitCode).toBeNull();
    expect(downloadCalls(live)).toBe(1);
    expect(cdnAnswers(live)).toEqual([200]);
    // Nothing was taken from the live child (a process killed by an earlier test, in any order, may be).
    expect(reclaimedFrom.filter((holder) => holder.split(":")[1] === String(child.pid))).toEqual([]);
  }, 60_000);

  // A BullMQ worker of its own on Redis, whose activation reply is lost as in a Redis restart: Redis itself, so it is
  // defined only where the jobs are on Redis (the test below plants the same state on either engine; a skipped test
  // would change the CI's last line).
  if (TEST_ENGINE === "redis")
    itNeedingRedis(
      "a job activated for a live worker that never reached it (a reply lost to a Redis restart) runs within seconds",
      async () => {
        await want([lost]);
        // The activation as a lost reply leaves it: active, naming this process's worker, never handed to it.
        const producer = new Producer([...JOB_DEFINITIONS], h.services.queues);
        const connection = createRedis(h.redis.url, "worker");
        const fetcher = new Worker("downloads", null, { connection, prefix: h.redis.prefix, name: thisHolder(), autorun: false });
        try {
          expect((await enqueueDueDownloads(h.services, producer)).added).toBe(1);
          expect((await fetcher.getNextJob("lost-reply", { block: false }))?.id).toBe(`dl-${lost}-original`);
        } finally {
          await fetcher.close();
          await producer.close();
          connection.disconnect();
        }
        const startedAt = Date.now();
        const { warnings } = await startHere({ reclaimMs: 500 });
        await expect.poll(() => statuses([lost]), { timeout: 15_000, interval: 50 }).toEqual(["done"]);
        const tookMs = Date.now() - startedAt;
        console.info(`lost activation run ${tookMs} ms after the worker started`);
        // BullMQ's stalled check alone: 30–60 s.
        expect(tookMs).toBeLessThan(10_000);
        expect(warnings.filter((w) => w.includes("never reached it"))).toHaveLength(1);
        expect(downloadCalls(lost)).toBe(1);
      },
      60_000,
    );

  // The same state on the engine under test (DVAULT_TEST_ENGINE, so PostgreSQL's too): a worker of this process takes
  // the job, then is closed by force without giving it back; the job stays active, naming this live process.
  it("a job held by a worker of this live process that went away without it runs within seconds, on either engine", async () => {
    expect(away, "a downloadable work no other test uses").toBeDefined();
    await want([away]);
    const producer = new Producer([...JOB_DEFINITIONS], h.services.queues);
    const taken: string[] = [];
    const fetcher = h.services.queues.worker(
      "downloads",
      async (job) => {
        taken.push(job.id ?? "");
        await new Promise(() => undefined);
      },
      { concurrency: 1, name: thisHolder() },
    );
    try {
      expect((await enqueueDueDownloads(h.services, producer)).added).toBe(1);
      await expect.poll(() => taken, { timeout: 15_000, interval: 20 }).toEqual([`dl-${away}-original`]);
    } finally {
      await fetcher.worker.close(true);
      await producer.close();
    }
    const startedAt = Date.now();
    const { warnings } = await startHere({ reclaimMs: 500 });
    await expect.poll(() => statuses([away]), { timeout: 15_000, interval: 50 }).toEqual(["done"]);
    // BullMQ's stalled check alone: 30–60 s.
    expect(Date.now() - startedAt).toBeLessThan(10_000);
    expect(warnings.filter((w) => w.includes("never reached it"))).toHaveLength(1);
    expect(downloadCalls(away)).toBe(1);
  }, 60_000);

  it("proves death only by a pid on this host (and pid namespace) or, elsewhere, an expired lease", async () => {
    const { coord } = h.services;
    const prefix = h.services.config.redisPrefix;
    const me = thisHolder();
    const lease = await holdLease(coord, prefix);
    try {
      expect(await isHolderDead(coord, prefix, me)).toBe(false);
      const ours = JSON.parse((await coord.hashGet(`${prefix}:holders`, me)) ?? "{}") as { pidns: string };
      const host = me.split(":").slice(0, -2).join(":");
      const register = (holder: string, pidns = ours.pidns) => coord.hashPut(`${prefix}:holders`, { [holder]: JSON.stringify({ pidns }) });
      const renew = (holder: string) => coord.put(`${prefix}:holder:${holder}`, "1", { ttlMs: 30_000 });

      // This host: the pid decides, lease or not.
      const child = spawn(process.execPath, ["-e", "setTimeout(() => {}, 60000)"]);
      children.push(child);
      const sibling = `${host}:${child.pid}:0a0a0a0a`;
      await register(sibling);
      expect(await isHolderDead(coord, prefix, sibling)).toBe(false);
      await sigkill(child);
      await renew(sibling);
      expect(await isHolderDead(coord, prefix, sibling)).toBe(true);
      // This very pid with another nonce: an earlier process that had it (a restarted container).
      const predecessor = `${host}:${process.pid}:0b0b0b0b`;
      await register(predecessor);
      await renew(predecessor);
      expect(await isHolderDead(coord, prefix, predecessor)).toBe(true);

      // Another host, or this host name in another pid namespace: only the lease.
      for (const [holder, pidns] of [
        ["elsewhere.invalid:4242:0c0c0c0c", ours.pidns],
        [`${host}:999999:0d0d0d0d`, "pid:[1]"],
      ] as const) {
        await register(holder, pidns);
        await renew(holder);
        expect(await isHolderDead(coord, prefix, holder)).toBe(false);
        await coord.remove(`${prefix}:holder:${holder}`);
        expect(await isHolderDead(coord, prefix, holder)).toBe(true);
      }
    } finally {
      await lease.stop();
    }
  });

  it("the partial file of a write of bytes in memory names its writer; a `--once` run removes a dead writer's, not a live one's", async () => {
    const partialDir = path.join(h.archiveDir, ".partial");
    // The names the folder sees while the downloads' archive stores a journal's HTML.
    const { names: written } = await partialNamesDuring(partialDir, () =>
      h.deps.archive.storeBytes({ bytes: Buffer.from(`<p>a journal of ${thisHolder()}</p>`), ext: "html" }),
    );
    expect(written).toHaveLength(1);
    expect(written[0]).toMatch(new RegExp(`^bytes-${thisWriterTag().replaceAll(".", "\\.")}-[0-9a-f]{16}\\.part$`));

    // A write its process was killed in the middle of, and one under way in this live process.
    const dead = await writerOfChild("exited");
    const left = `bytes-${dead.tag}-00000000000000aa.part`;
    const mine = `bytes-${thisWriterTag()}-00000000000000bb.part`;
    for (const name of [left, mine]) await fs.writeFile(path.join(partialDir, name), "<p>half a journal");
    await h.runOnce();
    // Only these: another test's worker stopped mid-file may have left an original's partial file.
    expect((await fs.readdir(partialDir)).filter((n) => n.startsWith("bytes-"))).toEqual([mine]);
    await fs.rm(path.join(partialDir, mine));
  });
});
