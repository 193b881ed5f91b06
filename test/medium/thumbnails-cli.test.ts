// Thumbnails of a real archive as a user meets them (bin/dvault.js in a child process, real Postgres, Redis and
// the simulator's files): `dvault thumbnails --once` makes them for what `download --once` stored, `dvault
// verify` finds one that went missing and `--fix` makes it again, and the dashboard serves them at
// /thumb/{s,m}/<sha256>.webp with the headers the gallery relies on. A thumbnail's partial file names its writer, and
// `dvault thumbnails --once` first removes the one a killed writer left, never a live one's.
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startDashboard, type RunningDashboard } from "../../src/http/server.ts";
import { thisWriterTag } from "../../src/queue/holder.ts";
import { Archive } from "../../src/storage/archive.ts";
import { kindOfExtension } from "../../src/storage/thumbnail-render.ts";
import { thumbKey, Thumbnails } from "../../src/storage/thumbnails.ts";
import { gallerySource } from "../../src/sync/sources/gallery.ts";
import { createDownloadHarness, type DownloadHarness } from "../helpers/download-harness.ts";
import { runDvault } from "../helpers/dvault-cli.ts";
import { makeImage } from "../helpers/image-fixtures.ts";
import { partialNamesDuring } from "../helpers/partial-names.ts";
import { writerOfChild } from "../helpers/writer-child.ts";

let h: DownloadHarness;
let thumbs: Thumbnails;

const dvault = (args: string[]) => runDvault(h, args);

beforeAll(async () => {
  h = await createDownloadHarness({
    sim: { dataset: { deviations: 8, galleryFolders: 1, collectionFolders: 0, favourites: 0, trackedUsers: 0 }, downloadQuota: 100, startTime: new Date() },
    sources: [gallerySource],
    quota: 100,
  });
  await h.syncAll(["gallery"]);
  expect((await dvault(["download", "--once"])).code).toBe(0);
  // The simulator's images are real pictures (src/simulator/pictures.ts), its journals text: one more picture
  // beside them, stored by hand.
  await h.deps.archive.storeBytes({ bytes: await makeImage("png", 1400, 900, 5), ext: "png" });
  thumbs = new Thumbnails(new Archive({ root: h.archiveDir, minFreeBytes: 0 }).blobs);
}, 180_000);

afterAll(async () => {
  await h?.close();
});

async function stored() {
  const out = [];
  for await (const o of thumbs.originals()) out.push(o);
  return out;
}

describe("dvault thumbnails / verify", () => {
  it("makes every stored file's thumbnails once; verify finds one missing and --fix makes it again", async () => {
    const files = await stored();
    expect(files.length).toBeGreaterThan(0);
    // Right after the clean download, before any thumbnail is made: not made yet is not missing, and the exit code says the archive is whole.
    const early = await dvault(["verify"]);
    expect(early.code).toBe(0);
    expect(early.stdout).toMatch(
      new RegExp(`^thumbnails 0 ok, 0 placeholder\\(s\\), 0 missing, 0 unreadable, ${files.length} not made yet of ${files.length} file\\(s\\)$`, "m"),
    );
    expect(early.stdout).not.toMatch(/^ {2}missing {4}thumbnails of/m);
    expect(early.stdout).toContain(`the ${files.length} not made yet are made by a running worker`);
    const images = files.filter((o) => kindOfExtension(o.ext) === "image").length;
    expect(images).toBeGreaterThan(1);
    const first = await dvault(["thumbnails", "--once"]);
    expect(first.stderr).toBe("");
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(
      new RegExp(
        `^thumbnails: ${images} made, ${files.length - images} placeholder tile\\(s\\), 0 already there, 0 failed, of ${files.length} file\\(s\\)`,
        "m",
      ),
    );
    const again = await dvault(["thumbnails", "--once"]);
    expect(again.stdout).toMatch(
      new RegExp(`^thumbnails: 0 made, 0 placeholder tile\\(s\\), ${files.length} already there, 0 failed, of ${files.length} file\\(s\\)`, "m"),
    );
    // A killed writer's partial file, and one this live process may still be writing: the command's start removes the
    // first only.
    const partialDir = path.join(h.archiveDir, ".partial");
    await fs.mkdir(partialDir, { recursive: true });
    const dead = await writerOfChild("exited");
    const left = `blob-${dead.tag}-00000000000000aa.part`;
    const mine = `blob-${thisWriterTag()}-00000000000000bb.part`;
    for (const name of [left, mine]) await fs.writeFile(path.join(partialDir, name), "half a thumbnail");
    // --rebuild makes every one again, even those that exist.
    const { result: rebuilt, names } = await partialNamesDuring(partialDir, () => dvault(["thumbnails", "--once", "--rebuild"]));
    expect(rebuilt.code, rebuilt.stderr).toBe(0);
    expect((await fs.readdir(partialDir)).filter((n) => n.startsWith("blob-"))).toEqual([mine]);
    await fs.rm(path.join(partialDir, mine));
    // Each thumbnail went through a partial file named for the command: a writer of this host, neither this process
    // nor the dead child.
    const made = names.filter((n) => n.startsWith("blob-") && n !== left && n !== mine);
    expect(made.length).toBeGreaterThan(0);
    const writers = new Set(made.map((n) => /^blob-([A-Za-z0-9._-]+)-[0-9a-f]{16}\.part$/.exec(n)?.[1]));
    expect(writers.size).toBe(1);
    const [writer] = writers;
    const place = thisWriterTag().split("-").slice(0, -2).join("-");
    expect(writer?.startsWith(`${place}-`)).toBe(true);
    expect([thisWriterTag(), dead.tag]).not.toContain(writer);
    expect(rebuilt.stdout).toMatch(
      new RegExp(
        `^thumbnails: ${images} made, ${files.length - images} placeholder tile\\(s\\), 0 already there, 0 failed, of ${files.length} file\\(s\\)`,
        "m",
      ),
    );

    const victim = (await Promise.all(files.map(async (o) => ((await thumbs.state(o)) === "present" ? o : undefined)))).find((o) => o);
    if (!victim) throw new Error("no file with WebP thumbnails");
    await fs.rm(h.deps.archive.resolveInside(thumbKey(victim.sha256, victim.size, "s")));
    const report = await dvault(["verify"]);
    // A thumbnail made and then gone is reported, and never changes the exit code (verify --help).
    expect(report.code).toBe(0);
    expect(report.stdout).toMatch(/^thumbnails \d+ ok, \d+ placeholder\(s\), 1 missing, 0 unreadable, 0 not made yet of \d+ file\(s\)/m);
    expect(report.stdout).toContain(`missing    thumbnails of ${victim.key}`);

    const fix = await dvault(["verify", "--fix"]);
    expect(fix.stdout).toMatch(/^ {2}made 1$/m);
    expect(await thumbs.state(victim)).toBe("present");
    expect((await dvault(["verify"])).stdout).toMatch(/^thumbnails \d+ ok, \d+ placeholder\(s\), 0 missing, 0 unreadable, 0 not made yet/m);
  });
});

