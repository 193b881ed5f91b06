// The gallery source on a dataset with one folder past the service's ~10 000 offset ceiling: everything
// reachable is mirrored (the other folder in full), and the unreachable rest is recorded as a gap with
// the expected count.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_OFFSET_CEILING } from "../../src/api/paginate.ts";
import { gallerySource } from "../../src/sync/sources/gallery.ts";
import { createSyncHarness, type SyncHarness } from "../helpers/sync-harness.ts";

let h: SyncHarness;

beforeAll(async () => {
  // Two folders: "Featured" (about a tenth) and one holding every deviation, past the ceiling.
  h = await createSyncHarness({ sim: { dataset: { deviations: 10_400, galleryFolders: 2 } }, sources: [gallerySource] });
}, 60_000);
afterAll(async () => {
  await h?.close();
});

describe(`${gallerySource.name} past the offset ceiling`, () => {
  it("mirrors everything reachable and records the gap with the expected count", async () => {
    const truth = h.sim.truth;
    const folders = truth.galleryFolders.filter((f) => f.ownerId === truth.ownerId);
    const [featured, big] = folders;
    if (!featured || !big) throw new Error("the dataset should have two folders");
    const live = (ids: readonly string[]) => ids.filter((id) => truth.deviations.get(id)?.isDeleted === false);
    const bigLive = live(big.deviationIds);
    // Pages of 24 until the next offset reaches the ceiling: these slots are reachable.
    const reachableSlots = Math.ceil(DEFAULT_OFFSET_CEILING / 24) * 24;
    const reachable = live(big.deviationIds.slice(0, reachableSlots));
    expect(bigLive.length).toBeGreaterThan(DEFAULT_OFFSET_CEILING);

    const result = await h.runSource("gallery");
    expect(result.status).toBe("ok");

    const { rows } = await h.pool.query<{ folderid: string; deviationid: string; position: number }>(
      "SELECT folderid, deviationid, position FROM folder_members WHERE kind = 'gallery' AND removed_at IS NULL",
    );
    const byFolder = (folderid: string) =>
      rows
        .filter((r) => r.folderid === folderid)
        .sort((a, b) => b.position - a.position)
        .map((r) => ({ deviationid: r.deviationid, position: r.position }));
    const featuredLive = live(featured.deviationIds);
    expect(byFolder(featured.folderid)).toEqual(featuredLive.map((deviationid, i) => ({ deviationid, position: featuredLive.length - 1 - i })));
    expect(byFolder(big.folderid)).toEqual(reachable.map((deviationid, i) => ({ deviationid, position: bigLive.length - 1 - i })));

    const { rows: devs } = await h.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM deviations WHERE removed_at IS NULL");
    expect(devs[0]?.n).toBe(new Set([...reachable, ...featuredLive]).size);

    const { rows: state } = await h.pool.query<{ gaps: Record<string, { expected: number; mirrored: number; reason: string }> }>(
      "SELECT gaps FROM sync_sources WHERE source = 'gallery'",
    );
    expect(state[0]?.gaps).toEqual({
      [big.folderid]: { expected: bigLive.length, mirrored: reachable.length, reason: expect.stringMatching(/offset ceiling/), recordedAt: expect.any(String) },
    });
  }, 120_000);
});
