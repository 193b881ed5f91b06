// A CDN that throttles a transfer (CloudFront's HTML 403, or a 429) blocks the pacer's CDN key instead of a
// sleep inside the transfer: the download ends with a ThrottleDelayError (the job waits, no attempt spent), and
// the next try reuses the signed URL it paid for (docs/service-behaviour.md#cdn-block-403). And any other transfer
// failure ends its call too (one attempt, classified), leaving the retry to the job and the resume to Range.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isThrottleDelay } from "../../src/api/errors.ts";
import { createLogger } from "../../src/log.ts";
import { downloadFile } from "../../src/downloads/download-file.ts";
import { CDN_PACER_KEY } from "../../src/downloads/transfer.ts";
import { downloadableOwnerDeviations, generateDataset, type DatasetOptions } from "../../src/simulator/dataset.ts";
import { DEFAULT_START_TIME } from "../../src/simulator/server.ts";
import { gallerySource } from "../../src/sync/sources/gallery.ts";
import { createDownloadHarness, parkOriginalsOf, type DownloadHarness, downloadTraffic, wantAgain } from "../helpers/download-harness.ts";

const DATASET: DatasetOptions = { deviations: 12, galleryFolders: 1, collectionFolders: 0, favourites: 0, trackedUsers: 0 };

let h: DownloadHarness;
let ids: string[];

beforeAll(async () => {
  ids = downloadableOwnerDeviations(generateDataset(1, DATASET, DEFAULT_START_TIME))
    .slice(0, 3)
    .map((d) => d.deviationid);
  h = await createDownloadHarness({
    sim: { dataset: DATASET, downloadQuota: 100, fileSizes: { [ids[2]!]: 2 * 1024 * 1024 } },
    sources: [gallerySource],
    quota: 100,
  });
  await h.syncAll(["gallery"]);
  await parkOriginalsOf(h.pool, ids);
}, 120_000);

afterAll(async () => {
  await h?.close();
});

const want = (id: string) => wantAgain(h, id);

const traffic = (id: string, seq: number) => downloadTraffic(h, id, seq);

const log = createLogger({ level: "silent" });

describe("CDN throttling through the pacer", () => {
  it.each([
    ["an HTML 403 (CloudFront's block)", "cdn_block", 403],
    ["a 429", "user_throttle", 429],
  ] as const)(
    "%s blocks the CDN key and ends the attempt; the next one reuses the paid URL",
    async (_what, kind, status) => {
      const id = ids[status === 403 ? 0 : 1]!;
      const seq = await want(id);
      const usedBefore = h.sim.quotaUsed(h.sim.truth.ownerId);
      h.sim.faults.add({ route: "/_cdn/original/", kind, times: 1 });
      const first = await downloadFile(h.deps, { deviationid: id, kind: "original", log }).catch((err: unknown) => err);
      expect(isThrottleDelay(first)).toBe(true);
      expect(first).toMatchObject({ pacerKey: CDN_PACER_KEY, status, operation: "cdn.file" });
      const pacing = await h.services.pacer.status(CDN_PACER_KEY);
      expect(pacing.lostMs).toBeGreaterThan(0);
      expect(pacing.blockedUntil).toBeGreaterThan(0);
      // Not a failure of the row: nothing recorded against it.
      const { rows } = await h.pool.query<{ failures: number }>("SELECT failures FROM downloads WHERE deviationid = $1", [id]);
      expect(rows[0]?.failures).toBe(0);

      const second = await downloadFile(h.deps, { deviationid: id, kind: "original", log });
      expect(second).toMatchObject({ status: "done" });
      expect(traffic(id, seq)).toEqual(["api 200", `cdn ${status}`, "cdn 200"]);
      expect(h.sim.quotaUsed(h.sim.truth.ownerId)).toBe(usedBefore + 1);
    },
    60_000,
  );
});

describe("one transfer attempt per call", () => {
  it("throws a classified error at the first reset; the job's next attempt resumes by Range without paying again", async () => {
    const id = ids[2]!;
    const seq = await want(id);
    const usedBefore = h.sim.quotaUsed(h.sim.truth.ownerId);
    h.sim.faults.add({ route: "/_cdn/original/", kind: "reset_mid_body", atByte: 1_000_000, times: 1 });
    await expect(downloadFile(h.deps, { deviationid: id, kind: "original", log })).rejects.toThrow();
    expect(traffic(id, seq)).toEqual(["api 200", "cdn 200"]);
    expect(await h.deps.archive.partialState(`${id}-original`)).toMatchObject({ size: 1_000_000 });
    expect(await downloadFile(h.deps, { deviationid: id, kind: "original", log })).toMatchObject({ status: "done" });
    expect(traffic(id, seq)).toEqual(["api 200", "cdn 200", "cdn 206"]);
    expect(h.sim.quotaUsed(h.sim.truth.ownerId)).toBe(usedBefore + 1);
  }, 60_000);
});
