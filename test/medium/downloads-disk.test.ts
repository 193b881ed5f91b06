// The free-disk guard on a real, small filesystem (a tmpfs; skipped where it cannot be mounted): below
// the threshold the downloads pause with one log line and a flag in Redis, and resume when space
// returns; a transfer that runs out of space mid-file leaves no partial file and nothing counted done.
import { execFileSync } from "node:child_process";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JOB_DEFINITIONS } from "../../jobs/definitions.ts";
import { createLogger } from "../../src/log.ts";
import { Producer } from "../../src/queue/producer.ts";
import { downloadableOwnerDeviations, generateDataset, type DatasetOptions } from "../../src/simulator/dataset.ts";
import { DEFAULT_START_TIME } from "../../src/simulator/server.ts";
import { gallerySource } from "../../src/sync/sources/gallery.ts";
import { startHarnessWorker } from "../helpers/harness-worker.ts";
import { createDownloadHarness, parkOriginalsOf, type DownloadHarness } from "../helpers/download-harness.ts";
import { queueOf } from "../helpers/producer-queue.ts";
import { downloadsPausedKey } from "../../src/coord/downloads-pause.ts";

const MB = 1024 * 1024;
const DATASET: DatasetOptions = { deviations: 10, galleryFolders: 1, collectionFolders: 1, favourites: 0, trackedUsers: 0 };

const mountPoint = path.join(os.tmpdir(), `dvault-tmpfs-${process.pid}`);
let mounted = false;
try {
  execFileSync("mkdir", ["-p", mountPoint]);
  execFileSync("mount", ["-t", "tmpfs", "-o", "size=40m,mode=0700", "tmpfs", mountPoint], { stdio: "ignore" });
  mounted = true;
} catch {
  mounted = false;
}

let h: DownloadHarness;
let ids: string[];
const lines: Array<{ msg: string; level: number }> = [];
const sink = new Writable({
  write(chunk: Buffer, _enc, cb) {
    for (const l of chunk.toString().split("\n").filter(Boolean)) lines.push(JSON.parse(l) as { msg: string; level: number });
    cb();
  },
});

beforeAll(async () => {
  if (!mounted) return;
  ids = downloadableOwnerDeviations(generateDataset(1, DATASET, DEFAULT_START_TIME))
    .slice(0, 3)
    .map((d) => d.deviationid);
  h = await createDownloadHarness({
    sim: { dataset: DATASET, fileSizes: { [ids[0]!]: 30 * MB, [ids[1]!]: 2 * MB, [ids[2]!]: 1 * MB }, downloadQuota: 100, cdnBytesPerSecond: 12 * MB },
    sources: [gallerySource],
    quota: 100,
    archiveDir: path.join(mountPoint, "archive"),
    minFreeBytes: "4MiB",
    log: createLogger({ level: "info", destination: sink, pretty: false }),
  });
  await h.syncAll(["gallery"]);
  await parkOriginalsOf(h.pool, ids);
}, 120_000);

afterAll(async () => {
  await h?.close();
  if (mounted) execFileSync("umount", ["-l", mountPoint]);
  await fs.rm(mountPoint, { recursive: true, force: true });
});

const pausedKey = () => downloadsPausedKey(h.redis.prefix);
const count = (re: RegExp) => lines.filter((l) => re.test(l.msg)).length;

