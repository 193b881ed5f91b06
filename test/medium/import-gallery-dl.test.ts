// `dvault import gallery-dl` on a folder written from the simulator's dataset (test/helpers/gallery-dl-fixture.ts),
// on real Postgres, Redis and the simulator over sockets: before the first sync (ids found through the owner's
// listings), then the sync and `download --once` spending nothing on the adopted originals, a re-run that adds
// nothing, and `--link` after a sync (no API call at all).
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { collectDigest } from "../../src/digest/collect.ts";
import { renderDigest } from "../../src/digest/render.ts";
import { importGalleryDl } from "../../src/import/gallery-dl/import-folder.ts";
import { UNMATCHED, type ImportReport } from "../../src/import/gallery-dl/types.ts";
import { collectionsSource } from "../../src/sync/sources/collections.ts";
import { gallerySource } from "../../src/sync/sources/gallery.ts";
import { createDownloadHarness, type DownloadHarness } from "../helpers/download-harness.ts";
import { runDvault } from "../helpers/dvault-cli.ts";
import { fileStates, writeGalleryDlFixture, type GalleryDlFixture } from "../helpers/gallery-dl-fixture.ts";

const DATASET = {
  deviations: 40,
  galleryFolders: 3,
  collectionFolders: 2,
  favourites: 12,
  trackedUsers: 2,
  trackedUserDeviations: 8,
  notes: 2,
  messages: 2,
  feedItems: 2,
  watchers: 2,
  friends: 2,
  statuses: 1,
};

type OriginalRow = { deviationid: string; status: string; rendition: string | null; path: string | null; source: string; next_attempt_at: Date | null };

async function originalRows(h: DownloadHarness): Promise<Map<string, OriginalRow>> {
  const { rows } = await h.pool.query<OriginalRow>(
    "SELECT deviationid, status, rendition, path, source, next_attempt_at FROM downloads WHERE kind = 'original'",
  );
  return new Map(rows.map((r) => [r.deviationid, r]));
}

function downloadCalls(h: DownloadHarness, sinceSeq: number, untilSeq = Number.POSITIVE_INFINITY): string[] {
  return h.sim
    .log()
    .filter((e) => e.seq > sinceSeq && e.seq <= untilSeq && e.route.includes("/deviation/download/"))
    .map((e) => (e.path.split("/").pop() ?? "").toUpperCase());
}

function listingCalls(h: DownloadHarness, sinceSeq: number, untilSeq = Number.POSITIVE_INFINITY): number {
  return h.sim.log().filter((e) => e.seq > sinceSeq && e.seq <= untilSeq && e.route.startsWith("/api/v1/oauth2")).length;
}

