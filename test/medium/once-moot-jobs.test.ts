// `sync --once` queues each wanted file for a worker; `download --once` then does that work itself. The queue's jobs
// for the files it handled go with it (src/downloads/run-once.ts dropMootJobs), so `status` does not count them as
// waiting downloads beside "nothing is due", and a worker started later finds none to run for nothing.
import { expect, it } from "vitest";
import { createDownloadHarness } from "../helpers/download-harness.ts";
import { runDvault } from "../helpers/dvault-cli.ts";

type Status = { queues: Array<{ name: string; waiting: number; delayed: number }>; downloads: { byStatus: Record<string, number> } };

it("download --once leaves no job waiting in the worker's queue for the files it handled", async () => {
  const h = await createDownloadHarness({
    sim: {
      seed: 33,
      dataset: { deviations: 8, galleryFolders: 1, collectionFolders: 0, favourites: 0, trackedUsers: 0, messages: 0, notes: 0, feedItems: 0 },
      downloadQuota: 500,
      startTime: new Date(),
    },
    quota: 3,
  });
  try {
    const synced = await runDvault({ redis: h.redis, env: h.env }, ["sync", "--once", "--only", "gallery"]);
    expect(synced.code, synced.stderr).toBe(0);
    const waiting = async () => {
      const status = await runDvault({ redis: h.redis, env: h.env }, ["status", "--json"]);
      const report = JSON.parse(status.stdout) as Status;
      return report.queues.find((q) => q.name === "downloads")?.waiting ?? -1;
    };
    const queued = (await h.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM downloads WHERE queued_at IS NOT NULL")).rows[0]?.n ?? 0;
    expect(queued).toBeGreaterThan(3);
    expect(await waiting()).toBe(queued);

    // An allowance of 3: some originals stored, the rest deferred to the next window; none left queued.
    const run = await runDvault({ redis: h.redis, env: h.env }, ["download", "--once"]);
    expect(run.code, run.stdout + run.stderr).toBe(0);
    const left = (await h.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM downloads WHERE queued_at IS NOT NULL")).rows[0]?.n;
    expect(left).toBe(0);
    expect(await waiting()).toBe(0);
  } finally {
    await h.close();
  }
}, 120_000);
