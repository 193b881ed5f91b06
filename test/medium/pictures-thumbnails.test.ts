// What the demo shows, on a small account: with the simulator's pictures (src/simulator/pictures.ts), a sync
// and `download --once` (the weekly allowance spent, so most works are stored as their fullview, some blurred)
// and then the thumbnails job make a real WebP thumbnail for every stored image, in each of the four formats;
// only the video and the journals get placeholder tiles.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { kindOfExtension } from "../../src/storage/thumbnail-render.ts";
import { backfillThumbnails, Thumbnails, type OriginalRef } from "../../src/storage/thumbnails.ts";
import { gallerySource } from "../../src/sync/sources/gallery.ts";
import { createDownloadHarness, type DownloadHarness } from "../helpers/download-harness.ts";

// Seed 11 at 16 works: JPEG, PNG, GIF and WebP originals, a video, journals and blurred mature works.
const SIM = { seed: 11, downloadQuota: 3, dataset: { deviations: 16, galleryFolders: 2, collectionFolders: 1, favourites: 0, trackedUsers: 0 } };

let h: DownloadHarness;

beforeAll(async () => {
  h = await createDownloadHarness({ sim: SIM, sources: [gallerySource], quota: 3 });
  await h.syncAll(["gallery"]);
  expect((await h.runOnce()).failed).toBe(0);
}, 120_000);

afterAll(async () => {
  await h?.close();
});

describe("the simulator's pictures in the archive", () => {
  it("get a real thumbnail each, whatever their format and whether original or rendition; only videos and texts get placeholders", async () => {
    const { rows } = await h.pool.query<{ status: string; rendition: string; partial_reason: string | null }>(
      "SELECT status, rendition, partial_reason FROM downloads WHERE kind = 'original' AND path IS NOT NULL",
    );
    expect(rows.filter((r) => r.status === "done" && r.rendition === "original").length).toBe(3);
    expect(rows.filter((r) => r.rendition === "content").length).toBeGreaterThan(3);
    expect(rows.some((r) => /blurred/.test(r.partial_reason ?? ""))).toBe(true);

    const thumbs = new Thumbnails(h.deps.archive.blobs);
    const files: OriginalRef[] = [];
    for await (const o of thumbs.originals()) files.push(o);
    const images = files.filter((o) => kindOfExtension(o.ext) === "image");
    expect(new Set(images.map((o) => o.ext))).toEqual(new Set(["jpg", "png", "gif", "webp"]));
    const result = await backfillThumbnails(thumbs);
    expect(result).toMatchObject({ files: files.length, generated: images.length, placeholders: files.length - images.length, failed: 0 });
    expect(files.length - images.length).toBeGreaterThan(0);
    for (const o of images) expect(await thumbs.state(o), o.key).toBe("present");
  });
});
