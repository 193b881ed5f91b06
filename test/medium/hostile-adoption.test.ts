// `dvault import gallery-dl` against files that weigh like a work but are not it, and `verify` after a linked
// import is edited in place (issue 27, rows 2, 8 and 12; docs/RELIABILITY.md): a file of exactly the original's
// download_filesize made of zeros, of another picture, or of the original cut short and zero-filled is not the
// original (its download stays due and `download --once` fetches it); the right picture in another format is
// kept as a rendition only; a 2 GiB sparse file named for a small work is never read nor copied; and a
// `--link`ed original and a rendition kept beside it, edited in the user's folder, are corrupt to `verify`.
import { createHash, randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { formatVerifyReport } from "../../src/cli/verify.ts";
import { verifyArchive } from "../../src/downloads/verify.ts";
import { importGalleryDl } from "../../src/import/gallery-dl/import-folder.ts";
import { UNMATCHED, type ImportReport } from "../../src/import/gallery-dl/types.ts";
import { downloadableOwnerDeviations } from "../../src/simulator/dataset.ts";
import type { GroundTruth } from "../../src/simulator/server.ts";
import { gallerySource } from "../../src/sync/sources/gallery.ts";
import { createDownloadHarness, type DownloadHarness } from "../helpers/download-harness.ts";

type SimDeviation = GroundTruth["deviations"] extends ReadonlyMap<string, infer D> ? D : never;

const GiB = 1024 * 1024 * 1024;
const DATASET = { deviations: 24, galleryFolders: 2, collectionFolders: 1, favourites: 0, trackedUsers: 0, notes: 1, messages: 1, feedItems: 1, statuses: 1 };

let h: DownloadHarness;
let base: string;
let works: SimDeviation[];

const ratio = (d: SimDeviation) => (d.image?.width ?? 1) / (d.image?.height ?? 1);
const nameOf = (d: SimDeviation, ext = d.image?.ext ?? "jpg") => `deviantart_${d.numericId}_${d.title.replace(/[/\0]/g, "_")}.${ext}`;
const sha = (b: Buffer) => createHash("sha256").update(b).digest("hex");

async function importDir(dir: string, link = false): Promise<ImportReport> {
  return importGalleryDl({ services: h.services, dir, link, log: h.log, archive: h.deps.archive });
}

async function originalRow(id: string) {
  const { rows } = await h.pool.query<{ status: string; rendition: string | null; source: string; sha256: string | null; path: string | null }>(
    "SELECT status, rendition, source, sha256, path FROM downloads WHERE deviationid = $1 AND kind = 'original'",
    [id],
  );
  return rows[0];
}

async function previewOf(d: SimDeviation): Promise<Buffer> {
  const token = h.sim.issueUserToken().access_token;
  const json = (await (await fetch(`${h.sim.apiUrl}/deviation/${d.deviationid}`, { headers: { authorization: `Bearer ${token}` } })).json()) as {
    preview: { src: string };
  };
  return Buffer.from(await (await fetch(json.preview.src)).arrayBuffer());
}

beforeAll(async () => {
  h = await createDownloadHarness({ sim: { dataset: DATASET, downloadQuota: 1000 }, sources: [gallerySource], quota: 1000 });
  await h.syncAll(["gallery"]);
  works = downloadableOwnerDeviations(h.sim.truth).filter((d) => d.kind === "image" && !d.tier && !d.premiumFolder && !d.isMultiMedia && !d.isMature);
  // On the archive's filesystem, so --link can hard-link.
  base = await fs.mkdtemp(path.join(path.dirname(h.archiveDir), "dvault-hostile-adoption-"));
}, 120_000);

afterAll(async () => {
  await h?.close();
  if (base) await fs.rm(base, { recursive: true, force: true });
});

describe("import gallery-dl: a file must look like the work, not only weigh like it", () => {
  it("refuses zeros, another picture and a cut original of the original's size; keeps the work's picture in another format as a rendition; the originals stay due", async () => {
    const [zeros, other, cut, genuine] = works;
    // Another work's picture, of clearly other proportions than the work it is named for.
    const victim = works.find((d) => d !== zeros && d !== other && d !== cut && d !== genuine && Math.abs(ratio(d) / ratio(other as SimDeviation) - 1) > 0.2);
    // The work's own preview (a JPEG) under the name of its PNG, GIF or WebP original, padded to the original's size.
    const reformatted = works.find((d) => d.image?.ext !== "jpg" && ![zeros, other, cut, genuine, victim].includes(d));
    if (!zeros || !other || !cut || !genuine || !victim || !reformatted) throw new Error("the dataset lacks the works this test needs");
    const dir = path.join(base, "weigh", "deviantart", h.sim.truth.users.get(h.sim.truth.ownerId)?.username ?? "owner");
    await fs.mkdir(dir, { recursive: true });
    const sizeOf = (d: SimDeviation) => d.image?.filesize ?? 0;
    // Zeros, or bytes a decoder ignores after the picture's end (as the simulator pads).
    const padTo = (bytes: Buffer, size: number, fill: (n: number) => Buffer = (n) => randomBytes(n)) =>
      Buffer.concat([bytes.subarray(0, size), fill(Math.max(0, size - bytes.length))]);
    await fs.writeFile(path.join(dir, nameOf(zeros)), Buffer.alloc(sizeOf(zeros)));
    await fs.writeFile(path.join(dir, nameOf(victim, other.image?.ext)), padTo(await h.sim.fileBytes(other.deviationid), sizeOf(victim)));
    // An unfinished download preallocated to the full size: its first 2 KB, then zeros.
    await fs.writeFile(
      path.join(dir, nameOf(cut)),
      padTo((await h.sim.fileBytes(cut.deviationid)).subarray(0, 2048), sizeOf(cut), (n) => Buffer.alloc(n)),
    );
    await fs.writeFile(path.join(dir, nameOf(reformatted)), padTo(await previewOf(reformatted), sizeOf(reformatted)));
    await fs.writeFile(path.join(dir, nameOf(genuine)), await h.sim.fileBytes(genuine.deviationid));

    const report = await importDir(path.join(base, "weigh"));
    const refused = Object.fromEntries(report.unmatched.map((u) => [path.basename(u.file), u]));
    expect(refused[nameOf(zeros)]).toMatchObject({ reason: UNMATCHED.notTheWork, detail: expect.stringMatching(/first bytes are all zeros/) });
    expect(refused[nameOf(victim, other.image?.ext)]).toMatchObject({
      reason: UNMATCHED.notTheWork,
      detail: expect.stringMatching(/not in the proportions of the \d+×\d+/),
    });
    expect(refused[nameOf(cut)]).toMatchObject({ reason: UNMATCHED.notTheWork, detail: expect.stringMatching(/last bytes are all zeros|does not decode/) });
    expect(report).toMatchObject({ originals: 1, renditions: 1, quotaSaved: 1 });

    expect(await originalRow(genuine.deviationid)).toMatchObject({
      status: "done",
      rendition: "original",
      source: "imported",
      sha256: await h.sim.fileSha256(genuine.deviationid),
    });
    const { rows } = await h.pool.query<{ evidence: string }>("SELECT evidence FROM imported_files WHERE deviationid = $1", [genuine.deviationid]);
    expect(rows[0]?.evidence).toMatch(/original's download_filesize; its bytes are a \w+ of \d+×\d+, in the proportions of the announced \d+×\d+/);
    expect(await originalRow(reformatted.deviationid)).toMatchObject({ status: "degraded", rendition: "unknown", source: "imported" });
    for (const d of [zeros, victim, cut]) expect((await originalRow(d.deviationid))?.source, d.deviationid).not.toBe("imported");

    // The originals the import did not take are fetched from the service, and stored with the service's bytes.
    const seq = h.lastSeq();
    await h.runOnce();
    const fetched = h.sim
      .log()
      .filter((e) => e.seq > seq && e.route.includes("/deviation/download/"))
      .map((e) => (e.path.split("/").pop() ?? "").toUpperCase());
    for (const d of [zeros, victim, cut, reformatted]) {
      expect(fetched, d.deviationid).toContain(d.deviationid);
      expect(await originalRow(d.deviationid), d.deviationid).toMatchObject({
        status: "done",
        rendition: "original",
        sha256: await h.sim.fileSha256(d.deviationid),
      });
    }
    expect(fetched).not.toContain(genuine.deviationid);
  }, 60_000);

  it("never reads nor copies a 2 GiB sparse file named for a small work, as its rendition or as a further image", async () => {
    const small = works.at(-1) as SimDeviation;
    const dir = path.join(base, "sparse", "deviantart", "someone");
    await fs.mkdir(dir, { recursive: true });
    for (const name of [nameOf(small), `deviantart_${small.numericId}_${small.numericId + 5}_${small.title}_02.${small.image?.ext}`]) {
      const handle = await fs.open(path.join(dir, name), "w");
      await handle.truncate(2 * GiB);
      await handle.close();
    }
    const started = Date.now();
    const report = await importDir(path.join(base, "sparse"));
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(report).toMatchObject({ originals: 0, renditions: 0, extraImages: 0, bytesCopied: 0 });
    expect(report.unmatched.map((u) => [u.reason, u.detail?.replace(/\d+/g, "N")]).sort()).toEqual(
      [
        [UNMATCHED.oversized, "its N bytes are more than the N of the largest file the service announces for the work"],
        [UNMATCHED.notTheWork, "its first bytes are all zeros: no file format starts so (a sparse or wiped file)"],
      ].sort(),
    );
  });
});

describe("verify after a --link import", () => {
  it("finds the linked original and the rendition kept beside it corrupt once they are edited in place, and --fix wants the original again", async () => {
    const fresh = works.at(-2) as SimDeviation;
    // As if it had never been stored (the other tests may have downloaded or imported it).
    const stored = await originalRow(fresh.deviationid);
    if (stored?.path) await fs.rm(h.deps.archive.resolveInside(stored.path), { force: true });
    await h.pool.query("DELETE FROM imported_files WHERE deviationid = $1", [fresh.deviationid]);
    await h.pool.query("UPDATE downloads SET status = 'wanted', path = NULL, sha256 = NULL, rendition = NULL WHERE deviationid = $1", [fresh.deviationid]);
    const dir = path.join(base, "linked", "deviantart", "owner");
    await fs.mkdir(dir, { recursive: true });
    const original = path.join(dir, nameOf(fresh));
    const preview = path.join(dir, `deviantart_${fresh.numericId}_${fresh.title.replace(/[/\0]/g, "_")} preview.jpg`);
    await fs.writeFile(original, await h.sim.fileBytes(fresh.deviationid));
    await fs.writeFile(preview, await previewOf(fresh));
    const report = await importDir(path.join(base, "linked"), true);
    expect(report).toMatchObject({ originals: 1, renditions: 1, bytesCopied: 0 });
    const { rows } = await h.pool.query<{ role: string; path: string; linked: boolean; download_id: string | null }>(
      "SELECT role, path, linked, download_id FROM imported_files WHERE deviationid = $1 ORDER BY role",
      [fresh.deviationid],
    );
    expect(rows.map((r) => [r.role, r.linked, r.download_id !== null])).toEqual([
      ["original", true, true],
      ["rendition", true, false],
    ]);
    const clean = await verifyArchive({ deps: h.deps, fix: false, log: h.log });
    expect(clean.corrupt).toEqual([]);

    // Edited in the user's folder, in place: the archive's links are the same files.
    for (const file of [original, preview]) {
      const handle = await fs.open(file, "r+");
      await handle.write(Buffer.from("edited in place"), 0, 15, 200);
      await handle.close();
    }
    const report8 = await verifyArchive({ deps: h.deps, fix: false, log: h.log });
    expect(report8.corrupt.map((c) => [c.path, c.deviationids, c.actual]).sort()).toEqual(
      [
        [rows[0]?.path, [fresh.deviationid], sha(await fs.readFile(original))],
        [rows[1]?.path, [fresh.deviationid], sha(await fs.readFile(preview))],
      ].sort(),
    );
    expect(report8.ok).toBe(clean.ok - 2);

    const fixed = await verifyArchive({ deps: h.deps, fix: true, log: h.log });
    expect(fixed).toMatchObject({ requeued: 1, forgotten: 2 });
    // What --fix did, in the words the person reads.
    expect(formatVerifyReport(fixed, true)).toMatch(/^forgotten 2 import record\(s\) of bytes no longer in the archive/m);
    expect(await originalRow(fresh.deviationid)).toMatchObject({ path: null });
    const after = await verifyArchive({ deps: h.deps, fix: false, log: h.log });
    expect(after).toMatchObject({ corrupt: [], missing: [] });
    // The user's files are left as they are.
    await expect(fs.readFile(preview)).resolves.toBeTruthy();
  });
});