// Each test wants its own original, fills the disk relative to what is free now and counts log lines from
// where it started; the worker test puts the archive back as it found it. So the tests run in any order.
describe.skipIf(!mounted)("DiskGuard", () => {
  it("pauses before a transfer below the threshold, once, and resumes when space returns", async () => {
    await h.pool.query("UPDATE downloads SET status = 'wanted' WHERE deviationid = $1", [ids[1]]);
    const filler = path.join(mountPoint, "filler");
    // 3 MB left: under the 4 MiB threshold.
    await fs.writeFile(filler, Buffer.alloc((await h.deps.archive.freeBytes()) - 3 * MB));
    const pausedBefore = count(/^downloads paused/);
    const resumedBefore = count(/^downloads resumed/);
    const first = await h.runOnce();
    const second = await h.runOnce();
    expect(first.paused?.reason).toMatch(/downloads paused: disk almost full/);
    expect(second.paused).toBeDefined();
    expect(first.done + second.done).toBe(0);
    expect(await h.services.coord.get(pausedKey())).toContain("freeBytes");
    expect(count(/^downloads paused/)).toBe(pausedBefore + 1);

    await fs.rm(filler);
    const third = await h.runOnce();
    expect(third).toMatchObject({ done: 1, paused: undefined });
    expect(await h.services.coord.exists(pausedKey())).toBe(false);
    expect(count(/^downloads resumed/)).toBe(resumedBefore + 1);
  });

  it("leaves nothing behind when the disk fills up mid-file", async () => {
    const id = ids[0]!;
    await h.pool.query("UPDATE downloads SET status = 'wanted' WHERE deviationid = $1", [id]);
    const filler = path.join(mountPoint, "filler2");
    const isImage = (n: string | Buffer) => String(n).endsWith(".jpg") || String(n).endsWith(".png") || String(n).endsWith(".gif");
    const storedImages = async () => (await fs.readdir(path.join(h.archiveDir, "originals"), { recursive: true }).catch(() => [])).filter(isImage);
    const storedBefore = await storedImages();
    const run = h.runOnce();
    // Once 4 MB are in, something else takes 16 MB of the 40: the 30 MB file cannot fit any more.
    await expect.poll(async () => (await h.deps.archive.partialState(`${id}-original`)).size, { timeout: 30_000, interval: 10 }).toBeGreaterThanOrEqual(4 * MB);
    await fs.writeFile(filler, Buffer.alloc(16 * MB));
    const summary = await run;
    expect(summary.paused?.reason).toMatch(/disk almost full/);
    expect(summary.done).toBe(0);
    expect((await h.deps.archive.partialState(`${id}-original`)).size).toBe(0);
    const { rows } = await h.pool.query<{ status: string; path: string | null }>("SELECT status, path FROM downloads WHERE deviationid = $1", [id]);
    expect(rows[0]).toMatchObject({ status: "wanted", path: null });
    // No new original on disk: only what other tests stored before.
    expect(await storedImages()).toEqual(storedBefore);

    await fs.rm(filler);
    h.sim.setCdn({ bytesPerSecond: null });
    const after = await h.runOnce();
    expect(after).toMatchObject({ done: 1, paused: undefined });
    const { rows: done } = await h.pool.query<{ sha256: string }>("SELECT sha256 FROM downloads WHERE deviationid = $1", [id]);
    expect(done[0]?.sha256).toBe(await h.sim.fileSha256(id));
  });

  it("pauses the worker's downloads queue, and the maintenance job resumes it when space returns", async () => {
    const id = ids[2]!;
    await h.pool.query("UPDATE downloads SET status = 'wanted' WHERE deviationid = $1", [id]);
    const filler = path.join(mountPoint, "filler3");
    await fs.writeFile(filler, Buffer.alloc((await h.deps.archive.freeBytes()) - 2 * MB));
    const pausedBefore = count(/^downloads paused/);
    const resumedBefore = count(/^downloads resumed/);
    const producer = new Producer([...JOB_DEFINITIONS], h.services.queues);
    const worker = await startHarnessWorker(h);
    try {
      const queue = queueOf(producer, "downloads");
      await waitFor(async () => (await queue.isPaused()) && (await h.services.coord.exists(pausedKey())));
      expect(count(/^downloads paused/)).toBe(pausedBefore + 1);
      await fs.rm(filler);
      await queueOf(producer, "maintenance").add("downloads.enqueue", { scope: "all" });
      await waitFor(async () => !(await queue.isPaused()));
      expect(count(/^downloads resumed/)).toBe(resumedBefore + 1);
      await waitFor(
        async () => (await h.pool.query<{ status: string }>("SELECT status FROM downloads WHERE deviationid = $1", [id])).rows[0]?.status === "done",
      );
    } finally {
      await worker.stop("test done");
      await producer.close();
      // The worker's own syncs want and store every original: put the archive back to the three parked, none stored
      // but this test's own.
      const { rows: stored } = await h.pool.query<{ path: string }>("SELECT path FROM downloads WHERE path IS NOT NULL AND deviationid <> $1", [id]);
      for (const r of stored) await fs.rm(path.join(h.archiveDir, r.path), { force: true });
      await h.pool.query("DELETE FROM downloads WHERE NOT (kind = 'original' AND deviationid = ANY($1))", [ids]);
      await h.pool.query("UPDATE downloads SET status = 'failed', next_attempt_at = NULL, path = NULL WHERE deviationid <> $1", [id]);
    }
  }, 60_000);
});

async function waitFor(check: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  await expect.poll(check, { timeout: timeoutMs, interval: 50 }).toBe(true);
}
