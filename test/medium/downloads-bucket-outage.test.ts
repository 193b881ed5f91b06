// A download whose bytes all arrived but whose upload to the bucket failed (the bucket gone, unreachable or
// refusing, after the preflight had proven it): the downloads pause (src/downloads/disk-guard.ts), the partial file
// on this machine is whole, and the next run, once the bucket takes files, stores it without the network
// (storeCompletePartial in src/downloads/download-file.ts) instead of downloading the whole file a second time.
import { createHash } from "node:crypto";
import { CreateBucketCommand, DeleteBucketCommand } from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runDownloadsOnce } from "../../src/downloads/run-once.ts";
import { downloadableOwnerDeviations, generateDataset, type DatasetOptions } from "../../src/simulator/dataset.ts";
import { S3BlobStore } from "../../src/storage/s3-blob-store.ts";
import { gallerySource } from "../../src/sync/sources/gallery.ts";
import { createDownloadHarness, type DownloadHarness } from "../helpers/download-harness.ts";
import { leftovers, startS3Server, type S3TestServer } from "../helpers/s3-server.ts";

const DATASET: DatasetOptions = { deviations: 4, galleryFolders: 1, collectionFolders: 1, favourites: 0, trackedUsers: 0 };
const START = new Date();
const id = downloadableOwnerDeviations(generateDataset(1, DATASET, START))[0]!.deviationid;
const SIZE = 3 * 1024 * 1024 + 77;
/** Created before the first run, removed after its preflight, created again half way through the test. */
const BUCKET = "dvault-later";

let h: DownloadHarness;
let s3: S3TestServer;

beforeAll(async () => {
  s3 = await startS3Server();
  h = await createDownloadHarness({
    sim: { dataset: DATASET, startTime: START, downloadQuota: 100, fileSizes: { [id]: SIZE } },
    sources: [gallerySource],
    quota: 100,
    env: { ...s3.env, DVAULT_S3_BUCKET: BUCKET },
  });
  await h.syncAll(["gallery"]);
  await h.pool.query("DELETE FROM downloads WHERE NOT (kind = 'original' AND deviationid = $1)", [id]);
}, 120_000);

afterAll(async () => {
  await h?.close();
  await s3?.close();
});

function cdnAnswers(): number[] {
  return h.sim
    .log()
    .filter((e) => e.route.startsWith("/_cdn/") && e.path.toLowerCase().includes(id.toLowerCase()))
    .map((e) => e.status);
}

describe(runDownloadsOnce.name, () => {
  it("stores a whole partial file whose upload failed without downloading it again", async () => {
    const store = h.deps.archive.blobs;
    if (!(store instanceof S3BlobStore)) throw new Error("the harness stores into the bucket");
    // The preflight proves the bucket in this process; then the bucket goes away before the upload.
    await store.client.send(new CreateBucketCommand({ Bucket: BUCKET }));
    await h.deps.guard.check();
    await store.client.send(new DeleteBucketCommand({ Bucket: BUCKET }));
    const first = await h.runOnce();
    expect(first.done).toBe(0);
    // Not a failure of the file: the downloads pause, said in one line with what to do.
    expect(first.failures).toEqual([]);
    expect(first.paused?.reason).toContain(`the bucket ${BUCKET} does not exist`);
    expect(cdnAnswers()).toEqual([200]);
    // Every byte arrived and stays on this machine for the next attempt.
    expect((await h.deps.archive.partialState(`${id}-original`)).size).toBe(SIZE);

    await store.client.send(new CreateBucketCommand({ Bucket: BUCKET }));
    const second = await h.runOnce();
    expect(second.failures).toEqual([]);
    expect(second.done).toBe(1);
    // Not one more request to the CDN.
    expect(cdnAnswers()).toEqual([200]);
    const { rows } = await h.pool.query<{ status: string; sha256: string; path: string }>(
      "SELECT status, sha256, path FROM downloads WHERE deviationid = $1 AND kind = 'original'",
      [id],
    );
    expect(rows[0]).toMatchObject({ status: "done", sha256: await h.sim.fileSha256(id) });
    const bytes = await store.read(rows[0]!.path);
    expect(bytes && createHash("sha256").update(bytes).digest("hex")).toBe(rows[0]!.sha256);
    expect((await h.deps.archive.partialState(`${id}-original`)).size).toBe(0);
    expect((await leftovers(s3.dir)).multipartUploads).toEqual([]);
  });
});
