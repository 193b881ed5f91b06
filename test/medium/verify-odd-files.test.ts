// `dvault verify` when something other than a stored file stands at a file's name in the archive folder: a FIFO
// (whose open without a writer waited for ever: verify never ended) and a link to a copy of the right bytes outside
// the archive (reported unreadable, exit 3, "run dvault verify again", which could never help); --fix sets them aside
// unread. A folder above a file that links out (files moved to another disk) is never a reason to download again. Each is named for what it is, the exit code is 2, and nothing
// at those names is touched without --fix.
import { execFileSync } from "node:child_process";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { gallerySource } from "../../src/sync/sources/gallery.ts";
import { createDownloadHarness, type DownloadHarness } from "../helpers/download-harness.ts";
import { type CliRun, runDvault } from "../helpers/dvault-cli.ts";

let h: DownloadHarness;
let outside: string;

beforeAll(async () => {
  h = await createDownloadHarness({
    sim: { dataset: { deviations: 6, galleryFolders: 1, collectionFolders: 0, favourites: 0, trackedUsers: 0 }, downloadQuota: 100, startTime: new Date() },
    sources: [gallerySource],
    quota: 10,
  });
  await h.syncAll(["gallery"]);
  const once = await runDvault(h, ["download", "--once"]);
  if (once.code !== 0) throw new Error(`download --once: ${once.stdout}${once.stderr}`);
  outside = await fs.mkdtemp(path.join(os.tmpdir(), "dvault-verify-outside-"));
}, 120_000);

afterAll(async () => {
  await h?.close();
  if (outside) await fs.rm(outside, { recursive: true, force: true });
});

/** Opens the FIFO's other end and closes it: a reader still waiting on it (a verify that hung) returns. */
async function releaseReaders(fifo: string): Promise<void> {
  const fd = await fs.open(fifo, fs.constants.O_WRONLY | fs.constants.O_NONBLOCK).catch(() => undefined);
  await fd?.close();
}

