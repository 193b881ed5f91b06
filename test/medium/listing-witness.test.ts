// Every listing is a witness (docs/service-behaviour.md#folders-optional): what a sync concludes from a page the
// service answered oddly but within what it has been seen to do (docs/service-behaviour.md#offset-paging,
// #short-pages, #cursor-end). The simulator pages by the book; a small proxy in front of it
// (test/helpers/hostile-proxy.ts) rewrites the paging fields of real pages, so the walk, its writes and its
// verdict run as in production.
import { afterEach, describe, expect, it } from "vitest";
import type { SimulatorOptions } from "../../src/simulator/server.ts";
import type { SourceDefinition } from "../../src/sync/source.ts";
import { collectionsSource } from "../../src/sync/sources/collections.ts";
import { gallerySource } from "../../src/sync/sources/gallery.ts";
import { profilePostsSource } from "../../src/sync/sources/profile-posts.ts";
import { profileSource } from "../../src/sync/sources/profile.ts";
import { startHostileProxy, type HostileProxy } from "../helpers/hostile-proxy.ts";
import { createSyncHarness, runSourceLater, type SyncHarness } from "../helpers/sync-harness.ts";

let h: SyncHarness | undefined;
let proxy: HostileProxy | undefined;

afterEach(async () => {
  await h?.close();
  await proxy?.close();
  h = undefined;
  proxy = undefined;
});

/** A mirror synced through the proxy; the rewrites are added after. */
async function start(sim: SimulatorOptions, source: SourceDefinition): Promise<{ h: SyncHarness; proxy: HostileProxy }> {
  const p = await startHostileProxy();
  proxy = p;
  h = await createSyncHarness({
    sim,
    sources: [source],
    apiBase: (s) => {
      p.target = s.url;
      return p.url;
    },
  });
  return { h, proxy: p };
}

/** Rewrites the JSON pages whose path (with query) matches. */
function rewritePages(p: HostileProxy, match: RegExp, edit: (page: Record<string, unknown>, path: string) => void): void {
  p.rules.push({
    match,
    act: {
      kind: "rewrite",
      transform: (body, path) => {
        const page = JSON.parse(body) as Record<string, unknown>;
        edit(page, path);
        return JSON.stringify(page);
      },
    },
  });
}

/** Rows of `table` the mirror holds as current, as `key`, sorted. */
async function liveRows(harness: SyncHarness, table: "folder_members" | "profile_posts", key: string): Promise<string[]> {
  const { rows } = await harness.pool.query<{ k: string }>(`SELECT ${key} AS k FROM ${table} WHERE removed_at IS NULL ORDER BY 1`);
  return rows.map((r) => r.k);
}

describe("offset pages that say there is more", () => {
  // A next_offset that repeats the page's own offset, or goes back, while has_more is true: the service still has
  // more. Ending the walk there took every member after that page for gone from its folder, and the sweep said "ok".
  it("a next_offset that repeats or goes back is passed by the items received: no member leaves its folder", async () => {
    // Folders of more than two pages of 24, so a page in the middle of one can be made to answer oddly.
    const { h, proxy } = await start({ dataset: { deviations: 200, galleryFolders: 3 } }, gallerySource);
    expect((await runSourceLater(h, "gallery")).result.status).toBe("ok");
    const before = await liveRows(h, "folder_members", "folderid || ' ' || deviationid");
    rewritePages(proxy, /\/gallery\/(?!folders|all)[^?]*\?.*\boffset=24\b/, (page) => {
      if (page.has_more === true) page.next_offset = 24;
    });
    rewritePages(proxy, /\/gallery\/all\?.*\boffset=24\b/, (page) => {
      if (page.has_more === true) page.next_offset = "0";
    });
    const { result, routes } = await runSourceLater(h, "gallery", { full: true });
    // The rewrites were met: folders and the "all" view longer than two pages.
    expect(proxy.stats.applied[0]).toBeGreaterThan(0);
    expect(proxy.stats.applied[1]).toBe(1);
    expect(await liveRows(h, "folder_members", "folderid || ' ' || deviationid")).toEqual(before);
    expect(result.status).toBe("ok");
    // Nothing left a listing, so nothing was asked about.
    expect(routes.filter((r) => r.startsWith("/api/v1/oauth2/deviation/{deviationid}"))).toEqual([]);
  }, 60_000);
});

