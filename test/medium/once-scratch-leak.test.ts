// A `--once` run on DVAULT_ENGINE=postgres runs its jobs in a scratch schema of BullMQ's tables of its own
// (dvault_jobs_once_<random>, src/queue/backend.ts#scratch), dropped when the run ends. A run killed outright
// (SIGKILL, the OOM killer, a power cut) never dropped it: each kill left a schema of some 50 tables and indexes
// with the run's jobs in the mirror's database for good, since nothing else ever removed one.
import { type ChildProcess, spawn } from "node:child_process";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { gallerySource } from "../../src/sync/sources/gallery.ts";
import { createDownloadHarness, type DownloadHarness } from "../helpers/download-harness.ts";
import { runDvault } from "../helpers/dvault-cli.ts";
import { TEST_ENGINE } from "../helpers/env.ts";

let h: DownloadHarness;
const children: ChildProcess[] = [];

beforeAll(async () => {
  h = await createDownloadHarness({
    sim: { dataset: { deviations: 8, galleryFolders: 1, collectionFolders: 0, favourites: 0, trackedUsers: 0 }, downloadQuota: 100 },
    sources: [gallerySource],
    quota: 100,
  });
  await h.syncAll(["gallery"]);
}, 120_000);

afterAll(async () => {
  for (const c of children) if (c.exitCode === null) c.kill("SIGKILL");
  await h?.close();
});

async function scratchSchemas(): Promise<string[]> {
  const { rows } = await h.pool.query<{ nspname: string }>("SELECT nspname FROM pg_namespace WHERE nspname LIKE 'dvault\\_jobs\\_once\\_%' ORDER BY 1");
  return rows.map((r) => r.nspname);
}

describe.runIf(TEST_ENGINE === "postgres")("a --once run killed outright on PostgreSQL alone", () => {
  it("leaves no scratch schema once the next run has ended", async () => {
    expect(await scratchSchemas()).toEqual([]);
    // Slow files, so that the run is mid-transfer when it is killed.
    h.sim.setCdn({ bytesPerSecond: 64 * 1024 });
    const child = spawn(process.execPath, [path.resolve("bin/dvault.js"), "download", "--once"], {
      env: { PATH: process.env.PATH ?? "", HOME: "/nonexistent-home", LOG_LEVEL: "warn", REDIS_URL: h.redis.url, ...h.env },
      stdio: ["ignore", "ignore", "ignore"],
    });
    children.push(child);
    await expect.poll(scratchSchemas, { timeout: 30_000, interval: 50 }).toHaveLength(1);
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    child.kill("SIGKILL");
    await exited;
    expect(await scratchSchemas()).toHaveLength(1);

    h.sim.setCdn({ bytesPerSecond: null });
    const again = await runDvault(h, ["download", "--once"]);
    expect(again.code, again.stdout + again.stderr).toBe(0);
    expect(await scratchSchemas()).toEqual([]);
  }, 120_000);
});
