// A batch's journal of placed originals (src/downloads/placed-journal.ts) is written before its files are placed, at
// the addresses they are about to take (src/downloads/group-commit.ts). A file whose bytes the archive holds already
// under another extension is placed there instead (Archive's dedupe): the journal then lists where it is, so that
// the next attempt after a kill finds the file its line names (placed-originals.ts checks it) and pays nothing again.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs/promises";
import path from "node:path";
import { Readable } from "node:stream";
import { afterAll, beforeAll, expect, it } from "vitest";
import { GroupCommit } from "../../src/downloads/group-commit.ts";
import { isPlacedJournal, PlacedJournals } from "../../src/downloads/placed-journal.ts";
import { PlacedOriginals } from "../../src/downloads/placed-originals.ts";
import type { StoredFile } from "../../src/storage/archive.ts";
import { originalRelPath } from "../../src/storage/layout.ts";
import { gallerySource } from "../../src/sync/sources/gallery.ts";
import { createDownloadHarness, type DownloadHarness, downloadableOriginals } from "../helpers/download-harness.ts";

let h: DownloadHarness;

beforeAll(async () => {
  h = await createDownloadHarness({
    sim: { dataset: { deviations: 4, galleryFolders: 1, collectionFolders: 0, favourites: 0, trackedUsers: 0 } },
    sources: [gallerySource],
  });
  await h.syncAll(["gallery"]);
}, 120_000);

afterAll(async () => {
  await h?.close();
});

async function journalLines(): Promise<{ deviationid: string; row: { path: string } }[]> {
  const dir = path.join(h.archiveDir, ".partial");
  const names = (await fs.readdir(dir)).filter(isPlacedJournal);
  const texts = await Promise.all(names.map((n) => fs.readFile(path.join(dir, n), "utf8")));
  return texts.flatMap((t) =>
    t
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { deviationid: string; row: { path: string } }),
  );
}

it("lists an original whose bytes are stored already under another extension where it is, before its row commits", async () => {
  const [deviationid] = await downloadableOriginals(h.pool, 1);
  const { rows } = await h.pool.query<{ id: string }>("SELECT id::text FROM downloads WHERE deviationid = $1 AND kind = 'original'", [deviationid]);
  const bytes = Buffer.from("the same bytes, stored once as a PNG");
  const sha256 = createHash("sha256").update(bytes).digest("hex");
  const there = originalRelPath(sha256, "png");
  await fs.mkdir(path.dirname(path.join(h.archiveDir, there)), { recursive: true });
  await fs.writeFile(path.join(h.archiveDir, there), bytes);

  const { archive } = h.deps;
  let listed: Awaited<ReturnType<typeof journalLines>> = [];
  const commits = new GroupCommit({
    archive,
    repo: h.deps.repo,
    journal: new PlacedJournals(archive),
    async beforeRowsCommit() {
      listed = await journalLines();
    },
  });
  const written = await archive.writeStream({ key: `address-${deviationid}`, body: Readable.from([bytes]), ext: "jpg" });
  // The row as a download writes it, and the journal's line of it (download-file.ts's placedOf).
  const fileOf = (s: StoredFile) => ({ path: s.relPath, size: s.size, sha256: s.sha256, mime: null, bytes: 0 });
  const { stored } = await commits.store(
    written,
    (s) => ({ id: rows[0]?.id ?? "", status: "done", rendition: "original", at: new Date(), ...fileOf(s) }),
    (s) => ({ deviationid: deviationid ?? "", accountId: 1, placedAt: new Date().toISOString(), row: { status: "done", rendition: "original", ...fileOf(s) } }),
  );
  expect(stored).toMatchObject({ relPath: there, deduplicated: true });
  // One journal at the commit, naming the file where it is, not the .jpg address it would have taken.
  expect(listed.map((l) => [l.deviationid, l.row.path])).toEqual([[deviationid, there]]);
  expect(await journalLines()).toEqual([]);
}, 60_000);

it("reads no FIFO standing where a journal's line names the file: the line is dropped, and the attempt goes on as for any original", async () => {
  const [, deviationid = ""] = await downloadableOriginals(h.pool, 2);
  const sha256 = createHash("sha256").update(deviationid).digest("hex");
  const at = originalRelPath(sha256, "jpg");
  const fifo = path.join(h.archiveDir, at);
  await fs.mkdir(path.dirname(fifo), { recursive: true });
  execFileSync("mkfifo", [fifo]);
  const { archive, services } = h.deps;
  await new PlacedJournals(archive).keep([
    {
      deviationid,
      accountId: 1,
      placedAt: new Date().toISOString(),
      row: { status: "done", rendition: "original", path: at, size: 10, sha256, mime: null, bytes: 10 },
    },
  ]);
  let timer: NodeJS.Timeout | undefined;
  const recalled = await Promise.race([
    new PlacedOriginals(services.coord, services.config.redisPrefix, archive).recall(deviationid),
    new Promise<"hung">((resolve) => {
      timer = setTimeout(() => resolve("hung"), 10_000);
    }),
  ]).finally(() => clearTimeout(timer));
  // A reader left waiting on it (the hang) is let go, so the run can end either way.
  await (await fs.open(fifo, fs.constants.O_WRONLY | fs.constants.O_NONBLOCK).catch(() => undefined))?.close();
  expect(recalled).toBeUndefined();
  expect(await journalLines()).toEqual([]);
  expect((await fs.lstat(fifo)).isFIFO()).toBe(true);
}, 60_000);