describe("cursor pages that say there is more", () => {
  // A page that says has_more but hands back the cursor it was asked with cannot be gone past. Stopping there as at
  // the end marked every later post removed, and the run said "ok".
  it("a next_cursor that repeats one already asked with ends the walk unread: no post is marked removed, the run is incomplete", async () => {
    // About 150 posts: three pages of 50.
    const { h, proxy } = await start({ dataset: { deviations: 1500, statuses: 8 } }, profilePostsSource);
    expect((await runSourceLater(h, "profile_posts")).result.status).toBe("ok");
    const before = await liveRows(h, "profile_posts", "item_id");
    expect(before.length).toBeGreaterThan(100);
    rewritePages(proxy, /\/user\/profile\/posts\?.*\bcursor=/, (page, path) => {
      if (page.has_more === true) page.next_cursor = new URL(path, "http://proxy").searchParams.get("cursor");
    });
    const { result } = await runSourceLater(h, "profile_posts", { full: true });
    expect(proxy.stats.applied[0]).toBe(1);
    expect(await liveRows(h, "profile_posts", "item_id")).toEqual(before);
    expect(result.status).toBe("incomplete");
    expect(result.unreadable).toBe(1);
    const { rows } = await h.pool.query<{ operation: string; detail: string }>("SELECT operation, error AS detail FROM unreadable_responses");
    expect(rows).toEqual([{ operation: "user.profile.posts", detail: expect.stringContaining("next_cursor repeats") }]);
  }, 60_000);
});

describe("an empty page in the middle of a listing", () => {
  // docs/service-behaviour.md#short-pages: works the listing leaves out (deleted ones here) leave holes, and a page
  // of nothing but holes comes back empty while has_more is true and next_offset points on. Ending the walk there
  // never read the folder's works after it, and said they were past the offset ceiling.
  it("is gone past when it says has_more and where to go on: the works after it are read, the sweep is ok", async () => {
    const { h } = await start({ dataset: { deviations: 200, galleryFolders: 3 } }, gallerySource);
    const folder = h.sim.truth.galleryFolders
      .filter((f) => f.ownerId === h.sim.truth.ownerId)
      .sort((a, b) => b.deviationIds.length - a.deviationIds.length)[0]!;
    expect(folder.deviationIds.length).toBeGreaterThan(60);
    // The folder's second page of 24, every work of it deleted before the first sync.
    for (const id of folder.deviationIds.slice(24, 48)) {
      if (!h.sim.truth.deviations.get(id)!.isDeleted) h.sim.activity({ kind: "delete_deviation", deviationid: id });
    }
    const { result, routes } = await runSourceLater(h, "gallery");
    const members = await liveRows(h, "folder_members", "folderid || ' ' || deviationid");
    const listed = folder.deviationIds.filter((id) => !h.sim.truth.deviations.get(id)!.isDeleted).map((id) => `${folder.folderid} ${id}`);
    expect(listed.filter((m) => !members.includes(m))).toEqual([]);
    expect(result.status).toBe("ok");
    // The empty page was asked for, and the page after it.
    expect(routes.filter((r) => r.startsWith("/api/v1/oauth2/gallery/{folderid}")).length).toBeGreaterThanOrEqual(3);
  }, 60_000);
});

