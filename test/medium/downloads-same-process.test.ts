// One process never runs two transfers of the same file, even when Redis has lost the per-file lock (a
// Redis restarted without its data, whose rebuilt queue hands the file out again while it is downloading).
import { afterAll, beforeAll, expect, it } from "vitest";
import { downloadFile } from "../../src/downloads/download-file.ts";
import { createLogger } from "../../src/log.ts";
import { downloadableOwnerDeviations, generateDataset, type DatasetOptions } from "../../src/simulator/dataset.ts";
import { DEFAULT_START_TIME } from "../../src/simulator/server.ts";
import { gallerySource } from "../../src/sync/sources/gallery.ts";
import { createDownloadHarness, type DownloadHarness } from "../helpers/download-harness.ts";

const DATASET: DatasetOptions = { deviations: 6, galleryFolders: 1, collectionFolders: 1, favourites: 0, trackedUsers: 0 };
let h: DownloadHarness;
let id: string;

beforeAll(async () => {
  id = downloadableOwnerDeviations(generateDataset(3, DATASET, DEFAULT_START_TIME))[0]!.deviationid;
  h = await createDownloadHarness({ sim: { seed: 3, dataset: DATASET, downloadQuota: 100 }, sources: [gallerySource], quota: 100 });
  await h.syncAll(["gallery"]);
}, 120_000);

afterAll(async () => {
  await h?.close();
});

it("answers busy for a file this process is already downloading, with or without its lock in the engine", async () => {
  const log = createLogger({ level: "silent" });
  const { coord, config } = h.deps.services;
  const lockKey = `${config.redisPrefix}:download-lock:${id}:original`;
  // The CDN answers this file after 600 ms, so the first transfer is still running below.
  h.sim.faults.add({ route: "/_cdn/original/", kind: "latency", latencyMs: 600, probability: 1 });
  try {
    const first = downloadFile(h.deps, { deviationid: id, kind: "original", log });
    await expect.poll(() => coord.exists(lockKey), { timeout: 500, interval: 5 }).toBe(true);
    await coord.remove(lockKey); // the engine lost it (Redis restarted)
    expect(await downloadFile(h.deps, { deviationid: id, kind: "original", log })).toMatchObject({
      status: "busy",
      reason: "this process is already downloading this file",
    });
    expect(await first).toMatchObject({ status: "done" });
  } finally {
    h.sim.faults.clear();
  }
  // Once it is over, the file is simply done.
  expect(await downloadFile(h.deps, { deviationid: id, kind: "original", log })).toMatchObject({ status: "skipped", reason: "already done" });
  // One transfer in all: the download link was asked for once.
  const linkCalls = h.sim.log().filter((e) => e.route.endsWith("/deviation/download/{deviationid}") && e.path.toLowerCase().includes(id.toLowerCase()));
  expect(linkCalls).toHaveLength(1);
});
