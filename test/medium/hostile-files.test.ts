// Files made by someone else (docs/RELIABILITY.md#foreign-files). A gallery-dl folder: a FIFO at a sidecar's name
// and as the --archive file, sidecars linked to /dev/zero, /dev/urandom and to a file outside the folder, and a file
// deeper than PATH_MAX; the import never waits on a FIFO and ends on SIGTERM within seconds, follows no link (and
// says so truthfully: the outside sidecar decides nothing), reads no device, and reports what it could not reach.
// A track list: read as a stream in batches (bench/track-import-rss.ts measures a 108 MB one), never a FIFO or a link.
import { execFileSync, spawn } from "node:child_process";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { UserError } from "../../src/errors.ts";
import { importGalleryDl } from "../../src/import/gallery-dl/import-folder.ts";
import { UNMATCHED, type ImportReport } from "../../src/import/gallery-dl/types.ts";
import { gallerySource } from "../../src/sync/sources/gallery.ts";
import { openTrackList } from "../../src/track-lists/files.ts";
import { importTrackList } from "../../src/track-lists/import-list.ts";
import { createDownloadHarness, type DownloadHarness } from "../helpers/download-harness.ts";
import { collectRun } from "../helpers/dvault-cli.ts";

let h: DownloadHarness;
let base: string;
let owner: string;
/** The deviations the folder's files are the originals of. */
let works: Array<{ deviationid: string; numericId: number; ext: string }>;

beforeAll(async () => {
  h = await createDownloadHarness({ sim: { dataset: { deviations: 12, galleryFolders: 1, collectionFolders: 0, favourites: 0 } }, sources: [gallerySource] });
  // The mirror knows the works: a sidecar naming one would decide the match on its own.
  await h.syncAll(["gallery"]);
  const truth = h.sim.truth;
  owner = truth.users.get(truth.ownerId)?.username as string;
  works = [...truth.deviations.values()]
    .filter((d) => d.authorId === truth.ownerId && !d.isDeleted && d.kind === "image" && d.isDownloadable && d.image && !d.tier && !d.isMultiMedia)
    .sort((a, b) => a.numericId - b.numericId)
    .slice(0, 5)
    .map((d) => ({ deviationid: d.deviationid, numericId: d.numericId, ext: d.image?.ext ?? "jpg" }));
  if (works.length < 5) throw new Error("the dataset needs 5 downloadable images of the owner");
  base = await fs.mkdtemp(path.join(os.tmpdir(), "dvault-hostile-files-"));
}, 120_000);

afterAll(async () => {
  await h?.close();
  // rm(1) walks below PATH_MAX; Node's recursive rm names every path whole.
  if (base) execFileSync("rm", ["-rf", base]);
});

const nameOf = (w: { numericId: number; ext: string }, title: string) => `deviantart_${w.numericId}_${title}.${w.ext}`;

/** A folder of its own per test: the user folder inside it. */
async function userFolder(name: string): Promise<{ dir: string; user: string }> {
  const dir = path.join(base, name);
  const user = path.join(dir, "deviantart", owner);
  await fs.mkdir(user, { recursive: true });
  return { dir, user };
}

const reasonsOf = (r: ImportReport) => new Map(r.unmatched.map((u) => [u.file, u.reason]));