describe("an author check answered with an error_code nobody lists", () => {
  // docs/service-behaviour.md#user-error-codes lists 0, 1 and 2. A work that left every listing is asked about, and so
  // is its author (their state may be why); an author's profile refused with another code says nothing about them.
  it("leaves that author's works as they are, asked about again at the next run: the run is incomplete, not failed", async () => {
    const { h, proxy } = await start({ dataset: { favourites: 150, collectionFolders: 5 } }, collectionsSource);
    expect((await runSourceLater(h, "collections")).result.status).toBe("ok");
    const dev = (id: string) => h.sim.truth.deviations.get(id)!;
    const faves = [...new Set(h.sim.truth.collectionFolders.filter((f) => f.ownerId === h.sim.truth.ownerId).flatMap((f) => f.deviationIds))].filter(
      (id) => !dev(id).isDeleted,
    );
    // One artist deactivated (their favourites leave the listings) and answered with a code nobody lists.
    const artist = h.sim.truth.users.get(dev(faves[0]!).authorId)!;
    const theirs = faves.filter((id) => dev(id).authorId === artist.userid);
    h.sim.activity({ kind: "deactivate_user", username: artist.username });
    proxy.rules.push({
      match: new RegExp(`/user/profile/${artist.username}\\b`),
      act: {
        kind: "answer",
        status: 400,
        body: JSON.stringify({ error: "invalid_request", error_description: "Something new.", error_code: 7, status: "error" }),
      },
    });
    const { result } = await runSourceLater(h, "collections", { full: true });
    expect(result.status).toBe("incomplete");
    expect(result.reason).toContain("could not be asked about (HTTP 400 invalid_request error_code 7 from an author's profile)");
    const { rows } = await h.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM deviations WHERE deviationid = ANY($1) AND removed_at IS NULL", [
      theirs,
    ]);
    expect(rows[0]?.n).toBe(theirs.length);
    // Asked again at the next run: once the profile answers what the service documents, the works are marked with it.
    proxy.clear();
    const again = await runSourceLater(h, "collections");
    const { rows: marked } = await h.pool.query<{ reason: string }>(
      "SELECT DISTINCT removed_reason::text AS reason FROM deviations WHERE deviationid = ANY($1)",
      [theirs],
    );
    expect(marked).toEqual([{ reason: "artist_deactivated" }]);
    expect(again.result.status).toBe("ok");
  }, 60_000);
});

