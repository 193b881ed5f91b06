// The sync.source job hands the downloads its run wanted to the queue as it finishes, so a first archive's
// originals start while other sources still sync instead of waiting for the next downloads.enqueue tick.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { WorkerContext } from "../../jobs/context.ts";
import { JOB_DEFINITIONS } from "../../jobs/definitions.ts";
import { syncSourceHandler } from "../../jobs/sync-source/handler.ts";
import { Producer } from "../../src/queue/producer.ts";
import { downloadableOwnerDeviations } from "../../src/simulator/dataset.ts";
import { gallerySource } from "../../src/sync/sources/gallery.ts";
import { createDownloadHarness, type DownloadHarness } from "../helpers/download-harness.ts";
import { queueOf } from "../helpers/producer-queue.ts";
import { workerContext } from "../helpers/worker-context.ts";

let h: DownloadHarness;
let producer: Producer;

// A fresh account per test: the first syncs it for the first time, the second after a run like that one.
beforeEach(async () => {
  h = await createDownloadHarness({
    sim: { dataset: { deviations: 10, galleryFolders: 1, collectionFolders: 0, favourites: 0, trackedUsers: 0 } },
    sources: [gallerySource],
  });
  producer = new Producer([...JOB_DEFINITIONS], h.services.queues);
}, 120_000);

afterEach(async () => {
  await producer?.close();
  await h?.close();
});

function context(): WorkerContext {
  return workerContext({ log: h.log, services: h.services, producer, sources: new Map([[gallerySource.name, gallerySource]]) });
}

describe("sync.source job", () => {
  it("queues the downloads its run wanted when it finishes", async () => {
    const result = await syncSourceHandler({ accountId: h.account.id, source: "gallery", key: "" }, context());
    const originals = downloadableOwnerDeviations(h.sim.truth).map((d) => d.deviationid);
    expect(originals.length).toBeGreaterThan(0);
    expect(result).toMatchObject({ status: "done", downloadsQueued: expect.any(Number) });
    const queued = (await queueOf(producer, "downloads").getJobs(["prioritized", "waiting"], 0, -1)).map((j) => String(j.data.deviationid));
    expect(queued).toEqual(expect.arrayContaining(originals));
    expect(result.downloadsQueued).toBe(queued.length);
    const { rows } = await h.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM downloads WHERE status = 'wanted'");
    expect(rows[0]?.n).toBe(0);
  });

  it("leaves the queue alone after a run that found nothing new", async () => {
    expect(await syncSourceHandler({ accountId: h.account.id, source: "gallery", key: "" }, context())).toMatchObject({ status: "done" });
    await queueOf(producer, "downloads").obliterate({ force: true });
    const result = await syncSourceHandler({ accountId: h.account.id, source: "gallery", key: "" }, context());
    expect(result).toMatchObject({ status: "done", new: 0, changed: 0 });
    expect(result.downloadsQueued).toBeUndefined();
    expect(await queueOf(producer, "downloads").count()).toBe(0);
  });
});
