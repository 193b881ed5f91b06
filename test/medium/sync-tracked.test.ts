// The tracked-user source through the real runner against the simulator: another user's gallery
// folders, collections and journals mirrored field by field; a quiet re-run costs at most two calls; a
// new deviation is picked up; a deactivated tracked user degrades the source with the reason and marks
// their archived works, without failing the run; one renamed, tracked again under the new name, is not marked by the old.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { galleryAllIds, isGone, type SimDeviation, type SimUser } from "../../src/simulator/dataset.ts";
import { trackedSource } from "../../src/sync/sources/tracked.ts";
import { createSyncHarness, type SyncHarness, runSourceLater } from "../helpers/sync-harness.ts";

let h: SyncHarness;
let tracked: SimUser;

// A fresh mirror and simulator per test: tests change the data upstream and count what a run finds.
beforeEach(async () => {
  h = await createSyncHarness({ sim: { dataset: { trackedUsers: 2, trackedUserDeviations: 80 } }, sources: [trackedSource] });
  const t = h.sim.truth;
  const ownerOfFolders = t.galleryFolders.find((f) => f.ownerId !== t.ownerId)?.ownerId as string;
  tracked = t.users.get(ownerOfFolders) as SimUser;
});
afterEach(async () => {
  await h?.close();
});

function runLater(opts: { full?: boolean } = {}) {
  return runSourceLater(h, "tracked", { key: tracked.username, ...opts });
}

function dev(id: string): SimDeviation {
  return h.sim.truth.deviations.get(id) as SimDeviation;
}

function expectedMembers(kind: "gallery" | "collection") {
  const t = h.sim.truth;
  const folders = kind === "gallery" ? t.galleryFolders : t.collectionFolders;
  return folders
    .filter((f) => f.ownerId === tracked.userid)
    .flatMap((f) => {
      const size = kind === "gallery" ? f.deviationIds.filter((id) => !dev(id).isDeleted).length : f.deviationIds.length;
      const listed = f.deviationIds.filter((id) => (kind === "gallery" ? !dev(id).isDeleted : true));
      return listed.map((deviationid, i) => ({ folderid: f.folderid, deviationid, position: i - size }));
    })
    .sort((a, b) => a.folderid.localeCompare(b.folderid) || a.position - b.position);
}

async function members(kind: "gallery" | "collection") {
  const { rows } = await h.pool.query(
    "SELECT folderid, deviationid, position FROM folder_members WHERE kind = $1 AND removed_at IS NULL ORDER BY folderid, position",
    [kind],
  );
  return rows;
}

