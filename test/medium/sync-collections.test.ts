// The collections source through the real runner against the simulator: every favourites folder and
// member (deleted favourites as removed stubs), metadata and wanted downloads below the own gallery's
// priority; a quiet re-run costs at most two calls; a deactivated artist is resolved on a sweep.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { SimDeviation } from "../../src/simulator/dataset.ts";
import { collectionsSource } from "../../src/sync/sources/collections.ts";
import { createSyncHarness, type SyncHarness, runSourceLater } from "../helpers/sync-harness.ts";

let h: SyncHarness;

// A fresh mirror and simulator per test: tests change the data upstream and count what a run finds.
beforeEach(async () => {
  h = await createSyncHarness({ sim: { dataset: { favourites: 150, collectionFolders: 5 } }, sources: [collectionsSource] });
});
afterEach(async () => {
  await h?.close();
});

function runLater(opts: { full?: boolean } = {}) {
  return runSourceLater(h, "collections", opts);
}

function ownFolders() {
  return h.sim.truth.collectionFolders.filter((f) => f.ownerId === h.sim.truth.ownerId);
}

function dev(id: string): SimDeviation {
  return h.sim.truth.deviations.get(id) as SimDeviation;
}

/** Listed favourites: deleted ones as stubs, those of deactivated artists hidden. */
function listed(ids: readonly string[]): string[] {
  return ids.filter((id) => !h.sim.truth.users.get(dev(id).authorId)?.isDeactivated);
}

type MemberRow = { folderid: string; deviationid: string; position: number };

async function liveMembers(): Promise<MemberRow[]> {
  const { rows } = await h.pool.query<MemberRow>(
    "SELECT folderid, deviationid, position FROM folder_members WHERE kind = 'collection' AND removed_at IS NULL ORDER BY folderid, position",
  );
  return rows;
}

function expectedMembers(): MemberRow[] {
  return ownFolders()
    .flatMap((f) => {
      const ids = listed(f.deviationIds);
      // The folder's size counts every favourite; positions count from the end (-size for the first).
      return ids.map((deviationid, i) => ({ folderid: f.folderid, deviationid, position: i - f.deviationIds.length }));
    })
    .sort((a, b) => a.folderid.localeCompare(b.folderid) || a.position - b.position);
}

