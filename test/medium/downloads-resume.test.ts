// A transfer killed mid-file: a worker in a child process is SIGKILLed while a 96 MB original streams in;
// after the restart the partial file is resumed with a Range request (the simulator answers 206) and the
// final sha256 is the simulator's. The dead worker's per-file lock frees itself.
import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { downloadableOwnerDeviations, generateDataset, type DatasetOptions } from "../../src/simulator/dataset.ts";
import { DEFAULT_START_TIME } from "../../src/simulator/server.ts";
import { gallerySource } from "../../src/sync/sources/gallery.ts";
import { createDownloadHarness, type DownloadHarness } from "../helpers/download-harness.ts";

const DATASET: DatasetOptions = { deviations: 10, galleryFolders: 1, collectionFolders: 1, favourites: 0, trackedUsers: 0 };
const BIG = 96 * 1024 * 1024 + 321;

let h: DownloadHarness;
let big: string;
let child: ChildProcess | undefined;

beforeAll(async () => {
  big = downloadableOwnerDeviations(generateDataset(1, DATASET, DEFAULT_START_TIME))[0]!.deviationid;
  h = await createDownloadHarness({
    sim: { dataset: DATASET, fileSizes: { [big]: BIG }, downloadQuota: 100, cdnBytesPerSecond: 16 * 1024 * 1024 },
    sources: [gallerySource],
    quota: 100,
  });
  await h.syncAll(["gallery"]);
  // Only the big original: the child's worker starts with it.
  await h.pool.query("DELETE FROM downloads WHERE NOT (kind = 'original' AND deviationid = $1)", [big]);
}, 120_000);

afterAll(async () => {
  if (child && child.exitCode === null) child.kill("SIGKILL");
  await h?.close();
});

function cdnAnswers(): number[] {
  return h.sim
    .log()
    .filter((e) => e.route.startsWith("/_cdn/") && e.path.toLowerCase().includes(big.toLowerCase()))
    .map((e) => e.status);
}

describe("a download killed mid-file", () => {
  it("resumes with a Range request after the restart and ends with the right sha256", async () => {
    child = spawn(process.execPath, ["--import", "tsx", path.resolve("test/medium/downloads-child.ts")], {
      env: { ...process.env, DL_ENV: JSON.stringify(h.env), DL_NOW: String(h.sim.clock.now().getTime()) },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    child.stderr?.on("data", (c: Buffer) => (stderr += c.toString()));
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child!.once("exit", (_code, signal) => resolve(signal)));
    // Kill it once a quarter of the file is on disk.
    const key = `${big}-original`;
    const onDisk = async () => {
      if (child!.exitCode !== null) throw new Error(`the child exited early: ${stderr.slice(-2000)}`);
      return (await h.deps.archive.partialState(key)).size;
    };
    await expect.poll(onDisk, { timeout: 60_000, interval: 20, message: "the child never got a quarter of the file on disk" }).toBeGreaterThanOrEqual(BIG / 4);
    child.kill("SIGKILL");
    expect(await exited).toBe("SIGKILL");
    const kept = (await h.deps.archive.partialState(key)).size;
    expect(kept).toBeGreaterThanOrEqual(BIG / 4);
    expect(kept).toBeLessThan(BIG);
    const { rows } = await h.pool.query<{ status: string }>("SELECT status FROM downloads WHERE deviationid = $1", [big]);
    expect(rows[0]?.status).not.toBe("done");
    expect(cdnAnswers()).toEqual([200]);

    // The restart: the dead worker's lock expires on its own, then the partial file is continued.
    h.sim.setCdn({ bytesPerSecond: null });
    const summary = await h.runOnce({ busyWaitMs: 30_000 });
    // (The child's sync also wanted the gallery's small originals again: they are done too.)
    expect(summary.failed).toBe(0);
    expect(cdnAnswers()).toEqual([200, 206]);
    const { rows: after } = await h.pool.query<{ status: string; sha256: string; size: string; bytes_transferred: string }>(
      "SELECT status, sha256, size, bytes_transferred FROM downloads WHERE deviationid = $1 AND kind = 'original'",
      [big],
    );
    expect(after[0]).toMatchObject({ status: "done", sha256: await h.sim.fileSha256(big), size: String(BIG) });
    // Only the rest came over the network after the restart.
    expect(Number(after[0]!.bytes_transferred)).toBeLessThanOrEqual(BIG - kept + 1024 * 1024);
  }, 120_000);
});
