// The gallery source on a service whose offset ceiling is small (the simulator's offsetCeiling stands in
// for the real ~10 000, docs/service-behaviour.md#offset-ceiling): dvault does not know the value, and
// learns it from the listing that stops. Everything reachable is mirrored, the folders carry on past the
// "all" view's ceiling, and what no listing can reach is named with counts: the source is incomplete.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { galleryAllIds } from "../../src/simulator/dataset.ts";
import { gallerySource } from "../../src/sync/sources/gallery.ts";
import { createSyncHarness, type SyncHarness } from "../helpers/sync-harness.ts";

/** Offsets above this return an empty last page. */
const CEILING = 120;

let h: SyncHarness;

beforeAll(async () => {
  // Two folders: "Featured" (about a tenth) and one holding every deviation, past the ceiling.
  h = await createSyncHarness({ sim: { offsetCeiling: CEILING, dataset: { deviations: 300, galleryFolders: 2 } }, sources: [gallerySource] });
}, 60_000);
afterAll(async () => {
  await h?.close();
});

describe(`${gallerySource.name} past the offset ceiling`, () => {
  it("mirrors everything reachable, and names what no listing can reach with counts", async () => {
    const truth = h.sim.truth;
    const folders = truth.galleryFolders.filter((f) => f.ownerId === truth.ownerId);
    const [featured, big] = folders;
    if (!featured || !big) throw new Error("the dataset should have two folders");
    const live = (ids: readonly string[]) => ids.filter((id) => truth.deviations.get(id)?.isDeleted === false);
    // The simulator serves offsets up to the ceiling: pages of 24 from 0 to the last one at or below it.
    const reachableSlots = (Math.floor(CEILING / 24) + 1) * 24;
    const bigLive = live(big.deviationIds);
    const reachableInBig = live(big.deviationIds.slice(0, reachableSlots));
    const reachableInAll = live(galleryAllIds(truth, truth.ownerId).slice(0, reachableSlots));
    const featuredLive = live(featured.deviationIds);
    expect(bigLive.length).toBeGreaterThan(reachableSlots);

    const result = await h.runSource("gallery");
    expect(result.status).toBe("incomplete");

    const { rows } = await h.pool.query<{ folderid: string; deviationid: string; position: number }>(
      "SELECT folderid, deviationid, position FROM folder_members WHERE kind = 'gallery' AND removed_at IS NULL",
    );
    const byFolder = (folderid: string) =>
      rows
        .filter((r) => r.folderid === folderid)
        .sort((a, b) => a.position - b.position)
        .map((r) => ({ deviationid: r.deviationid, position: r.position }));
    expect(byFolder(featured.folderid)).toEqual(featuredLive.map((deviationid, i) => ({ deviationid, position: i - featuredLive.length })));
    expect(byFolder(big.folderid)).toEqual(reachableInBig.map((deviationid, i) => ({ deviationid, position: i - bigLive.length })));

    // The union of the witnesses: each folder and the "all" view as far as each goes.
    const union = new Set([...reachableInBig, ...featuredLive, ...reachableInAll]);
    const { rows: devs } = await h.pool.query<{ deviationid: string }>("SELECT deviationid FROM deviations WHERE removed_at IS NULL ORDER BY 1");
    expect(devs.map((d) => d.deviationid)).toEqual([...union].sort());

    const total = live(galleryAllIds(truth, truth.ownerId)).length;
    const { rows: state } = await h.pool.query<{ gaps: Record<string, { expected: number; mirrored: number; reason: string }> }>(
      "SELECT gaps FROM sync_sources WHERE source = 'gallery'",
    );
    expect(state[0]?.gaps).toEqual({
      [big.folderid]: {
        expected: bigLive.length,
        mirrored: reachableInBig.length,
        reason: expect.stringMatching(
          new RegExp(`offset ceiling: the service stops paging at offset ${reachableSlots}; ${bigLive.length - reachableInBig.length} of`),
        ),
        recordedAt: expect.any(String),
      },
      // The profile's count is the only total past the "all" view's ceiling.
      witnesses: {
        expected: total,
        mirrored: union.size,
        reason: expect.stringMatching(new RegExp(`${total - union.size} unreachable`)),
        recordedAt: expect.any(String),
      },
    });
    expect(result.reason).toMatch(new RegExp(`${total - union.size} unreachable`));
  }, 60_000);
});