describe("GET /thumb/{s,m}/<sha256>.webp", () => {
  // An archive of its own: the files stored and the thumbnails made here would count in the verify test's.
  let archive: Archive;
  let dir: string;
  let dash: RunningDashboard;
  beforeAll(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), "dvault-thumb-"));
    archive = new Archive({ root: dir, minFreeBytes: 0 });
    dash = await startDashboard({ ...h.services, config: { ...h.services.config, archiveDir: dir } }, { host: "127.0.0.1", port: 0 });
  });
  afterAll(async () => {
    await dash?.close();
    if (dir) await fs.rm(dir, { recursive: true, force: true });
  });

  it("serves a WebP tile within 100 KB as immutable, made on demand when missing", async () => {
    const file = await archive.storeBytes({ bytes: await makeImage("jpg", 3000, 2000, 11), ext: "jpg" });
    for (const variant of ["s", "m"] as const) {
      const res = await fetch(`${dash.url}/thumb/${variant}/${file.sha256}.webp`);
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toBe("image/webp");
      expect(res.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
      const bytes = Buffer.from(await res.arrayBuffer());
      const meta = await sharp(bytes).metadata();
      expect(Math.max(meta.width ?? 0, meta.height ?? 0)).toBe(variant === "s" ? 320 : 1280);
      if (variant === "s") expect(bytes.length).toBeLessThanOrEqual(100 * 1024);
    }
    await expect(fs.stat(archive.resolveInside(thumbKey(file.sha256, file.size, "m")))).resolves.toBeTruthy();
  });

  it("serves the placeholder SVG, with a shorter cache, for a file that cannot be decoded", async () => {
    const file = await archive.storeBytes({ bytes: Buffer.from("\x00\x00\x00\x18ftypmp42 not really a video"), ext: "mp4" });
    const res = await fetch(`${dash.url}/thumb/s/${file.sha256}.webp`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^image\/svg\+xml/);
    expect(res.headers.get("cache-control")).toBe("public, max-age=3600");
    expect(res.headers.get("content-security-policy")).toContain("sandbox");
    expect(await res.text()).toContain("MP4 · video");
  });

  it("answers 404 for a sha256 the archive does not hold, and for anything that is not one", async () => {
    const missing = await fetch(`${dash.url}/thumb/s/${"a".repeat(64)}.webp`);
    expect(missing.status).toBe(404);
    expect(missing.headers.get("cache-control")).toBe("no-store");
    for (const bad of [`/thumb/x/${"a".repeat(64)}.webp`, "/thumb/s/..%2F..%2Fetc%2Fpasswd.webp", `/thumb/s/${"A".repeat(64)}.webp`]) {
      expect((await fetch(`${dash.url}${bad}`)).status, bad).toBe(404);
    }
  });
});