describe("the daily check of unavailable artists", () => {
  // One artist's profile refused with a code nobody lists said nothing about them, and failed the profile source at
  // that artist every day: the artists after it were never asked again, so one who came back stayed marked.
  it("goes on past an artist whose profile answers a code nobody lists, and says so", async () => {
    const p = await startHostileProxy();
    proxy = p;
    h = await createSyncHarness({
      sim: { dataset: { favourites: 150, collectionFolders: 5 } },
      sources: [collectionsSource, profileSource],
      apiBase: (s) => {
        p.target = s.url;
        return p.url;
      },
    });
    const harness = h;
    expect((await runSourceLater(harness, "collections")).result.status).toBe("ok");
    const dev = (id: string) => harness.sim.truth.deviations.get(id)!;
    const faves = harness.sim.truth.collectionFolders.filter((f) => f.ownerId === harness.sim.truth.ownerId).flatMap((f) => f.deviationIds);
    const authors = [...new Set(faves.filter((id) => !dev(id).isDeleted).map((id) => dev(id).authorId))].sort();
    // The first in the order they are asked again in (same time, then userid) answers oddly; the second comes back.
    const [odd, back] = authors.map((id) => harness.sim.truth.users.get(id)!);
    for (const artist of [odd!, back!]) harness.sim.activity({ kind: "deactivate_user", username: artist.username });
    expect((await runSourceLater(harness, "collections", { full: true })).result.status).toBe("ok");
    const reasons = async () => {
      const { rows } = await harness.pool.query<{ userid: string; reason: string | null }>(
        "SELECT userid, removed_reason::text AS reason FROM users WHERE userid = ANY($1) ORDER BY userid",
        [[odd!.userid, back!.userid]],
      );
      return rows;
    };
    expect(await reasons()).toEqual([
      { userid: odd!.userid, reason: "artist_deactivated" },
      { userid: back!.userid, reason: "artist_deactivated" },
    ]);
    harness.sim.activity({ kind: "reactivate_user", username: back!.username });
    // One of the odd artist's works seen live since (a listing showed it again): an answer that settles nothing
    // leaves it live.
    const { rows: seenLive } = await harness.pool.query<{ deviationid: string }>(
      `UPDATE deviations SET removed_at = NULL, removed_reason = NULL
       WHERE deviationid = (SELECT deviationid FROM deviations WHERE author_userid = $1 ORDER BY deviationid LIMIT 1) RETURNING deviationid`,
      [odd!.userid],
    );
    expect(seenLive).toHaveLength(1);
    p.rules.push({
      match: new RegExp(`/user/profile/${odd!.username}\\b`),
      act: {
        kind: "answer",
        status: 400,
        body: JSON.stringify({ error: "invalid_request", error_description: "Something new.", error_code: 7, status: "error" }),
      },
    });
    harness.sim.clock.advance(25 * 3600_000);
    const { result } = await runSourceLater(harness, "profile");
    expect(await reasons()).toEqual([
      { userid: odd!.userid, reason: "artist_deactivated" },
      { userid: back!.userid, reason: null },
    ]);
    expect(result.status).toBe("incomplete");
    expect(result.reason).toContain("HTTP 400 invalid_request error_code 7");
    const { rows: still } = await harness.pool.query<{ removed: boolean }>("SELECT removed_at IS NOT NULL AS removed FROM deviations WHERE deviationid = $1", [
      seenLive[0]!.deviationid,
    ]);
    expect(still).toEqual([{ removed: false }]);
    expect(p.stats.applied[0]).toBe(1);
    // Asked, and left as it was: the next check of that artist is the next day's.
    harness.sim.clock.advance(3600_000);
    expect((await runSourceLater(harness, "profile")).result.status).toBe("ok");
    expect(p.stats.applied[0]).toBe(1);
  }, 60_000);
});

describe("a lookup answered with an error body on a 200", () => {
  /** Deletes the owner's first `n` works in id order (the order they are asked about in), the first `odd` of them answered with an error body on a 200. */
  async function deleteWithOddAnswers(n: number, odd: number) {
    const { h, proxy } = await start({ dataset: { deviations: 200, galleryFolders: 3 } }, gallerySource);
    expect((await runSourceLater(h, "gallery")).result.status).toBe("ok");
    const ids = [...new Set(h.sim.truth.galleryFolders.filter((f) => f.ownerId === h.sim.truth.ownerId).flatMap((f) => f.deviationIds))]
      .filter((id) => !h.sim.truth.deviations.get(id)!.isDeleted)
      .sort()
      .slice(0, n);
    for (const id of ids) h.sim.activity({ kind: "delete_deviation", deviationid: id, lookup: { kind: "refusal", errorCode: 0 } });
    for (const id of ids.slice(0, odd)) {
      proxy.rules.push({
        match: new RegExp(`/deviation/${id}\\b`),
        act: { kind: "answer", status: 200, body: JSON.stringify({ error: "invalid_request", error_description: "Deviation not found.", status: "error" }) },
      });
    }
    const { result } = await runSourceLater(h, "gallery", { full: true });
    const { rows } = await h.pool.query<{ reason: string | null }>(
      "SELECT removed_reason::text AS reason FROM deviations WHERE deviationid = ANY($1) ORDER BY deviationid",
      [ids],
    );
    return { result, reasons: rows.map((r) => r.reason) };
  }

  // A readable answer of the wrong shape, read twice and kept, is that work's own: taking it for the service failing
  // ended the asking, so the works after it (in id order, the same every run) were never settled and stayed live.
  it("settles nothing about that work and does not stop the asking about the others", async () => {
    const { result, reasons } = await deleteWithOddAnswers(2, 1);
    // The other work is marked deleted; the one whose answer could not be read is left as it is, asked again next run.
    expect(reasons).toEqual([null, "deleted"]);
    expect(result.status).toBe("incomplete");
    expect(result.reason).toMatch(/^1 work that may be gone upstream could not be asked about \(an answer that could not be read\)/);
  }, 60_000);

  it("ends the asking at a second such answer in a row: the answers may have changed shape", async () => {
    const { result, reasons } = await deleteWithOddAnswers(3, 2);
    expect(reasons).toEqual([null, null, null]);
    expect(result.reason).toMatch(/^3 works that may be gone upstream could not be asked about/);
  }, 60_000);
});

