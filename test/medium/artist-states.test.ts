// Artists the service answers as unavailable (docs/service-behaviour.md#user-error-codes): a tracked artist
// who is suspended (error_code 0) or deactivated (1) keeps every archived work, marked with the reason and
// never "deleted"; the source degrades with the reason and fails nothing; the digest says so once per
// artist; and when the account comes back, so do the works.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { collectDigest } from "../../src/digest/collect.ts";
import { renderDigest } from "../../src/digest/render.ts";
import type { SimUser } from "../../src/simulator/dataset.ts";
import { createSyncHarness, type SyncHarness } from "../helpers/sync-harness.ts";

let h: SyncHarness;
let artist: SimUser;
const t0 = () => h.sim.clock.now();

// A fresh mirror per test: each test suspends, deactivates or brings back an artist upstream.
beforeEach(async () => {
  h = await createSyncHarness({ sim: { seed: 31, dataset: { deviations: 30, trackedUsers: 2, trackedUserDeviations: 25, favourites: 20 } } });
  const t = h.sim.truth;
  const id = t.galleryFolders.find((f) => f.ownerId !== t.ownerId)!.ownerId;
  artist = t.users.get(id) as SimUser;
  // The first sync: the owner's profile (watch lists and the digest's baseline), collections, the tracked artist.
  for (const source of ["profile", "collections"] as const) await h.runSource(source);
  expect((await h.runSource("tracked", { key: artist.username })).status).toBe("ok");
}, 60_000);
afterEach(async () => {
  await h?.close();
});

async function reasons(userid: string): Promise<Array<{ reason: string | null; n: number }>> {
  const { rows } = await h.pool.query<{ reason: string | null; n: number }>(
    "SELECT removed_reason::text AS reason, count(*)::int AS n FROM deviations WHERE author_userid = $1 GROUP BY 1 ORDER BY 1 NULLS FIRST",
    [userid],
  );
  return rows;
}

async function digestText(since: Date): Promise<string> {
  const data = await collectDigest({
    db: h.pool,
    window: { start: since, end: new Date(t0().getTime() + 1000) },
    now: new Date(t0().getTime() + 1000),
    archiveDir: "/tmp",
  });
  return renderDigest(data, { timezone: "UTC", mode: "preview" }).text;
}

describe("a tracked artist who becomes unavailable", () => {
  it("suspended: works kept and marked, the source degraded with the reason, one digest line", async () => {
    const before = await reasons(artist.userid);
    const works = before.reduce((n, r) => n + r.n, 0);
    expect(works).toBeGreaterThan(0);
    const since = t0();
    h.sim.clock.advance(60_000);
    h.sim.activity({ kind: "suspend_user", username: artist.username });
    h.sim.clock.advance(60_000);
    const result = await h.runSource("tracked", { key: artist.username });
    expect(result.status).toBe("degraded");
    expect(result.reason).toMatch(new RegExp(`${artist.username} is suspended`));
    expect(result.reason).not.toMatch(/bug in dvault/);
    // Every work kept, marked with why; none "deleted".
    expect(await reasons(artist.userid)).toEqual([{ reason: "artist_suspended", n: works }]);
    const { rows: user } = await h.pool.query("SELECT is_deactivated, removed_reason::text AS reason FROM users WHERE userid = $1", [artist.userid]);
    expect(user).toEqual([{ is_deactivated: true, reason: "artist_suspended" }]);
    const text = await digestText(since);
    expect(text).toContain(`${artist.username} is suspended.`);
    expect(text).toContain(`Your archive keeps ${works} works of theirs`);
    expect(text).not.toMatch(/deleted by its artist/);
  });

  it("back again: the works come back to life at the next run", async () => {
    // Suspended first, and mirrored so.
    h.sim.clock.advance(60_000);
    h.sim.activity({ kind: "suspend_user", username: artist.username });
    expect((await h.runSource("tracked", { key: artist.username })).status).toBe("degraded");
    expect((await reasons(artist.userid)).map((r) => r.reason)).toEqual(["artist_suspended"]);
    h.sim.clock.advance(60_000);
    h.sim.activity({ kind: "reactivate_user", username: artist.username });
    const result = await h.runSource("tracked", { key: artist.username });
    expect(result.status).toBe("ok");
    expect((await reasons(artist.userid)).map((r) => r.reason)).toEqual([null]);
    const { rows: user } = await h.pool.query("SELECT is_deactivated, removed_reason FROM users WHERE userid = $1", [artist.userid]);
    expect(user).toEqual([{ is_deactivated: false, removed_reason: null }]);
  });

  it("deactivated: marked artist_deactivated, and the digest says they deactivated their account", async () => {
    const since = t0();
    h.sim.clock.advance(60_000);
    h.sim.activity({ kind: "deactivate_user", username: artist.username });
    const result = await h.runSource("tracked", { key: artist.username });
    expect(result.status).toBe("degraded");
    expect(result.reason).toMatch(/deactivated their account/);
    expect((await reasons(artist.userid)).map((r) => r.reason)).toEqual(["artist_deactivated"]);
    expect(await digestText(since)).toContain(`${artist.username} deactivated their account.`);
  });
});

describe("a favourite's artist who becomes unavailable", () => {
  it("marks their favourites with the reason on a sweep, never as deleted", async () => {
    const t = h.sim.truth;
    const other = t.collectionFolders
      .filter((f) => f.ownerId === t.ownerId)
      .flatMap((f) => f.deviationIds)
      .map((id) => t.deviations.get(id)!)
      .find((d) => !d.isDeleted && d.authorId !== t.ownerId && d.authorId !== artist.userid && !t.users.get(d.authorId)!.isDeactivated)!;
    const author = t.users.get(other.authorId)!;
    h.sim.clock.advance(60_000);
    h.sim.activity({ kind: "suspend_user", username: author.username });
    const result = await h.runSource("collections", { full: true });
    expect(result.status).toBe("ok");
    const { rows } = await h.pool.query("SELECT removed_reason::text AS reason FROM deviations WHERE deviationid = $1", [other.deviationid]);
    expect(rows).toEqual([{ reason: "artist_suspended" }]);
  });
});

describe("artists the mirror holds as unavailable", () => {
  it("are all asked again when their day has passed, however many: 50 a read is no ceiling of the run", async () => {
    // 120 gone artists in the mirror (names the service does not know: error_code 2), last asked two days ago.
    const twoDaysAgo = new Date(t0().getTime() - 2 * 24 * 3600_000);
    await h.pool.query(
      `INSERT INTO users (userid, username, removed_reason, removed_at, unavailable_checked_at, first_seen_at, last_seen_at)
       SELECT 'gone-' || i, 'gone_artist_' || i, 'artist_not_found', $1, $1, $1, $1 FROM generate_series(1, 120) AS i`,
      [twoDaysAgo],
    );
    h.sim.clock.advance(60_000);
    expect((await h.runSource("profile")).status).toBe("ok");
    const { rows } = await h.pool.query<{ asked: number; waiting: number }>(
      `SELECT count(*) FILTER (WHERE unavailable_checked_at > $1)::int AS asked, count(*) FILTER (WHERE unavailable_checked_at <= $1)::int AS waiting
       FROM users WHERE userid LIKE 'gone-%'`,
      [twoDaysAgo],
    );
    expect(rows[0]).toEqual({ asked: 120, waiting: 0 });
  });
});