describe("import gallery-dl from a hostile folder", () => {
  it("reads no FIFO or device at a sidecar's name, follows no sidecar link out of the folder, and reports a file past PATH_MAX", async () => {
    const { dir, user } = await userFolder("in-process");
    const [fifo, zero, random, outside, deep] = works as [(typeof works)[0], (typeof works)[0], (typeof works)[0], (typeof works)[0], (typeof works)[0]];
    const put = async (w: typeof fifo, name: string) => fs.writeFile(path.join(user, name), await h.sim.fileBytes(w.deviationid));
    await put(fifo, nameOf(fifo, "fifo"));
    execFileSync("mkfifo", [path.join(user, `${nameOf(fifo, "fifo")}.json`)]);
    await put(zero, nameOf(zero, "zero"));
    await fs.symlink("/dev/zero", path.join(user, `${nameOf(zero, "zero")}.json`));
    await put(random, nameOf(random, "random"));
    await fs.symlink("/dev/urandom", path.join(user, `${nameOf(random, "random")}.json`));
    // No index in its name: only the sidecar, a link to a file outside the folder, could name its deviation.
    const mystery = `mystery.${outside.ext}`;
    await put(outside, mystery);
    const planted = path.join(base, "planted.json");
    await fs.writeFile(planted, JSON.stringify({ deviationid: outside.deviationid.toLowerCase() }));
    await fs.symlink(planted, path.join(user, `${mystery}.json`));
    // 20 folders of 240 characters: past PATH_MAX (4096) from the folder's top; made one relative step at a time.
    const segment = "d".repeat(240);
    const dig = `process.chdir(process.argv[1]); for (let i = 0; i < 20; i++) { fs.mkdirSync(process.argv[2]); process.chdir(process.argv[2]); } fs.writeFileSync(process.argv[3], "x");`;
    execFileSync(process.execPath, ["-e", dig, user, segment, nameOf(deep, "deep")]);

    const rssBefore = process.resourceUsage().maxRSS;
    const report = await importGalleryDl({ services: h.services, dir, link: false, log: h.log, archive: h.deps.archive });
    const grewKb = process.resourceUsage().maxRSS - rssBefore;

    const rel = (name: string) => `deviantart/${owner}/${name}`;
    const reasons = reasonsOf(report);
    expect(reasons.get(rel(`${nameOf(fifo, "fifo")}.json`))).toBe(UNMATCHED.notFile);
    expect(reasons.get(rel(`${nameOf(zero, "zero")}.json`))).toBe(UNMATCHED.symlink);
    expect(reasons.get(rel(`${nameOf(random, "random")}.json`))).toBe(UNMATCHED.symlink);
    // The report says the link was not followed, and it was not: the file's sidecar named nothing.
    expect(reasons.get(rel(`${mystery}.json`))).toBe(UNMATCHED.symlink);
    expect(reasons.get(rel(mystery))).toBe(UNMATCHED.noId);
    const { rows } = await h.pool.query("SELECT 1 FROM imported_files WHERE deviationid = $1", [outside.deviationid]);
    expect(rows).toEqual([]);
    // The deepest folder it could still name is reported, with the reason and what it means.
    const tooDeep = report.unmatched.filter((u) => u.reason === UNMATCHED.tooDeep);
    expect(tooDeep).toEqual([
      {
        file: expect.stringMatching(new RegExp(`^deviantart/${owner}/(${segment}/)+${segment}$`)),
        reason: UNMATCHED.tooDeep,
        detail: "a folder: none of its files were read",
      },
    ]);
    // The files beside the hostile sidecars are adopted by their names, and nothing read /dev/zero into memory.
    expect(report.originals).toBe(3);
    expect(grewKb).toBeLessThan(200 * 1024);
  });

  it("as the command: never waits on a FIFO at a sidecar's name, and ends within 5 s of SIGTERM with what it did kept", async () => {
    const { dir, user } = await userFolder("cli");
    const [w] = works;
    await fs.writeFile(path.join(user, nameOf({ numericId: 987_654_321, ext: "png" }, "nowhere")), "not in any listing");
    await fs.writeFile(path.join(user, nameOf(w!, "fifo")), await h.sim.fileBytes(w!.deviationid));
    execFileSync("mkfifo", [path.join(user, `${nameOf(w!, "fifo")}.json`)]);
    // The owner's gallery is asked for the unknown index; its answer takes a minute.
    h.sim.faults.add({ route: "/gallery/all", kind: "latency", latencyMs: 60_000, times: 10 });
    const seq = h.lastSeq();
    const started = Date.now();
    const child = spawn(process.execPath, [path.resolve("bin/dvault.js"), "import", "gallery-dl", dir, "--json"], {
      env: { PATH: process.env.PATH ?? "", HOME: "/nonexistent-home", LOG_LEVEL: "warn", REDIS_URL: h.redis.url, ...h.env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const run = collectRun(child, started);
    try {
      // The listing is asked: the walk went past the FIFO without waiting on it.
      await expect.poll(() => h.sim.log().some((e) => e.seq > seq && e.path.includes("/gallery/all")), { timeout: 30_000, interval: 100 }).toBe(true);
      const signalled = Date.now();
      child.kill("SIGTERM");
      const ended = await run;
      expect(Date.now() - signalled).toBeLessThan(5000);
      expect(ended.code).toBe(130);
      expect(ended.stderr.trim().split("\n")).toEqual(["dvault: import stopped: what was imported so far is kept; run it again to go on"]);
    } finally {
      h.sim.faults.clear();
      child.kill("SIGKILL");
    }
  }, 60_000);

  it("refuses a FIFO given as --archive in one line, at once", async () => {
    const { dir } = await userFolder("archive-fifo");
    const fifo = path.join(base, "archive.sqlite3");
    execFileSync("mkfifo", [fifo]);
    await expect(importGalleryDl({ services: h.services, dir, archiveFile: fifo, link: false, log: h.log, archive: h.deps.archive })).rejects.toThrow(
      new UserError(`--archive ${fifo}: not a regular file (a FIFO); give the path of gallery-dl's archive file (its "archive" option)`),
    );
  });
});

describe("track import of a hostile list", () => {
  it("reads a txt list as a stream, batch by batch: a name repeated thousands of lines later is still a duplicate, a 1 MB line is one unresolved entry", async () => {
    const file = path.join(base, "long-list.txt");
    const lines = Array.from({ length: 5000 }, (_, i) => `user-${i}`);
    lines[4500] = "USER-3";
    lines[2000] = "y".repeat(1_000_000);
    await fs.writeFile(file, `${lines.join("\r\n")}\r\n`);
    const accounts = (await h.services.accounts.list()).filter((a) => a.kind === "user");
    const source = await openTrackList(file);
    let batches = 0;
    const counted = {
      format: source.format,
      async *[Symbol.asyncIterator]() {
        for await (const batch of source.batches) {
          batches++;
          yield batch;
        }
      },
    };
    const options = { pool: h.pool, list: { format: source.format, batches: counted }, accounts, defaultAccount: async () => accounts[0]!, at: new Date() };
    const report = await importTrackList({ ...options, dryRun: true });
    expect(batches).toBeGreaterThan(2);
    expect(report.counts).toEqual({ added: 4998, skipped: 1, unresolved: 1 });
    expect(report.skipped).toEqual([{ account: accounts[0]!.name, username: "USER-3", where: "line 4501", reason: "duplicate in file" }]);
    expect(report.unresolved).toEqual([{ input: `${"y".repeat(199)}… (1000000 characters)`, where: "line 2001", reason: "longer than any username or URL" }]);
    const tracked = await h.pool.query("SELECT count(*)::int AS n FROM tracked_users");
    expect(tracked.rows[0].n).toBe(0);
  });

  it("refuses a FIFO or a link as the list in one line, at once, and an OPML list past 16 MiB before reading it", async () => {
    const fifo = path.join(base, "list-fifo.txt");
    execFileSync("mkfifo", [fifo]);
    await expect(openTrackList(fifo)).rejects.toThrow(new UserError(`cannot read ${fifo}: not a regular file (a FIFO); give the list as a file of its own`));
    const link = path.join(base, "list-link.txt");
    await fs.symlink("/dev/zero", link);
    await expect(openTrackList(link)).rejects.toThrow(new UserError(`cannot read ${link}: a symbolic link (not followed); give the list as a file of its own`));
    const big = path.join(base, "big.opml");
    await fs.writeFile(big, '<?xml version="1.0"?><opml version="2.0"><body>');
    await fs.truncate(big, 17 * 1024 * 1024);
    await expect(openTrackList(big)).rejects.toThrow(
      /^\S+big\.opml is 17 MiB: an OPML or JSON list is read whole, up to 16 MiB; give the usernames one a line \(--format txt\)/,
    );
  });
});
