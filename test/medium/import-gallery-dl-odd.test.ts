// `dvault import gallery-dl` on folders a person really has, beside the fixture's tidy one
// (test/helpers/gallery-dl-fixture.ts): the same picture kept for several works at once, names that are not UTF-8,
// and an archive folder that refuses writes.
import { execFileSync } from "node:child_process";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { formatImportReport } from "../../src/cli/import.ts";
import { importGalleryDl } from "../../src/import/gallery-dl/import-folder.ts";
import { UNMATCHED } from "../../src/import/gallery-dl/types.ts";
import { gallerySource } from "../../src/sync/sources/gallery.ts";
import { createDownloadHarness, type DownloadHarness } from "../helpers/download-harness.ts";
import { runDvault } from "../helpers/dvault-cli.ts";
import { partialNamesDuring } from "../helpers/partial-names.ts";
import { thisWriterTag } from "../../src/queue/holder.ts";
import { writeGalleryDlFixture, type GalleryDlFixture } from "../helpers/gallery-dl-fixture.ts";

let h: DownloadHarness;
let fixture: GalleryDlFixture;
const folders: string[] = [];

async function newFolder(): Promise<string> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), "dvault-gallery-dl-odd-"));
  folders.push(dir);
  return dir;
}

/** A new gallery-dl folder with the owner's user folder, empty, or holding the fixture's `nth` original named by its index. */
async function ownerFolder(nth?: number): Promise<{ dir: string; user: string }> {
  const dir = await newFolder();
  const user = path.join(dir, "deviantart", fixture.users.owner);
  await fs.mkdir(user, { recursive: true });
  if (nth !== undefined) {
    const work = byIndex()[nth];
    if (!work) throw new Error(`the fixture has no original named by index at ${nth}`);
    await fs.copyFile(work.file, path.join(user, path.basename(work.file)));
  }
  return { dir, user };
}

/** The fixture's originals whose names carry their index (gallery-dl's default names). */
const byIndex = () => fixture.originals.filter((o) => /^deviantart_\d+_/.test(path.basename(o.file)));

beforeAll(async () => {
  h = await createDownloadHarness({
    sim: {
      dataset: { deviations: 40, galleryFolders: 3, collectionFolders: 2, favourites: 12, trackedUsers: 2, trackedUserDeviations: 8 },
      downloadQuota: 100,
    },
    sources: [gallerySource],
    quota: 100,
  });
  fixture = await writeGalleryDlFixture(h.sim, await newFolder());
  await h.syncAll(["gallery"]);
}, 120_000);

afterAll(async () => {
  await h?.close();
  for (const dir of folders) await fs.rm(dir, { recursive: true, force: true });
});