describe(collectionsSource.name, () => {
  it("mirrors every favourites folder on the first run, field by field", async () => {
    const { result } = await runLater();
    expect(result.status).toBe("ok");

    const { rows: folders } = await h.pool.query("SELECT folderid, name, description, position, size FROM collection_folders ORDER BY position");
    expect(folders).toEqual(
      ownFolders().map((f, i) => ({ folderid: f.folderid, name: f.name, description: f.description || null, position: i, size: f.deviationIds.length })),
    );
    expect(await liveMembers()).toEqual(expectedMembers());

    const all = [...new Set(ownFolders().flatMap((f) => f.deviationIds))].map(dev);
    const { rows: devs } = await h.pool.query(
      "SELECT deviationid, title, author_userid, published_at, removed_reason::text AS removed_reason FROM deviations ORDER BY deviationid",
    );
    expect(devs).toEqual(
      all
        .map((d) =>
          d.isDeleted
            ? { deviationid: d.deviationid, title: null, author_userid: null, published_at: null, removed_reason: "deleted" }
            : { deviationid: d.deviationid, title: d.title, author_userid: d.authorId, published_at: new Date(d.publishedTime * 1000), removed_reason: null },
        )
        .sort((a, b) => a.deviationid.localeCompare(b.deviationid)),
    );
    expect(all.some((d) => d.isDeleted)).toBe(true);

    const { rows: meta } = await h.pool.query("SELECT deviationid, description, tags FROM deviation_metadata ORDER BY deviationid");
    expect(meta).toEqual(
      all
        .filter((d) => !d.isDeleted)
        .map((d) => ({ deviationid: d.deviationid, description: d.description, tags: [...new Set(d.tags)].sort() }))
        .sort((a, b) => a.deviationid.localeCompare(b.deviationid)),
    );

    const { rows: downloads } = await h.pool.query<{ priority: number; reason: string; n: number }>(
      "SELECT priority, reason, count(*)::int AS n FROM downloads GROUP BY priority, reason",
    );
    expect(downloads).toEqual([{ priority: 50, reason: "favourite", n: expect.any(Number) }]);
  });

  it("costs at most two API calls when nothing changed upstream", async () => {
    // Up to date with upstream first, whatever ran before (or nothing did): then measure a run with no news.
    await runLater();
    const { result, calls, routes } = await runLater();
    expect(result.full).toBe(false);
    expect(calls, routes.join("\n")).toBeLessThanOrEqual(2);
    expect(result.counters).toEqual({ new: 0, changed: 0, removed: 0 });
  });

  it("records a title edit at the top of the favourites without opening a folder", async () => {
    await runLater(); // mirrored before the changes
    const top = listed(ownFolders()[0]?.deviationIds ?? []).find((id) => !dev(id).isDeleted) as string;
    const old = dev(top).title;
    h.sim.activity({ kind: "edit_title", deviationid: top, title: "Renamed Favourite" });
    const { result, calls, routes } = await runLater();
    expect(result.counters).toMatchObject({ new: 0, removed: 0 });
    // Folder list, newest page, the metadata of the changed page.
    expect(calls, routes.join("\n")).toBeLessThanOrEqual(3);
    const { rows } = await h.pool.query("SELECT deviationid, field::text AS field, old_value, new_value FROM deviation_history");
    expect(rows).toEqual([{ deviationid: top, field: "title", old_value: old, new_value: "Renamed Favourite" }]);
  });

  it("resolves a deactivated artist's favourites and a deleted favourite on a full sweep", async () => {
    await runLater(); // mirrored before the changes
    const folder = ownFolders()[1];
    const faves = (folder?.deviationIds ?? []).filter((id) => !dev(id).isDeleted);
    const artistId = dev(faves[faves.length - 1] as string).authorId;
    const artist = h.sim.truth.users.get(artistId);
    if (!artist) throw new Error("no artist");
    const deleted = faves.find((id) => dev(id).authorId !== artistId) as string;
    h.sim.activity({ kind: "deactivate_user", username: artist.username });
    h.sim.activity({ kind: "delete_deviation", deviationid: deleted });

    const { result } = await runLater({ full: true });
    expect(result.status).toBe("ok");
    expect(await liveMembers()).toEqual(expectedMembers());

    const { rows: user } = await h.pool.query("SELECT is_deactivated, removed_reason::text AS reason FROM users WHERE userid = $1", [artistId]);
    expect(user).toEqual([{ is_deactivated: true, reason: "artist_deactivated" }]);
    const theirs = [...new Set(ownFolders().flatMap((f) => f.deviationIds))].filter((id) => dev(id).authorId === artistId && !dev(id).isDeleted);
    expect(theirs.length).toBeGreaterThan(0);
    const { rows: marked } = await h.pool.query<{ deviationid: string; reason: string }>(
      "SELECT deviationid, removed_reason::text AS reason FROM deviations WHERE deviationid = ANY($1) ORDER BY deviationid",
      [theirs],
    );
    // Kept and marked with why: never "deleted" (the artist may come back).
    expect(marked).toEqual(theirs.sort().map((deviationid) => ({ deviationid, reason: "artist_deactivated" })));
    const { rows: gone } = await h.pool.query("SELECT removed_reason::text AS reason, title FROM deviations WHERE deviationid = $1", [deleted]);
    expect(gone).toEqual([{ reason: "deleted", title: dev(deleted).title }]);
    // The deleted favourite is still listed (as a stub), so its membership stays.
    const { rows: member } = await h.pool.query("SELECT removed_at FROM folder_members WHERE deviationid = $1 AND folderid = $2", [deleted, folder?.folderid]);
    expect(member).toEqual([{ removed_at: null }]);
    // Deactivation and deletion are not edits: the sweep records no history row.
    const { rows: history } = await h.pool.query("SELECT count(*)::int AS n FROM deviation_history");
    expect(history[0]?.n).toBe(0);
  });
});

describe(`${collectionsSource.name} where /collections/all does not answer`, () => {
  it('walks the folders alone and stays ok: the "all" view is only a second witness', async () => {
    const r = await createSyncHarness({ sim: { seed: 4, dataset: { favourites: 30, collectionFolders: 3 } }, sources: [collectionsSource] });
    try {
      r.sim.faults.add({ route: "/collections/all", kind: "gone", probability: 1 });
      const first = await r.runSource("collections");
      expect(first.status).toBe("ok");
      expect(first.reason).toMatch(/collections\.all is not answered: the folders alone were walked/);
      const own = r.sim.truth.collectionFolders.filter((f) => f.ownerId === r.sim.truth.ownerId);
      const { rows } = await r.pool.query<{ n: number }>(
        "SELECT count(DISTINCT deviationid)::int AS n FROM folder_members WHERE kind = 'collection' AND removed_at IS NULL",
      );
      expect(rows[0]?.n).toBe(
        new Set(own.flatMap((f) => f.deviationIds.filter((id) => !r.sim.truth.users.get(r.sim.truth.deviations.get(id)!.authorId)?.isDeactivated))).size,
      );
      r.sim.clock.advance(60_000);
      expect((await r.runSource("collections")).status).toBe("ok");
    } finally {
      await r.close();
    }
  });
});