describe("one work whose lookup keeps failing", () => {
  // docs/service-behaviour.md#server-5xx: 500s have been seen on single objects (/collections/{id}, /user/profile). Works
  // that may be gone are asked about in id order, the same every run; a 5xx ended the asking, so one work whose lookup
  // always failed kept every work after it from ever being settled: deleted upstream, live in the mirror for good.
  it("does not keep the works after it from being settled", async () => {
    const { h, proxy } = await start({ dataset: { deviations: 200, galleryFolders: 3 } }, gallerySource);
    expect((await runSourceLater(h, "gallery")).result.status).toBe("ok");
    const ids = [...new Set(h.sim.truth.galleryFolders.filter((f) => f.ownerId === h.sim.truth.ownerId).flatMap((f) => f.deviationIds))]
      .filter((id) => !h.sim.truth.deviations.get(id)!.isDeleted)
      .sort()
      .slice(0, 2);
    for (const id of ids) h.sim.activity({ kind: "delete_deviation", deviationid: id, lookup: { kind: "refusal", errorCode: 0 } });
    proxy.rules.push({
      match: new RegExp(`/deviation/${ids[0]}\\b`),
      act: { kind: "answer", status: 500, body: JSON.stringify({ error: "server_error", error_description: "Internal server error", status: "error" }) },
    });
    const reasons = async () => {
      const { rows } = await h.pool.query<{ reason: string | null }>(
        "SELECT removed_reason::text AS reason FROM deviations WHERE deviationid = ANY($1) ORDER BY deviationid",
        [ids],
      );
      return rows.map((r) => r.reason);
    };
    const { result } = await runSourceLater(h, "gallery", { full: true });
    expect(await reasons()).toEqual([null, "deleted"]);
    expect(result.status).toBe("incomplete");
    expect(result.reason).toMatch(/^1 work that may be gone upstream could not be asked about \(HTTP 500 server_error\)/);
  }, 60_000);
});

describe("a folder the folder list names whose pages are refused", () => {
  // The folder list is a witness that the folder is there; a refusal of its pages with a code nobody lists (the owner's
  // profile still answering) left its contents unread while the sweep said "ok".
  it("makes the sweep incomplete, naming the folder and the answer, and ends none of its memberships", async () => {
    const { h, proxy } = await start({ dataset: { deviations: 200, galleryFolders: 3 } }, gallerySource);
    expect((await runSourceLater(h, "gallery")).result.status).toBe("ok");
    const before = await liveRows(h, "folder_members", "folderid || ' ' || deviationid");
    const folder = h.sim.truth.galleryFolders.find((f) => f.ownerId === h.sim.truth.ownerId && f.deviationIds.length > 0)!;
    proxy.rules.push({
      match: new RegExp(`/gallery/${folder.folderid}\\?`),
      act: {
        kind: "answer",
        status: 400,
        body: JSON.stringify({ error: "invalid_request", error_description: "Something new.", error_code: 7, status: "error" }),
      },
    });
    const { result } = await runSourceLater(h, "gallery", { full: true });
    expect(proxy.stats.applied[0]).toBeGreaterThan(0);
    expect(await liveRows(h, "folder_members", "folderid || ' ' || deviationid")).toEqual(before);
    expect(result.status).toBe("incomplete");
    expect(result.reason).toContain(`gallery folder "${folder.name}" could not be walked (HTTP 400 invalid_request error_code 7)`);
  }, 60_000);
});