describe(`${importGalleryDl.name} on odd folders`, () => {
  it("adopts one picture kept as a further image of four works: stored once, recorded four times", async () => {
    // Before: the four ran in four workers at once, both through the archive's one partial file for those bytes, and
    // the import stopped with "transfer adopt-… is already running in this process".
    const { dir, user } = await ownerFolder();
    const bytes = await fs.readFile(fixture.extraImage.file);
    const ext = path.extname(fixture.extraImage.file);
    const works = fixture.originals
      .map((o) => ({ ...o, index: /^deviantart_(\d+)_/.exec(path.basename(o.file))?.[1] }))
      .filter((o) => o.index !== undefined)
      .slice(0, 4);
    expect(works).toHaveLength(4);
    for (const { index } of works) await fs.writeFile(path.join(user, `deviantart_${index}_${Number(index) + 7_000_000}_shared_02${ext}`), bytes);

    const report = await importGalleryDl({ services: h.services, dir, link: false, log: h.log, archive: h.deps.archive });
    expect(report.unmatched).toEqual([]);
    expect(report.extraImages).toBe(4);
    expect(report.bytesCopied).toBe(bytes.length);
    const { rows } = await h.pool.query<{ deviationid: string; path: string }>(
      "SELECT deviationid, path FROM imported_files WHERE sha256 = $1 AND role = 'extra_image'",
      [fixture.extraImage.sha256],
    );
    const ids = new Set(works.map((o) => o.deviationid));
    expect(rows.filter((r) => ids.has(r.deviationid))).toHaveLength(4);
    expect(new Set(rows.map((r) => r.path)).size).toBe(1);
    expect((await fs.readFile(h.deps.archive.resolveInside(rows[0]?.path ?? ""))).equals(bytes)).toBe(true);
  }, 120_000);

  it("lists a file and a folder whose names are not UTF-8 as unmatched, and imports the rest", async () => {
    // Before: Node names them with U+FFFD, a name lstat does not find, which the walk took for a file gone since the
    // listing: the file, and every file of the folder, were neither counted nor reported.
    const { dir, user } = await ownerFolder(0);
    const latin = byIndex()[1];
    if (!latin) throw new Error("the fixture has fewer than two originals named by index");
    // A name written by a system whose names were Latin-1: "café" as the byte 0xE9.
    const latinName = Buffer.concat([
      Buffer.from(`${user}/${path.basename(latin.file, path.extname(latin.file))} caf`),
      Buffer.from([0xe9]),
      Buffer.from(path.extname(latin.file)),
    ]);
    await fs.writeFile(latinName, await fs.readFile(latin.file));
    const folder = Buffer.concat([Buffer.from(`${dir}/deviantart/old`), Buffer.from([0xff])]);
    await fs.mkdir(folder);
    await fs.writeFile(Buffer.concat([folder, Buffer.from("/deviantart_1_x.png")]), "inside");

    const report = await importGalleryDl({ services: h.services, dir, link: false, log: h.log, archive: h.deps.archive });
    expect(report.filesSeen).toBe(3);
    expect(report.unmatched).toEqual([
      {
        file: `deviantart/${fixture.users.owner}/${path.basename(latin.file, path.extname(latin.file))} caf\uFFFD${path.extname(latin.file)}`,
        reason: UNMATCHED.badName,
      },
      { file: "deviantart/old\uFFFD", reason: UNMATCHED.badName, detail: "a folder: none of its files were read" },
    ]);
    expect(report.originals + report.duplicates).toBe(1);
    expect(formatImportReport(report)).toContain(`unmatched deviantart/old\uFFFD: ${UNMATCHED.badName} (a folder: none of its files were read)`);
  }, 120_000);

  it("stops in one line naming the archive folder that refuses writes and the fix, exit 2, and goes on when run again", async () => {
    // Before: "dvault: unexpected error: EPERM: operation not permitted, mkdir '…/originals/12'", exit 1.
    const { dir } = await ownerFolder(2);
    // Immutable (chattr +i): not even root may write there.
    const folders = [".partial", "originals"].map((f) => path.join(h.archiveDir, f));
    for (const f of folders) await fs.mkdir(f, { recursive: true });
    execFileSync("chattr", ["+i", ...folders]);
    let refused: Awaited<ReturnType<typeof runDvault>>;
    try {
      refused = await runDvault(h, ["import", "gallery-dl", dir]);
    } finally {
      execFileSync("chattr", ["-i", ...folders]);
    }
    expect(refused.code, refused.stderr).toBe(2);
    expect(refused.stderr.trim().split("\n")).toHaveLength(1);
    expect(refused.stderr).toMatch(
      new RegExp(`dvault may not write to ${h.archiveDir}/(\\.partial|originals)\\S* \\(EPERM\\): .*chattr -i.*run the import again to go on`),
    );
    const again = await runDvault(h, ["import", "gallery-dl", dir]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/^originals\s+1$/m);
  }, 120_000);

  it("copies through a partial file that names this process, which a start removes should the import be killed", async () => {
    const { dir } = await ownerFolder(3);
    // The archive the command opens (no `archive` given), as `dvault import` runs it.
    const { result, names } = await partialNamesDuring(path.join(h.archiveDir, ".partial"), () =>
      importGalleryDl({ services: h.services, dir, link: false, log: h.log }),
    );
    expect(result.originals).toBe(1);
    expect(names).toEqual([expect.stringMatching(new RegExp(`^adopt-${thisWriterTag().replaceAll(".", "\\.")}-[0-9a-f]{16}\\.part$`))]);
  }, 120_000);
});
