// 1 000 originals through the real flow against the simulator's CDN, one of them 200 MB: every sha256
// matches the simulator's, each file is stored once under its content address, and one original that
// sits in 3 gallery folders and 2 collections is stored once with 5 readable links. Memory stays flat.
import fs from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { downloadableOwnerDeviations, generateDataset, type DatasetOptions } from "../../src/simulator/dataset.ts";
import { DEFAULT_START_TIME } from "../../src/simulator/server.ts";
import { collectionsSource } from "../../src/sync/sources/collections.ts";
import { gallerySource } from "../../src/sync/sources/gallery.ts";
import { createDownloadHarness, type DownloadHarness } from "../helpers/download-harness.ts";

const LARGE = 200 * 1024 * 1024 + 12_345;
const DATASET: DatasetOptions = { deviations: 1700, galleryFolders: 6, collectionFolders: 3, favourites: 30, trackedUsers: 0 };

let h: DownloadHarness;
let chosen: string[];
let shared: string;

beforeAll(async () => {
  // Small files keep the run quick; the newest downloadable deviation is the large one.
  const preview = downloadableOwnerDeviations(generateDataset(1, DATASET, DEFAULT_START_TIME));
  chosen = preview.slice(0, 1000).map((d) => d.deviationid);
  const fileSizes = Object.fromEntries(chosen.map((id, i) => [id, i === 0 ? LARGE : 1500 + ((i * 7919) % 6000)]));
  h = await createDownloadHarness({
    sim: { dataset: DATASET, fileSizes, downloadQuota: 5000 },
    sources: [gallerySource, collectionsSource],
    quota: 5000,
  });
  // One original in exactly 3 gallery folders and 2 collections.
  shared = chosen[7] as string;
  const own = (f: { ownerId: string }) => f.ownerId === h.sim.truth.ownerId;
  // The simulator's truth is its live world: membership is changed in place before the first sync.
  const galleries = h.sim.truth.galleryFolders.filter(own) as unknown as Array<{ deviationIds: string[] }>;
  const collections = h.sim.truth.collectionFolders.filter(own) as unknown as Array<{ deviationIds: string[] }>;
  galleries.forEach((f, i) => {
    const has = f.deviationIds.includes(shared);
    if (i < 3 && !has) f.deviationIds.unshift(shared);
    if (i >= 3 && has) f.deviationIds.splice(f.deviationIds.indexOf(shared), 1);
  });
  for (const f of collections.slice(0, 2)) if (!f.deviationIds.includes(shared)) f.deviationIds.unshift(shared);
  await h.syncAll(["gallery", "collections"]);
  await h.pool.query("DELETE FROM downloads WHERE NOT (kind = 'original' AND deviationid = ANY($1))", [chosen]);
}, 180_000);

afterAll(async () => {
  await h?.close();
});

// The first run is what the later steps inspect and repeat, and it is the slow part: one test, three steps.
describe("runDownloadsOnce", () => {
  it("stores 1 000 originals in flat memory, a shared original once with 5 links, and has nothing left on a second run", async () => {
    // Step 1: 1 000 originals whose sha256 all match the simulator's, in flat memory.
    const { rows: wanted } = await h.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM downloads WHERE status = 'wanted'");
    expect(wanted[0]?.n).toBe(1000);
    // The simulator draws its pictures in this process (sharp, src/simulator/pictures.ts): drawn once before the
    // measure, as its own memory is not dvault's.
    for (let i = 1; i < chosen.length; i += 50) await Promise.all(chosen.slice(i, i + 50).map((id) => h.sim.fileSha256(id)));
    let peak = process.memoryUsage().rss;
    const idle = peak;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 50);
    const summary = await h.runOnce({ concurrency: 8 });
    clearInterval(sampler);
    expect(summary).toMatchObject({ done: 1000, degraded: 0, deferred: 0, failed: 0, notDownloadable: 0 });
    // Streaming end to end: a 200 MB file does not show up in the process's memory.
    expect(peak - idle).toBeLessThan(150 * 1024 * 1024);

    const { rows } = await h.pool.query<{ deviationid: string; sha256: string; size: string; path: string }>(
      "SELECT deviationid, sha256, size, path FROM downloads WHERE kind = 'original'",
    );
    expect(rows).toHaveLength(1000);
    const mismatched: string[] = [];
    for (const r of rows) {
      if (r.sha256 !== (await h.sim.fileSha256(r.deviationid)) || Number(r.size) !== h.sim.fileSize(r.deviationid)) mismatched.push(r.deviationid);
      expect(r.path).toBe(`originals/${r.sha256.slice(0, 2)}/${r.sha256.slice(2, 4)}/${r.sha256}.${path.extname(r.path).slice(1)}`);
    }
    expect(mismatched).toEqual([]);
    const large = rows.find((r) => r.deviationid === chosen[0]);
    expect(Number(large?.size)).toBe(LARGE);
    const st = await fs.stat(path.join(h.archiveDir, large!.path));
    expect(st.size).toBe(LARGE);
    expect(st.mode & 0o777).toBe(0o600);
    // Nothing half-written is left behind.
    const partials = await fs.readdir(path.join(h.archiveDir, ".partial")).catch(() => []);
    expect(partials.filter((n) => n.endsWith(".part"))).toEqual([]);

    // Step 2: a shared original is stored once, with a readable link from each of its 3 folders and 2 collections.
    const { rows: sharedRows } = await h.pool.query<{ path: string }>("SELECT path FROM downloads WHERE deviationid = $1", [shared]);
    expect(sharedRows).toHaveLength(1);
    const target = sharedRows[0]!.path;
    const links: string[] = [];
    const walk = async (dir: string): Promise<void> => {
      for (const e of await fs.readdir(dir, { withFileTypes: true })) {
        const abs = path.join(dir, e.name);
        if (e.isDirectory()) await walk(abs);
        else if (e.isSymbolicLink() && e.name.includes(`[${shared}]`)) {
          expect(path.relative(h.archiveDir, path.resolve(dir, await fs.readlink(abs)))).toBe(target);
          // Relative links: the archive can be moved or copied whole.
          expect(path.isAbsolute(await fs.readlink(abs))).toBe(false);
          links.push(path.relative(h.archiveDir, abs));
        }
      }
    };
    await walk(path.join(h.archiveDir, "by-user"));
    expect(links).toHaveLength(5);
    expect(links.filter((l) => l.includes("/collections/"))).toHaveLength(2);
    // One file on disk for it, whatever the number of links.
    const sha = path.basename(target).split(".")[0]!;
    const dir = await fs.readdir(path.join(h.archiveDir, "originals", sha.slice(0, 2), sha.slice(2, 4)));
    expect(dir.filter((n) => n.startsWith(sha))).toHaveLength(1);

    // Step 3: a second run has nothing left to do.
    const second = await h.runOnce();
    expect(second).toMatchObject({ done: 0, degraded: 0, deferred: 0, failed: 0 });
    expect(h.sim.quotaUsed(h.sim.truth.ownerId)).toBe(1000);
  }, 300_000);
});
