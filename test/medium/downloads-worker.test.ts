// The downloads through the real worker (BullMQ on Redis, the job catalogue, the outcome mapping): over
// the allowance the job is delayed to the next quota window, never failed; when the window comes the
// delayed jobs are promoted and upgrade their files in place; and a lost queue is rebuilt from the table
// when the worker starts. Every stored file gets its thumbnails.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JOB_DEFINITIONS } from "../../jobs/definitions.ts";
import { enqueueDueDownloads } from "../../src/downloads/enqueue-due.ts";
import { nextQuotaWindow } from "../../src/downloads/quota.ts";
import { Producer } from "../../src/queue/producer.ts";
import { downloadableOwnerDeviations } from "../../src/simulator/dataset.ts";
import { Thumbnails } from "../../src/storage/thumbnails.ts";
import { gallerySource } from "../../src/sync/sources/gallery.ts";
import type { RunningWorker } from "../../src/worker.ts";
import { createDownloadHarness, type DownloadHarness } from "../helpers/download-harness.ts";
import { startHarnessWorker } from "../helpers/harness-worker.ts";
import { queueOf } from "../helpers/producer-queue.ts";

let h: DownloadHarness;
let worker: RunningWorker | undefined;
let producer: Producer;
let originals: string[];

async function start(): Promise<RunningWorker> {
  return startHarnessWorker(h, { DVAULT_DOWNLOAD_QUOTA: "2" });
}

async function statuses(): Promise<Record<string, number>> {
  const { rows } = await h.pool.query<{ status: string; n: number }>(
    "SELECT status, count(*)::int AS n FROM downloads WHERE kind = 'original' GROUP BY status",
  );
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
}

const POLL = { timeout: 60_000, interval: 100 };

beforeAll(async () => {
  h = await createDownloadHarness({
    sim: { dataset: { deviations: 12, galleryFolders: 2, collectionFolders: 1, favourites: 0, trackedUsers: 0 }, downloadQuota: 2 },
    sources: [gallerySource],
    quota: 2,
  });
  await h.syncAll(["gallery"]);
  originals = downloadableOwnerDeviations(h.sim.truth).map((d) => d.deviationid);
  expect(originals.length).toBeGreaterThanOrEqual(5);
  producer = new Producer([...JOB_DEFINITIONS], h.services.queues);
}, 120_000);

afterAll(async () => {
  await worker?.stop("test done");
  await producer?.close();
  await h?.close();
});

// One story in three steps: each step starts from the state the previous one left (the delayed jobs, then
// the upgraded rows), so they run in one test and cannot be reordered.
describe("downloads worker", () => {
  it("delays over-quota jobs, promotes them when the window comes, and rebuilds a lost queue at start", async () => {
    // Step 1: over-quota jobs wait for the next window instead of failing.
    worker = await start();
    const n = originals.length;
    await expect.poll(statuses, POLL).toMatchObject({ done: 2, degraded: n - 2 });
    const queue = queueOf(producer, "downloads");
    const jobCounts = () => queue.getJobCounts("delayed", "failed", "completed", "active", "wait", "prioritized");
    // The counts are waited for whole, not read once after the delayed ones: a stored original's job gives its row
    // done before the queue records the job's end (after its handler returns), so it may still count as active.
    // Finished jobs are gone (completed 0), so the same ids can be queued again.
    await expect.poll(jobCounts, POLL).toMatchObject({ delayed: n - 2, failed: 0, completed: 0, active: 0, wait: 0, prioritized: 0 });
    // Each delayed job waits for the service's next week.
    const window = nextQuotaWindow(h.sim.clock.now()).getTime() - h.sim.clock.now().getTime();
    for (const job of await queue.getDelayed()) {
      expect(job.id).toMatch(/^dl-[0-9A-F-]{36}-original$/);
      expect(job.delay).toBeGreaterThan(window - 120_000);
      expect(job.attemptsMade).toBe(0);
    }

    // The worker makes the stored files' thumbnails (thumbnails.backfill, queued after each stored file).
    const thumbs = new Thumbnails(h.deps.archive.blobs);
    const thumbStates = async () => {
      const states: string[] = [];
      for await (const o of thumbs.originals()) states.push(await thumbs.state(o));
      return states;
    };
    await expect.poll(async () => (await thumbStates()).length, POLL).toBeGreaterThanOrEqual(n);
    await expect.poll(async () => (await thumbStates()).filter((s) => s === "missing").length, POLL).toBe(0);

    // Step 2: the delayed jobs are promoted when the window comes and upgrade their files in place.
    h.sim.clock.set(new Date(nextQuotaWindow(h.sim.clock.now()).getTime() + 60_000));
    // This call promotes the delayed jobs, unless a sync job of the running worker got there first (a sync
    // that mirrored changes queues the due downloads itself): either way they run now, not next week.
    await enqueueDueDownloads(worker!.services, producer);
    await expect.poll(statuses, POLL).toMatchObject({ done: 4 });
    const { rows } = await h.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM download_history WHERE change = 'upgraded'");
    expect(rows[0]?.n).toBe(2);
    await expect.poll(async () => (await queueOf(producer, "downloads").getJobCounts("delayed")).delayed, POLL).toBe(originals.length - 4);
    expect(h.sim.quotaUsed(h.sim.truth.ownerId)).toBe(2);

    // Step 3: a lost queue is rebuilt from the table when the worker starts.
    await worker!.stop("restart");
    worker = undefined;
    // Redis loses everything of the downloads queue; the table says one degraded row is in the queue
    // (claimed for its upgrade), the others wait for a far window.
    await queueOf(producer, "downloads").obliterate({ force: true });
    await h.pool.query("UPDATE downloads SET next_attempt_at = '2030-01-01' WHERE status = 'degraded'");
    const { rows: claimed } = await h.pool.query<{ deviationid: string }>(
      "UPDATE downloads SET queued_at = $1, next_attempt_at = NULL WHERE id IN (SELECT id FROM downloads WHERE kind = 'original' AND status = 'degraded' ORDER BY id LIMIT 1) RETURNING deviationid",
      [h.sim.clock.now()],
    );
    expect(claimed).toHaveLength(1);
    // A new week, so the allowance allows it.
    h.sim.clock.set(new Date(nextQuotaWindow(h.sim.clock.now()).getTime() + 60_000));
    worker = await start();
    const sql = "SELECT status FROM downloads WHERE deviationid = $1 AND kind = 'original'";
    const status = async () => (await h.pool.query<{ status: string }>(sql, [claimed[0]!.deviationid])).rows[0]?.status;
    await expect.poll(status, POLL).toBe("done");
  }, 180_000);
});