describe(trackedSource.name, () => {
  it("mirrors the tracked user's gallery, collections and journals on the first run", async () => {
    const { result } = await runLater();
    expect(result.status).toBe("ok");
    expect(await members("gallery")).toEqual(expectedMembers("gallery"));
    expect(await members("collection")).toEqual(expectedMembers("collection"));

    const theirs = expectedMembers("gallery").map((m) => dev(m.deviationid));
    const { rows: devs } = await h.pool.query(
      "SELECT deviationid, title, author_userid, published_at FROM deviations WHERE author_userid = $1 ORDER BY deviationid",
      [tracked.userid],
    );
    expect(devs).toEqual(
      [...new Map(theirs.map((d) => [d.deviationid, d])).values()]
        .map((d) => ({ deviationid: d.deviationid, title: d.title, author_userid: d.authorId, published_at: new Date(d.publishedTime * 1000) }))
        .sort((a, b) => a.deviationid.localeCompare(b.deviationid)),
    );
    const journals = theirs.filter((d) => d.kind === "journal");
    const { rows: posts } = await h.pool.query("SELECT item_id FROM profile_posts WHERE owner_userid = $1 AND kind = 'journal' ORDER BY item_id", [
      tracked.userid,
    ]);
    expect(posts).toEqual([...new Set(journals.map((d) => d.deviationid))].sort().map((item_id) => ({ item_id })));

    const { rows: profile } = await h.pool.query("SELECT username, tagline, bio FROM users WHERE userid = $1", [tracked.userid]);
    expect(profile).toEqual([{ username: tracked.username, tagline: tracked.tagline, bio: tracked.bio }]);
    const { rows: downloads } = await h.pool.query("SELECT DISTINCT priority FROM downloads");
    expect(downloads).toEqual([{ priority: 10 }]);
  });

  it("asks for the metadata of the gallery's and the favourites' last few works in one batch", async () => {
    // 80 works in the gallery (a batch of 50 and 30 left) and 12 favourites: the two tails fit one batch.
    const t = h.sim.truth;
    const live = (id: string) => !dev(id).isDeleted && !isGone(t.users.get(dev(id).authorId));
    const favourites = t.collectionFolders.filter((f) => f.ownerId === tracked.userid).flatMap((f) => f.deviationIds);
    const ids = new Set([...galleryAllIds(t, tracked.userid), ...favourites].filter(live));
    const seq = h.lastSeq();
    const { result } = await runLater();
    expect(result.status).toBe("ok");
    const batches = h.sim
      .log()
      .filter((e) => e.seq > seq && e.route.endsWith("/deviation/metadata"))
      .map((e) => [e.query["deviationids[]"] ?? []].flat());
    // The journals' own walk (profile posts) asks about its journals again in a batch of its own.
    const walks = batches.filter((b) => !b.every((id) => dev(id).kind === "journal"));
    expect(walks.map((b) => b.length)).toEqual([50, ids.size - 50]);
    expect(new Set(walks.flat())).toEqual(ids);
    const { rows } = await h.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM deviation_metadata WHERE deviationid = ANY($1)", [[...ids]]);
    expect(rows[0]?.n).toBe(ids.size);
  });

  it("costs at most two API calls when nothing changed upstream", async () => {
    // Up to date with upstream first, whatever ran before (or nothing did): then measure a run with no news.
    await runLater();
    const { result, calls, routes } = await runLater();
    expect(result.status).toBe("ok");
    expect(calls, routes.join("\n")).toBeLessThanOrEqual(2);
    expect(result.counters).toEqual({ new: 0, changed: 0, removed: 0 });
  });

  it("picks up the tracked user's new deviation", async () => {
    await runLater(); // mirrored before the changes
    const added = h.sim.activity({ kind: "add_deviation", username: tracked.username, title: "Their New Work" }) as { deviationid: string };
    const { result } = await runLater();
    expect(result.counters).toMatchObject({ new: 1, removed: 0 });
    expect(await members("gallery")).toEqual(expectedMembers("gallery"));
    const { rows } = await h.pool.query("SELECT title FROM deviations WHERE deviationid = $1", [added.deviationid]);
    expect(rows).toEqual([{ title: "Their New Work" }]);
  });

  it("degrades with the reason when the tracked user is deactivated, keeping their works marked", async () => {
    await runLater(); // mirrored before the changes
    h.sim.activity({ kind: "deactivate_user", username: tracked.username });
    const { result } = await runLater();
    expect(result.status).toBe("degraded");
    expect(result.reason).toMatch(/deactivated their account/);
    expect(result.reason).not.toMatch(/bug in dvault/);
    const { rows } = await h.pool.query("SELECT is_deactivated FROM users WHERE userid = $1", [tracked.userid]);
    expect(rows).toEqual([{ is_deactivated: true }]);
    const { rows: devs } = await h.pool.query<{ reason: string | null; n: number }>(
      "SELECT removed_reason::text AS reason, count(*)::int AS n FROM deviations WHERE author_userid = $1 GROUP BY 1",
      [tracked.userid],
    );
    // Kept and marked with why, never as deleted.
    expect(devs).toEqual([{ reason: "artist_deactivated", n: expect.any(Number) }]);
  });

  it("a tracked user renamed, and tracked again under the new name: the old name's 'not found' marks nothing, and says the new name", async () => {
    await runLater(); // mirrored before the changes
    const [oldName, newName] = [tracked.username, `${tracked.username}Renamed`];
    h.sim.activity({ kind: "rename_user", username: oldName, to: newName });
    // Tracked under the new name: the mirror now knows the user as it.
    expect((await runSourceLater(h, "tracked", { key: newName })).result.status).not.toBe("degraded");
    const { result } = await runSourceLater(h, "tracked", { key: oldName });
    const { rows } = await h.pool.query("SELECT username, removed_reason FROM users WHERE userid = $1", [tracked.userid]);
    expect(rows).toEqual([{ username: newName, removed_reason: null }]);
    const { rows: marked } = await h.pool.query("SELECT count(*)::int AS n FROM deviations WHERE author_userid = $1 AND removed_at IS NOT NULL", [
      tracked.userid,
    ]);
    expect(marked).toEqual([{ n: 0 }]);
    expect(result.status).toBe("degraded");
    expect(result.reason).toContain(`now ${newName}`);
  });
});
