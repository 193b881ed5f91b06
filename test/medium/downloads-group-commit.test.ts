// Grouped durability (src/downloads/group-commit.ts): files that finish together are made durable and placed in
// one pass (in a bucket: uploaded), then their rows commit in one statement — never a row ahead of its bytes. A failure injected between
// the two (where a crash could land) leaves the files at their content address with no row pointing at them; the
// partial sweep has nothing of theirs to remove, and the next run records the very same files without a second
// /deviation/download (src/downloads/placed-originals.ts).
import { createHash } from "node:crypto";
import fs from "node:fs/promises";
import path from "node:path";
import { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPgPool } from "../../src/db/connect.ts";
import { DownloadRepository } from "../../src/db/download.repository.ts";
import { GroupCommit, type GroupCommitOptions } from "../../src/downloads/group-commit.ts";
import { sweepStrandedPartials } from "../../src/downloads/partial-sweep.ts";
import { isPlacedJournal } from "../../src/downloads/placed-journal.ts";
import { downloadableOwnerDeviations, generateDataset, type DatasetOptions } from "../../src/simulator/dataset.ts";
import { DEFAULT_START_TIME } from "../../src/simulator/server.ts";
import type { StoredFile } from "../../src/storage/archive.ts";
import { gallerySource } from "../../src/sync/sources/gallery.ts";
import { createDownloadHarness, type DownloadHarness, parkOriginalsOf, wantAgain } from "../helpers/download-harness.ts";
import { startCommitCutProxy } from "../helpers/pg-commit-cut.ts";
import { startS3Server, type S3TestServer } from "../helpers/s3-server.ts";

const DATASET: DatasetOptions = { deviations: 30, galleryFolders: 1, collectionFolders: 0, favourites: 0, trackedUsers: 0 };
const SIZE = 200_000;

type Row = { deviationid: string; status: string; path: string | null; sha256: string | null; xmin: string };

/**
 * Files written at once for `targets` (`prefix` names their partial files, `size` + i bytes each), then stored as
 * their originals through `commits`, done at one time; the i-th row counts `bytes(i)` received.
 */
async function storeTogether(
  archive: GroupCommitOptions["archive"],
  commits: GroupCommit,
  targets: readonly { id: string; deviationid: string }[],
  args: { prefix: string; size: number; bytes?: (i: number) => number; note?: string },
) {
  const written = await Promise.all(
    targets.map((t, i) =>
      archive.writeStream({ key: `${args.prefix}-${t.deviationid}`, body: Readable.from([Buffer.alloc(args.size + i, i + 1)]), ext: "bin" }),
    ),
  );
  const at = new Date();
  const done = await Promise.all(
    written.map((w, i) =>
      commits.store(w, (s) => ({
        id: targets[i]?.id ?? "",
        status: "done",
        rendition: "original",
        path: s.relPath,
        size: s.size,
        sha256: s.sha256,
        mime: null,
        bytes: args.bytes?.(i) ?? 0,
        at,
        ...(args.note ? { note: args.note } : {}),
      })),
    ),
  );
  return { written, done, at };
}

