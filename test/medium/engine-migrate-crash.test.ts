// A move between engines stopped at each of its steps (src/engine/move.ts says why its order makes every stop
// safe): the settings still name the source, a worker started there fetches each queued original exactly once,
// and `dvault engine migrate` run again finishes the move as if nothing had stopped it. The stop is a throw from the
// move's own step callback: the move keeps nothing in memory that outlives it, so what a crash leaves behind is what
// the engines and the database hold at that moment, which is what is checked.
import { afterAll, beforeAll, expect, it } from "vitest";
import type { Engine } from "../../src/config.ts";
import { downloadsPausedKey } from "../../src/coord/downloads-pause.ts";
import { installWork } from "../../src/engine/install-work.ts";
import { MOVE_STEPS, type MoveStep, moveEngine } from "../../src/engine/move.ts";
import { gallerySource } from "../../src/sync/sources/gallery.ts";
import { createDownloadHarness, type DownloadHarness, downloadTraffic } from "../helpers/download-harness.ts";
import { type Holding, holding, installOn, onEngine, PACE_KEY } from "../helpers/engine-install.ts";
import { doneOriginals, startHarnessWorker } from "../helpers/harness-worker.ts";
import { describeNeedingRedis } from "../helpers/needs-redis.ts";

const SOURCES = new Map([[gallerySource.name, gallerySource]]);
const POLL = { timeout: 60_000, interval: 100 };

class Crash extends Error {}

/** A move from `from` that stops once `step` is done. */
async function moveStoppedAfter(h: DownloadHarness, from: Engine, to: Engine, step: MoveStep): Promise<void> {
  const stop = (done: MoveStep) => {
    if (done === step) throw new Crash(`stopped after ${step}`);
  };
  await expect(moveEngine({ ...installOn(h, from), to, sources: SOURCES, onStep: stop })).rejects.toBeInstanceOf(Crash);
}

describeNeedingRedis("dvault engine migrate stopped midway", () => {
  let h: DownloadHarness;
  let originals: string[];

  /** What an uninterrupted move leaves on PostgreSQL now (the install is back on Redis after it). */
  async function uninterrupted(): Promise<Holding> {
    await moveEngine({ ...installOn(h, "redis"), to: "postgres", sources: SOURCES });
    const there = await holding(h, "postgres");
    await moveEngine({ ...installOn(h, "postgres"), to: "redis", sources: SOURCES });
    return there;
  }

  beforeAll(async () => {
    h = await createDownloadHarness({
      sim: { dataset: { deviations: 4, galleryFolders: 1, collectionFolders: 0, favourites: 0, trackedUsers: 0 }, downloadQuota: 20 },
      sources: [gallerySource],
      quota: 20,
      env: { DVAULT_ENGINE: "redis" },
    });
    await h.syncAll(["gallery"]);
    originals = (await h.pool.query<{ deviationid: string }>("SELECT deviationid FROM downloads WHERE kind = 'original'")).rows.map((r) => r.deviationid);
    expect(originals.length).toBeGreaterThanOrEqual(2);
    await onEngine(h, "redis", async (side) => {
      const parts = { sync: true, downloads: true, maintenance: true };
      await installWork({ services: side.services, producer: side.queues.producer, sources: SOURCES, schedules: side.services.config.schedules, parts });
      await side.pace.restore(PACE_KEY, { fields: { rate: 2.5, learned: 2.5 }, ttlMs: 3_600_000 });
    });
  }, 180_000);

  afterAll(async () => {
    await h?.close();
  });

  it("stopped after each step, the move run again ends where an uninterrupted one does", async () => {
    const pause = JSON.stringify({ reason: "disk nearly full", since: new Date().toISOString() });
    await onEngine(h, "redis", (side) => side.coord.put(downloadsPausedKey(side.prefix), pause));
    const moved = await uninterrupted();
    expect(moved).toMatchObject({ learned: 2.5, paused: { paused: true, reason: "disk nearly full" } });
    expect(moved.schedulers).toBeGreaterThan(0);
    for (const step of MOVE_STEPS) {
      await moveStoppedAfter(h, "redis", "postgres", step);
      const finished = await moveEngine({ ...installOn(h, "redis"), to: "postgres", sources: SOURCES });
      expect(finished, step).toMatchObject({ from: "redis", to: "postgres" });
      expect(await holding(h, "postgres"), step).toEqual(moved);
      expect(await holding(h, "redis"), step).toMatchObject({ jobs: 0, schedulers: 0 });
      // Back to Redis for the next step's stop.
      await moveEngine({ ...installOn(h, "postgres"), to: "redis", sources: SOURCES });
    }
    await onEngine(h, "redis", (side) => side.coord.remove(downloadsPausedKey(side.prefix)));
  }, 180_000);

  it("after its last step but before the setting is switched, a worker on the source fetches each queued original once", async () => {
    // The most that a stop can have done: the target filled, the source's queues emptied, the setting still Redis.
    await moveStoppedAfter(h, "redis", "postgres", "source-emptied");
    expect(await holding(h, "redis")).toMatchObject({ jobs: 0, schedulers: 0 });
    const seq = h.lastSeq();
    const worker = await startHarnessWorker(h, { DVAULT_ENGINE: "redis", DVAULT_WORKER_ROLES: "downloads" });
    try {
      await expect.poll(() => doneOriginals(h), POLL).toBe(originals.length);
    } finally {
      await worker.stop("test done");
    }
    for (const id of originals) expect(downloadTraffic(h, id, seq)).toEqual(["api 200", "cdn 200"]);
  }, 120_000);
});