describe(importGalleryDl.name, () => {
  let h: DownloadHarness;
  let fixture: GalleryDlFixture;
  let before: Record<string, string>;
  let first: ImportReport;
  let firstSeq: number;
  // Where the first import's calls end: the sync and download test adds calls after it, in whatever order the tests run.
  let importedSeq: number;

  beforeAll(async () => {
    h = await createDownloadHarness({ sim: { dataset: DATASET, downloadQuota: 1000 }, sources: [gallerySource, collectionsSource], quota: 1000 });
    fixture = await writeGalleryDlFixture(h.sim, await fs.mkdtemp(path.join(os.tmpdir(), "dvault-gallery-dl-")));
    before = await fileStates(fixture.written);
    firstSeq = h.lastSeq();
    first = await importGalleryDl({
      services: h.services,
      dir: fixture.base,
      archiveFile: fixture.archiveFile,
      link: false,
      log: h.log,
      archive: h.deps.archive,
    });
    importedSeq = h.lastSeq();
  }, 120_000);

  afterAll(async () => {
    await h?.close();
    if (fixture) await fs.rm(fixture.base, { recursive: true, force: true });
  });

  it("adopts every original before the first sync, byte for byte, through the owner's listings only", async () => {
    expect(first.unmatched.map((u) => [path.join(fixture.base, u.file), u.reason]).sort()).toEqual(
      fixture.unmatched.map((u) => [u.file, UNMATCHED[u.reason]]).sort(),
    );
    expect(first.originals).toBe(fixture.originals.length);
    expect(first.quotaSaved).toBe(fixture.originals.length);
    expect(first.renditions).toBe(2); // the jpg preview beside its png, and the fullview stand-in
    expect(first.extraImages).toBe(1);
    expect(first.duplicates).toBe(0);
    const rows = await originalRows(h);
    for (const o of fixture.originals) {
      const row = rows.get(o.deviationid);
      expect(row, o.file).toMatchObject({ status: "done", rendition: "original", source: "imported" });
      const stored = await fs.readFile(h.deps.archive.resolveInside(String(row?.path)));
      expect(stored.equals(await h.sim.fileBytes(o.deviationid)), o.file).toBe(true);
    }
    // Listings, never a download: and no more pages than the three listings hold.
    expect(downloadCalls(h, firstSeq, importedSeq)).toEqual([]);
    expect(first.apiCalls).toBe(listingCalls(h, firstSeq, importedSeq));
    expect(first.apiCalls).toBeGreaterThan(0);
    expect(first.apiCalls).toBeLessThanOrEqual(first.listings.reduce((n, l) => n + l.pages, 0));
    expect(first.listings.map((l) => l.listing).sort()).toEqual(["favourites", "gallery", "gallery"]);
    // The user's files, sidecars and archive database are exactly as they were.
    expect(await fileStates(fixture.written)).toEqual(before);
  });

  it("keeps a png original and a jpg preview of one work as one deviation with two files", async () => {
    const { rows } = await h.pool.query<{ role: string; path: string; source_path: string }>(
      "SELECT role, path, source_path FROM imported_files WHERE deviationid = $1 ORDER BY role",
      [fixture.pair.deviationid],
    );
    expect(rows.map((r) => [r.role, r.source_path])).toEqual([
      ["original", fixture.pair.original],
      ["rendition", fixture.pair.preview],
    ]);
    const row = (await originalRows(h)).get(fixture.pair.deviationid);
    expect(row?.path).toBe(rows[0]?.path);
    expect((await fs.readFile(h.deps.archive.resolveInside(String(rows[1]?.path)))).equals(await fs.readFile(fixture.pair.preview))).toBe(true);
    const extra = await h.pool.query("SELECT 1 FROM imported_files WHERE deviationid = $1 AND role = 'extra_image' AND sha256 = $2", [
      fixture.extraImage.deviationid,
      fixture.extraImage.sha256,
    ]);
    expect(extra.rowCount).toBe(1);
  });

  it("tells the digest's health section how many originals came from an import", async () => {
    const now = h.sim.clock.now();
    const data = await collectDigest({
      db: h.pool,
      window: { start: new Date(now.getTime() - 86_400_000), end: now },
      now,
      archiveDir: h.archiveDir,
      recordBaselines: false,
    });
    expect(data.health.importedOriginals).toBe(fixture.originals.length);
    expect(renderDigest(data, { timezone: "UTC", idempotencyKey: "t" }).text).toContain(`${fixture.originals.length} originals came from an import.`);
  });

  // The stand-in is checked before the sync and download that upgrade it, so both are one test.
  it("keeps a fullview stand-in with its original wanted; a sync and download spend nothing on adopted originals and upgrade it", async () => {
    // Step 1: the stand-in fullview, its original still wanted.
    const standIn = (await originalRows(h)).get(fixture.standIn.deviationid);
    expect(standIn).toMatchObject({ status: "degraded", rendition: "content", source: "imported" });
    expect(standIn?.next_attempt_at?.getTime()).toBeLessThanOrEqual(h.sim.clock.now().getTime());

    // Step 2: sync and download.
    await h.syncAll(["gallery", "collections"]);
    const seq = h.lastSeq();
    const summary = await h.runOnce();
    expect(summary.failed).toBe(0);
    const fetched = downloadCalls(h, seq);
    expect(fetched.length).toBeGreaterThan(0);
    for (const o of fixture.originals) expect(fetched, o.file).not.toContain(o.deviationid);
    expect(fetched).toContain(fixture.standIn.deviationid);
    const rows = await originalRows(h);
    for (const o of fixture.originals) expect(rows.get(o.deviationid)).toMatchObject({ status: "done", source: "imported" });
    expect(rows.get(fixture.standIn.deviationid)).toMatchObject({ status: "done", rendition: "original", source: "service" });
    // The preview kept beside the png survives every later store.
    const { rows: kept } = await h.pool.query<{ path: string; role: string; deviationid: string }>("SELECT path, role, deviationid FROM imported_files");
    const preview = kept.find((k) => k.deviationid === fixture.pair.deviationid && k.role === "rendition");
    expect(preview, "the pair's preview is still recorded").toBeDefined();
    expect((await fs.readFile(h.deps.archive.resolveInside(preview!.path))).equals(await fs.readFile(fixture.pair.preview))).toBe(true);
    for (const k of kept) await expect(fs.stat(h.deps.archive.resolveInside(k.path))).resolves.toBeTruthy();
  }, 120_000);

  it("adds nothing when run again", async () => {
    const counts = async () =>
      (await h.pool.query<{ d: number; i: number }>("SELECT (SELECT count(*) FROM downloads)::int AS d, (SELECT count(*) FROM imported_files)::int AS i"))
        .rows[0];
    const was = await counts();
    const seq = h.lastSeq();
    const again = await importGalleryDl({
      services: h.services,
      dir: fixture.base,
      archiveFile: fixture.archiveFile,
      link: false,
      log: h.log,
      archive: h.deps.archive,
    });
    expect(again).toMatchObject({ originals: 0, renditions: 0, extraImages: 0, quotaSaved: 0, bytesCopied: 0 });
    expect(again.duplicates).toBe(first.originals + first.renditions + first.extraImages);
    expect(again.unmatched.length).toBe(fixture.unmatched.length);
    expect(await counts()).toEqual(was);
    expect(downloadCalls(h, seq)).toEqual([]);
    expect(await fileStates(fixture.written)).toEqual(before);
  });
});

