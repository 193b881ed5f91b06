// Downloads with DVAULT_STORAGE=s3, through the real flow against the simulator's CDN and a real S3 server on
// loopback: every original lands in the bucket at its content address, byte-exact (one of them in several
// parts), none stays on this machine's disk, no upload is left unfinished, and a second run has nothing to do.
import { createHash } from "node:crypto";
import fs from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runDownloadsOnce } from "../../src/downloads/run-once.ts";
import { downloadableOwnerDeviations, generateDataset, type DatasetOptions } from "../../src/simulator/dataset.ts";
import { gallerySource } from "../../src/sync/sources/gallery.ts";
import { createDownloadHarness, type DownloadHarness } from "../helpers/download-harness.ts";
import { leftovers, startS3Server, type S3TestServer } from "../helpers/s3-server.ts";

const DATASET: DatasetOptions = { deviations: 12, galleryFolders: 1, collectionFolders: 1, favourites: 0, trackedUsers: 0 };
const START = new Date();
const ids = downloadableOwnerDeviations(generateDataset(1, DATASET, START)).map((d) => d.deviationid);
/** Past the 8 MiB part size: a multipart upload. */
const BIG = 9 * 1024 * 1024 + 4321;

let h: DownloadHarness;
let s3: S3TestServer;

beforeAll(async () => {
  s3 = await startS3Server();
  h = await createDownloadHarness({
    sim: { dataset: DATASET, startTime: START, downloadQuota: 100, fileSizes: { [ids[0] as string]: BIG } },
    sources: [gallerySource],
    quota: 100,
    env: s3.env,
  });
  await h.syncAll(["gallery"]);
}, 120_000);

afterAll(async () => {
  await h?.close();
  await s3?.close();
});

describe(runDownloadsOnce.name, () => {
  it("stores every original in the bucket, byte-exact, and nothing on this machine", async () => {
    expect(h.deps.archive.blobs.describe()).toMatch(/^s3:\/\/dvault-test\/ at 127\.0\.0\.1:\d+$/);
    // A local tree's record from before this store was a bucket, and the marks the sync left.
    await h.pool.query("INSERT INTO readable_tree_sweeps (id, swept_at, marked_format) VALUES (1, now(), 'links-1:depth-16')");
    const marks = async () => (await h.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM readable_tree_marks")).rows[0]!.n;
    expect(await marks()).toBeGreaterThan(0);
    const summary = await h.runOnce({ concurrency: 4 });
    expect(summary.failures).toEqual([]);
    // The bucket's index is made from every placement: the marks go, and so does the note that the local tree's files
    // were all compared, so a return to that folder compares every file once.
    expect(await marks()).toBe(0);
    expect((await h.pool.query("SELECT marked_format FROM readable_tree_sweeps")).rows).toEqual([{ marked_format: null }]);
    const { rows } = await h.pool.query<{ deviationid: string; kind: string; status: string; sha256: string; path: string }>(
      "SELECT deviationid, kind, status, sha256, path FROM downloads WHERE path IS NOT NULL ORDER BY deviationid, kind",
    );
    // Originals stored as such (a video's degraded rendition is another file than the simulator's original).
    const originals = rows.filter((r) => r.kind === "original" && r.status === "done");
    expect(originals.length).toBeGreaterThanOrEqual(ids.length - 2);
    expect(originals.map((r) => r.deviationid)).toContain(ids[0]);
    for (const r of rows) {
      const bytes = await h.deps.archive.blobs.read(r.path);
      expect(bytes && createHash("sha256").update(bytes).digest("hex"), r.path).toBe(r.sha256);
    }
    for (const r of originals) expect(r.sha256).toBe(await h.sim.fileSha256(r.deviationid));
    const found = await leftovers(s3.dir);
    expect(found.multipartUploads).toEqual([]);
    // The originals, once each; besides them only the readable tree's index (docs/storage-readers.md).
    expect(found.objects.filter((o) => !o.startsWith(`${s3.bucket}/by-user/`)).sort()).toEqual([...new Set(rows.map((r) => `${s3.bucket}/${r.path}`))].sort());
    // This machine keeps no original, and no partial file once each is stored.
    const local = await fs.readdir(h.archiveDir, { recursive: true, withFileTypes: true });
    expect(local.filter((e) => e.isFile()).map((e) => path.relative(h.archiveDir, path.join(e.parentPath, e.name)))).toEqual([]);
    const again = await h.runOnce({ concurrency: 4 });
    expect(again.failures).toEqual([]);
    expect(again.done).toBe(0);
    expect(await leftovers(s3.dir)).toEqual(found);
  });
});