for (const storage of ["local", "s3"] as const) {
  let s3: S3TestServer | undefined;
  let h: DownloadHarness;
  let ids: string[];
  /** Batches that reached the point between their files' fsync pass and their rows' commit. */
  let batches: (readonly StoredFile[])[] = [];
  /** What each batch found at that point: rows pointing at its files, its files' bytes, what is left in .partial/. */
  let seen: { rows: { status: string; path: string | null }[]; sha256: string[]; partials: string[] }[] = [];
  /** Throw (as a crash would stop the process) between the fsync pass and the commit. */
  let crash = false;

  async function rows(of: readonly string[]): Promise<Row[]> {
    const { rows: found } = await h.pool.query<Row>(
      "SELECT deviationid, status::text, path, sha256, xmin::text FROM downloads WHERE kind = 'original' AND deviationid = ANY($1) ORDER BY deviationid",
      [of],
    );
    return found;
  }

  /** The stored object's sha256, read back through the store (the archive folder, or the bucket). */
  const sha256Of = async (relPath: string) =>
    createHash("sha256")
      .update((await h.deps.archive.blobs.read(relPath)) ?? Buffer.alloc(0))
      .digest("hex");

  const downloadCalls = (id: string) =>
    h.sim.log().filter((e) => e.route.endsWith("/deviation/download/{deviationid}") && e.status === 200 && e.path.toLowerCase().includes(id.toLowerCase()))
      .length;

  beforeAll(async () => {
    s3 = storage === "s3" ? await startS3Server() : undefined;
    ids = downloadableOwnerDeviations(generateDataset(1, DATASET, DEFAULT_START_TIME))
      .slice(0, 8)
      .map((d) => d.deviationid);
    h = await createDownloadHarness({
      sim: { dataset: DATASET, fileSizes: Object.fromEntries(ids.map((id) => [id, SIZE])), downloadQuota: 100 },
      sources: [gallerySource],
      quota: 100,
      ...(s3 ? { env: s3.env } : {}),
      tuning: {
        storeBatch: {
          // Two batches under way at most (the default is 4), so that five files at once make a batch of three.
          maxInFlight: 2,
          async beforeRowsCommit(files) {
            batches.push(files);
            const paths = new Set(files.map((f) => f.relPath));
            const now = (
              await h.pool.query<{ status: string; path: string | null }>("SELECT status::text, path FROM downloads WHERE path = ANY($1)", [[...paths]])
            ).rows;
            seen.push({
              rows: now,
              sha256: await Promise.all(files.map((f) => sha256Of(f.relPath))),
              partials: (await fs.readdir(path.join(h.archiveDir, ".partial")).catch(() => [] as string[])).sort(),
            });
            if (crash) throw new Error("injected: the process stops between the fsync pass and the commit");
          },
        },
      },
    });
    await h.syncAll(["gallery"]);
    await parkOriginalsOf(h.pool, ids);
  }, 120_000);

  afterAll(async () => {
    await h?.close();
    await s3?.close();
  });

  describe(`grouped durability of stored files (${storage === "s3" ? "a bucket" : "the archive folder"})`, () => {
    it("commits a batch's rows in one transaction, only after every file of it is in place", async () => {
      const mine = ids.slice(0, 5).sort();
      const { rows: targets } = await h.pool.query<{ id: string; deviationid: string }>(
        "SELECT id::text, deviationid FROM downloads WHERE kind = 'original' AND deviationid = ANY($1) ORDER BY deviationid",
        [mine],
      );
      batches = [];
      seen = [];
      // Five transfers finish at once: the first two go alone at once (two batches under way at most), the three left together.
      const { written, done } = await storeTogether(h.deps.archive, h.deps.commits, targets, { prefix: "group", size: 50_000 });
      expect(batches.map((b) => b.length).sort()).toEqual([1, 1, 3]);
      // Before each commit: the files at their address, whole, their partial files gone, and no row pointing at them.
      expect(seen.map((s) => s.rows)).toEqual([[], [], []]);
      expect(seen.flatMap((s) => s.sha256).sort()).toEqual(written.map((w) => w.sha256).sort());
      const partialsOf = (batch: readonly StoredFile[]) =>
        written.filter((w) => batch.some((f) => f.sha256 === w.sha256)).flatMap((w) => [`${w.key}.part`, `${w.key}.part.json`]);
      expect(seen.map((s, i) => s.partials.filter((name) => partialsOf(batches[i] ?? []).includes(name)))).toEqual([[], [], []]);
      // (and the check can see a partial file: the first batches saw those of the three still waiting)
      expect(seen.some((s) => s.partials.length > 0)).toBe(true);
      const after = await rows(mine);
      expect(after.map((r) => [r.status, r.path])).toEqual(done.map((d) => ["done", d.stored.relPath]));
      // One transaction for the three of the last batch (one xmin), one each for the first two.
      const xmins = new Set(after.map((r) => r.xmin));
      expect(xmins.size).toBe(3);
    });

    it("a batch whose commit answer is lost (a lone file's, then two files') is written again row by row, counting its bytes and its upgrade once", async () => {
      // Three rows of works the other tests leave alone, each holding a degraded rendition that its original
      // replaces (an upgrade: one history row, upgraded_at set), bytes an earlier attempt received, failures in a row.
      const { rows: targets } = await h.pool.query<{ id: string; deviationid: string }>(
        `INSERT INTO downloads (deviationid, kind, status, degraded_reason, rendition, path, sha256, size, bytes_transferred, failures)
         SELECT deviationid, 'original', 'degraded', 'the weekly allowance is spent', 'preview', 'originals/preview-' || deviationid || '.jpg',
                repeat('0', 64), 1, 100, 2
         FROM deviations WHERE NOT (deviationid = ANY($1)) ORDER BY deviationid LIMIT 3
         RETURNING id::text, deviationid`,
        [ids],
      );
      targets.sort((a, b) => a.deviationid.localeCompare(b.deviationid));
      expect(targets).toHaveLength(3);
      const targetIds = targets.map((t) => t.id);
      const proxy = await startCommitCutProxy(h.env.DATABASE_URL ?? "");
      const pool = createPgPool(proxy.url);
      try {
        // One batch under way at a time: the first file goes alone, the two that waited go together, and each batch's
        // statement commits while its answer is lost (the connection dropped at the commit).
        const commits = new GroupCommit({
          archive: h.deps.archive,
          repo: new DownloadRepository(pool),
          maxInFlight: 1,
          async beforeRowsCommit() {
            proxy.cutNext("WITH input AS");
          },
        });
        const { done, at } = await storeTogether(h.deps.archive, commits, targets, {
          prefix: "cut",
          size: 40_000,
          bytes: (i) => 1000 * (i + 1),
          note: "original replaces the degraded preview",
        });
        expect(proxy.cuts).toBe(2);
        // Each waiter is told what its row held before the write, replayed or not: the degraded preview it replaced
        // (which the caller then removes, and counts as an upgrade).
        expect(done.map((d) => d.held)).toEqual(
          targets.map((t) => ({ oldPath: `originals/preview-${t.deviationid}.jpg`, oldStatus: "degraded", oldRendition: "preview" })),
        );
        const { rows: after } = await h.pool.query<{ status: string; path: string; bytes: number; failures: number; upgraded_at: Date; history: string[] }>(
          `SELECT d.status::text, d.path, d.bytes_transferred::int AS bytes, d.failures, d.upgraded_at,
             ARRAY(SELECT x.change FROM download_history x WHERE x.download_id = d.id ORDER BY x.id) AS history
           FROM downloads d WHERE d.id = ANY($1::bigint[]) ORDER BY d.deviationid`,
          [targetIds],
        );
        // Every row written once, whether by its batch (whose answer was lost) or by the retry on its own.
        expect(after).toEqual(
          targets.map((_, i) => ({
            status: "done",
            path: done[i]?.stored.relPath,
            bytes: 100 + 1000 * (i + 1),
            failures: 0,
            upgraded_at: at,
            history: ["upgraded"],
          })),
        );
      } finally {
        await pool.end();
        await proxy.close();
      }
    });

    it("a failure between the fsync pass and the commit leaves durable files and no rows; the next run adopts them, paying nothing twice", async () => {
      const mine = ids.slice(5, 8).sort();
      for (const id of mine) await wantAgain(h, id);
      batches = [];
      seen = [];
      crash = true;
      const failed = await h.runOnce({ concurrency: 3, patience: { itemMs: 0, runMs: 0, baseMs: 1, capMs: 1 } });
      crash = false;
      expect(failed).toMatchObject({ done: 0, failed: 3 });
      const placed = batches.flat();
      expect(placed).toHaveLength(3);
      // No row points at the files, and none is done...
      const left = await rows(mine);
      expect(left.map((r) => [r.status, r.path])).toEqual(mine.map(() => ["failed", null]));
      // ...but every file is whole at its content address, with the simulator's bytes.
      const truth = await Promise.all(mine.map((id) => h.sim.fileSha256(id)));
      expect(await Promise.all(placed.map((f) => sha256Of(f.relPath)))).toEqual(placed.map((f) => f.sha256));
      expect(new Set(placed.map((f) => f.sha256))).toEqual(new Set(truth));
      // The partial sweep finds nothing of theirs: they left .partial/ when they were placed. What is there is the
      // note of each placed file whose row was not written (src/downloads/placed-originals.ts), and each batch's journal
      // of its originals, written before the commit (src/downloads/placed-journal.ts): one per batch, every file listed.
      const inPartial = (await fs.readdir(path.join(h.archiveDir, ".partial"))).sort();
      expect(inPartial.filter((n) => !isPlacedJournal(n))).toEqual(mine.map((id) => `${id}-original.part.placed.json`));
      const journals = inPartial.filter(isPlacedJournal);
      expect(journals).toHaveLength(batches.length);
      const listed = await Promise.all(journals.map((n) => fs.readFile(path.join(h.archiveDir, ".partial", n), "utf8")));
      const lines = listed.flatMap((text) =>
        text
          .trim()
          .split("\n")
          .map((l) => JSON.parse(l) as { deviationid: string; row: { path: string } }),
      );
      expect(lines.map((l) => l.deviationid).sort()).toEqual(mine);
      expect(new Set(lines.map((l) => l.row.path))).toEqual(new Set(placed.map((f) => f.relPath)));
      expect(listed.join("")).not.toMatch(/https?:/);
      expect(await sweepStrandedPartials({ archive: h.deps.archive, repo: h.deps.repo, now: Date.now(), minAgeMs: 0 })).toEqual({ removed: 0, bytes: 0 });

      for (const id of mine) await wantAgain(h, id);
      const again = await h.runOnce({ concurrency: 3 });
      expect(again).toMatchObject({ done: 3, failed: 0 });
      const stored = await rows(mine);
      expect(stored.map((r) => [r.status, r.sha256])).toEqual(mine.map((_, i) => ["done", truth[i]]));
      expect(new Set(stored.map((r) => r.path))).toEqual(new Set(placed.map((f) => f.relPath)));
      // The download the failed attempt paid for was used again: one /deviation/download per file; the notes are gone.
      expect(mine.map(downloadCalls)).toEqual([1, 1, 1]);
      expect(await fs.readdir(path.join(h.archiveDir, ".partial"))).toEqual([]);
    });
  });
}