describe(`${importGalleryDl.name} --link, after the first sync`, () => {
  let h: DownloadHarness;
  let fixture: GalleryDlFixture;

  beforeAll(async () => {
    h = await createDownloadHarness({ sim: { dataset: DATASET, downloadQuota: 1000 }, sources: [gallerySource, collectionsSource], quota: 1000 });
    await h.syncAll(["gallery", "collections"]);
    // The user's folder on the archive's filesystem, so hard links are possible.
    fixture = await writeGalleryDlFixture(h.sim, await fs.mkdtemp(path.join(path.dirname(h.archiveDir), "dvault-gallery-dl-link-")));
  }, 120_000);

  afterAll(async () => {
    await h?.close();
    if (fixture) await fs.rm(fixture.base, { recursive: true, force: true });
  });

  const dvault = (args: string[]) => runDvault(h, ["import", "gallery-dl", ...args]);

  // The command runs over the folder the first import linked, so both are one test.
  it("hard-links the files, keeps their modes, asks only for what the mirror lacks; as the command: JSON, one-line errors", async () => {
    // Step 1: the import with --link.
    await fs.chmod(fixture.originals[0]?.file as string, 0o644);
    const before = await fileStates(fixture.written);
    const seq = h.lastSeq();
    const report = await importGalleryDl({
      services: h.services,
      dir: fixture.base,
      archiveFile: fixture.archiveFile,
      link: true,
      log: h.log,
      archive: h.deps.archive,
    });
    expect(report.originals).toBe(fixture.originals.length);
    expect(report.bytesCopied).toBe(0);
    expect(report.bytesLinked).toBeGreaterThan(0);
    // The mirror knows the owner's works and favourites: only the work no listing has (its folder's gallery,
    // walked to the end) and the other user's work (that user's gallery) are asked for.
    expect(report.listings.map((l) => `${l.listing}:${l.username}`).sort()).toEqual(
      [`gallery:${fixture.users.other}`, `gallery:${fixture.users.owner}`].sort(),
    );
    expect(downloadCalls(h, seq)).toEqual([]);
    const rows = await originalRows(h);
    for (const o of fixture.originals) {
      const stored = await fs.stat(h.deps.archive.resolveInside(String(rows.get(o.deviationid)?.path)));
      expect(stored.ino, o.file).toBe((await fs.stat(o.file)).ino);
    }
    expect(await fileStates(fixture.written)).toEqual(before);

    // Step 2: the command over the same folder: the report as JSON, and one line saying what to do with bad input.
    const run = await dvault([fixture.base, "--archive", fixture.archiveFile, "--json"]);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    const json = JSON.parse(run.stdout) as ImportReport;
    expect(json).toMatchObject({ originals: 0, duplicates: fixture.originals.length + 3, account: h.account.name });
    expect(json.unmatched.map((u) => u.reason)).toContain(UNMATCHED.unknown);
    const missing = await dvault([path.join(fixture.base, "no-such-folder")]);
    expect(missing.code).toBe(1);
    expect(missing.stderr.trim().split("\n")).toEqual([expect.stringMatching(/^dvault: .*no-such-folder is not a folder: give gallery-dl's download folder/)]);
    const notSqlite = await dvault([fixture.base, "--archive", path.join(fixture.base, "readme.txt")]);
    expect(notSqlite.code).toBe(1);
    expect(notSqlite.stderr.trim().split("\n")).toEqual([
      expect.stringMatching(/^dvault: --archive .*readme\.txt is not a SQLite database; give the path of gallery-dl's archive file/),
    ]);
  }, 120_000);
});