describe("dvault verify with odd files at a stored file's name", () => {
  it("names a FIFO and a link for what they are, ends, exits 2 and leaves both", async () => {
    const { rows } = await h.pool.query<{ deviationid: string; path: string }>(
      "SELECT deviationid, path FROM downloads WHERE kind = 'original' AND status = 'done' ORDER BY deviationid LIMIT 2",
    );
    const [piped, linked] = rows;
    if (!piped || !linked) throw new Error("the download stored fewer than two originals");
    const fifo = path.join(h.archiveDir, piped.path);
    await fs.rm(fifo);
    execFileSync("mkfifo", [fifo]);
    // The right bytes, moved elsewhere and linked back.
    const link = path.join(h.archiveDir, linked.path);
    const copy = path.join(outside, "moved.bin");
    await fs.copyFile(link, copy);
    await fs.rm(link);
    await fs.symlink(copy, link);

    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<"hung">((resolve) => {
      timer = setTimeout(() => resolve("hung"), 30_000);
    });
    let run: CliRun | "hung";
    try {
      run = await Promise.race([runDvault(h, ["verify"]), deadline]);
    } finally {
      clearTimeout(timer);
      await releaseReaders(fifo);
    }
    expect(run, "verify still waiting on the FIFO after 30 s").not.toBe("hung");
    if (run === "hung") return;
    expect(run.code, run.stdout + run.stderr).toBe(2);
    expect(run.stdout).toMatch(/^missing\s+2$/m);
    expect(run.stdout).toContain(`  ${piped.path} (${piped.deviationid}): a FIFO stands at its name, not the file`);
    expect(run.stdout).toContain(`  ${linked.path} (${linked.deviationid}): a symbolic link stands at its name, not the file`);
    expect(run.stderr).toContain("2 missing and 0 corrupt file(s)");
    // Without --fix nothing at those names changed.
    expect((await fs.lstat(fifo)).isFIFO()).toBe(true);
    expect(await fs.readlink(link)).toBe(copy);

    // Sizes only: the same two, not a crash on the link that leads out of the archive.
    const json = await runDvault(h, ["verify", "--no-deep", "--json"]);
    await releaseReaders(fifo);
    expect(json.code, json.stderr).toBe(2);
    const report = JSON.parse(json.stdout) as { missing: { path: string; found?: string }[] };
    expect(report.missing.map((m) => [m.path, m.found]).sort()).toEqual(
      [
        [piped.path, "a FIFO"],
        [linked.path, "a symbolic link"],
      ].sort(),
    );

    // --fix sets both aside unread, and wants the two files again; the copy the link led to is untouched.
    const fix = await runDvault(h, ["verify", "--fix"]);
    await releaseReaders(fifo);
    expect(fix.code, fix.stdout + fix.stderr).toBe(0);
    expect(fix.stdout).toContain(`  ${piped.path} (${piped.deviationid}): a FIFO stands at its name, not the file (moved to .corrupt/)`);
    expect(fix.stdout).toMatch(/^re-queued 2 row\(s\)/m);
    // What --help says --fix moves.
    expect((await runDvault(h, ["verify", "--help"])).stdout.replace(/\s+/g, " ")).toContain(
      "a link or FIFO standing at a file's name, are set aside under .corrupt/",
    );
    await expect(fs.lstat(fifo)).rejects.toThrow(/ENOENT/);
    await expect(fs.lstat(link)).rejects.toThrow(/ENOENT/);
    const aside = await fs.readdir(path.join(h.archiveDir, ".corrupt"));
    const asideLink = aside.find((n) => n.startsWith(path.basename(linked.path)));
    expect(asideLink && (await fs.readlink(path.join(h.archiveDir, ".corrupt", asideLink)))).toBe(copy);
    expect((await fs.lstat(path.join(h.archiveDir, ".corrupt", aside.find((n) => n.startsWith(path.basename(piped.path))) ?? ""))).isFIFO()).toBe(true);
    const { rows: wanted } = await h.pool.query<{ status: string }>("SELECT status FROM downloads WHERE deviationid = ANY($1) AND kind = 'original'", [
      [piped.deviationid, linked.deviationid],
    ]);
    expect(wanted.map((r) => r.status)).toEqual(["wanted", "wanted"]);
  }, 180_000);

  it("wants nothing again when the archive folder holds no originals/ (DVAULT_ARCHIVE_DIR typed wrong, a disk not mounted): one line, exit 3", async () => {
    const stored = async () =>
      (await h.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM downloads WHERE status IN ('done', 'degraded')")).rows[0]?.n ?? 0;
    const before = await stored();
    expect(before).toBeGreaterThan(0);
    // The mount point of a disk that is not mounted: an empty folder.
    const unmounted = await fs.mkdtemp(path.join(os.tmpdir(), "dvault-verify-unmounted-"));
    try {
      const fix = await runDvault({ redis: h.redis, env: { ...h.env, DVAULT_ARCHIVE_DIR: unmounted } }, ["verify", "--fix"]);
      expect(fix.stderr).toMatch(
        new RegExp(
          `^dvault: ${unmounted}/originals is not there, yet the database records \\d+ stored file\\(s\\): is DVAULT_ARCHIVE_DIR the archive's folder, and its disk mounted\\? Nothing was checked or wanted again`,
        ),
      );
      expect(fix.stdout).toBe("");
      expect(fix.code).toBe(3);
      expect(await stored()).toBe(before);
      expect(await fs.readdir(unmounted)).toEqual([]);
    } finally {
      await fs.rm(unmounted, { recursive: true, force: true });
    }
  }, 120_000);

  it("wants nothing again when a folder of originals/ links out of the archive (files moved to another disk): unreadable, exit 3", async () => {
    const { rows } = await h.pool.query<{ path: string }>(
      "SELECT path FROM downloads WHERE kind = 'original' AND status = 'done' ORDER BY deviationid LIMIT 1",
    );
    const stored = rows[0]?.path;
    if (!stored) throw new Error("no stored original");
    // Its shard folder moved to another disk and linked back: the files there are whole.
    const shard = path.join(h.archiveDir, path.dirname(stored));
    const moved = path.join(outside, "shard");
    await fs.rename(shard, moved);
    await fs.symlink(moved, shard);
    try {
      const fix = await runDvault(h, ["verify", "--fix"]);
      expect(fix.code, fix.stdout + fix.stderr).toBe(3);
      expect(fix.stdout).toContain(`  ${stored}: a folder above it links out of the archive (OutsideArchiveError)`);
      expect(fix.stdout).toMatch(/^re-queued 0 row\(s\)/m);
      // Not a read that broke off: another run alone changes nothing, so neither the report nor the last line says so.
      expect(fix.stdout).toMatch(/^unreadable 1 \(1 behind a folder that links out of the archive: move its files back/m);
      expect(fix.stdout + fix.stderr).not.toMatch(/could not be read|check the store/);
      expect(fix.stderr).toContain(`move them back under ${h.archiveDir}/originals/`);
      expect((await fs.readdir(moved)).length).toBeGreaterThan(0);
    } finally {
      await fs.unlink(shard);
      await fs.rename(moved, shard);
    }
  }, 120_000);
});
