// The seeded account at full size: 5 000 deviations across 26 gallery and collection folders,
// 300 notes in 4 folders, 1 000 messages with stacks, 200 watch-feed items. One first sync of every
// source it names, compared with the simulator's ground truth id by id, then a second sync that
// changes nothing upstream and must cost at most 2 API calls per source kind.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunSourceResult } from "../../src/sync/run-source.ts";
import { SOURCES } from "../../src/sync/sources/index.ts";
import type { SourceName } from "../../src/sync/source.ts";
import { checkSyncedMirror } from "../faults/check.ts";
import { createSyncHarness, type SyncHarness } from "../helpers/sync-harness.ts";

const NAMED: SourceName[] = ["profile", "gallery", "collections", "messages", "notes", "watch_feed"];

let h: SyncHarness;
/** The first sync of each source, made once here so either test can run first (the second test's re-run changes nothing). */
const firstSync = new Map<SourceName, RunSourceResult>();
beforeAll(async () => {
  h = await createSyncHarness({
    sources: SOURCES.filter((s) => NAMED.includes(s.name)),
    sim: {
      seed: 5000,
      dataset: { deviations: 5000, galleryFolders: 20, collectionFolders: 6, notes: 300, noteFolders: 4, messages: 1000, feedItems: 200 },
    },
  });
  for (const source of NAMED) firstSync.set(source, await h.runSource(source));
});
afterAll(async () => {
  await h?.close();
});

describe("a first sync of a 5 000-deviation account", () => {
  it("mirrors every deviation, folder placement, note and message exactly, with no duplicated rows", async () => {
    const truth = h.sim.truth;
    expect(truth.deviations.size).toBeGreaterThanOrEqual(5000);
    expect(truth.galleryFolders.filter((f) => f.ownerId === truth.ownerId).length + truth.collectionFolders.length).toBeGreaterThanOrEqual(25);
    for (const source of NAMED) {
      const result = firstSync.get(source);
      expect(result?.status, `${source}: ${result?.reason ?? ""}`).toBe("ok");
    }
    const { deviations } = await checkSyncedMirror(h);
    expect(deviations).toBeGreaterThan(3000);
    const { rows } = await h.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM feed_items");
    expect(rows[0]!.n).toBe(truth.feed.length);
  });

  it("costs at most 2 API calls per source kind when nothing changed upstream", async () => {
    h.sim.clock.advance(60 * 60_000);
    for (const source of NAMED) {
      const result = await h.runSource(source, { full: false });
      expect(result.apiCalls, source).toBeLessThanOrEqual(2);
      expect(result.counters, source).toEqual({ new: 0, changed: 0, removed: 0 });
    }
  });
});
