import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DeviationRepository } from "../../src/db/deviation.repository.ts";
import { UserRepository } from "../../src/db/user.repository.ts";
import { WatchRepository } from "../../src/db/watch.repository.ts";
import { at, createMirrorDb, insertAccount, makeDeviation, makeProfile, makeUser, makeWatchEntry, uuid, type MirrorDb } from "../helpers/mirror-fixtures.ts";

let m: MirrorDb;
let users: UserRepository;
let watch: WatchRepository;
let deviations: DeviationRepository;
let accountId: number;

beforeAll(async () => {
  m = await createMirrorDb();
  users = new UserRepository(m.pool);
  watch = new WatchRepository(m.pool);
  deviations = new DeviationRepository(m.pool);
  accountId = await insertAccount(m.pool, "me", uuid(9, "u"));
});
afterAll(async () => {
  await m?.drop();
});

async function userHistory(userid: string) {
  const { rows } = await m.pool.query<{ field: string; old_value: unknown; new_value: unknown }>(
    "SELECT field, old_value, new_value FROM user_history WHERE userid = $1 ORDER BY field",
    [userid],
  );
  return rows;
}

describe(UserRepository.name, () => {
  it("upserts users idempotently", async () => {
    const page = [1, 2, 3].map((n) => makeUser(n));
    expect(await users.upsertUsers(page, at("2025-01-01T00:00:00Z"))).toEqual({ inserted: 3, changed: 0, unchanged: 0 });
    expect(await users.upsertUsers(page, at("2025-01-01T01:00:00Z"))).toEqual({ inserted: 0, changed: 0, unchanged: 3 });
    const { rows } = await m.pool.query("SELECT count(*)::int AS n FROM users WHERE userid = ANY($1)", [page.map((u) => u.userid)]);
    expect(rows[0].n).toBe(3);
  });

  it("a minimal user object never blanks out profile fields, and first sightings are not edits", async () => {
    const id = uuid(10, "u");
    await users.upsertUsers([makeUser(10)], at("2025-01-01T00:00:00Z"));
    expect(await users.upsertProfiles([makeProfile(10)], at("2025-01-02T00:00:00Z"))).toEqual({ inserted: 0, changed: 0, unchanged: 1, revived: 0 });
    expect(await users.upsertUsers([makeUser(10, { usericon: "https://a.deviantart.net/avatars/new.png?99" })], at("2025-01-03T00:00:00Z"))).toEqual({
      inserted: 0,
      changed: 0,
      unchanged: 1,
    });
    const { rows } = await m.pool.query(
      "SELECT real_name, tagline, bio, country, usericon, pageviews, profile_fetched_at, raw->>'username' AS raw_username, profile_raw->>'bio' AS raw_bio FROM users WHERE userid = $1",
      [id],
    );
    expect(rows[0]).toEqual({
      real_name: "Artist Number 10",
      tagline: "drawing things",
      bio: "<p>hello</p>",
      country: "Atlantis",
      usericon: "https://a.deviantart.net/avatars/new.png?99",
      pageviews: 100,
      profile_fetched_at: at("2025-01-02T00:00:00Z"),
      raw_username: "artist10",
      raw_bio: "<p>hello</p>",
    });
    expect(await userHistory(id)).toEqual([]);
  });

  it("keeps the previous values of edited profile fields, one row per field; an emptied field is an edit", async () => {
    const id = uuid(20, "u");
    await users.upsertProfiles([makeProfile(20)], at("2025-02-01T00:00:00Z"));
    const edited = makeProfile(20, { tagline: "painting now", bio: "<p>new bio</p>", website: null, stats: { profile_pageviews: 5000 } });
    expect(await users.upsertProfiles([edited], at("2025-02-05T00:00:00Z"))).toEqual({ inserted: 0, changed: 1, unchanged: 0, revived: 0 });
    // Ordered by the profile_field enum: username, real_name, tagline, website, country, bio, ...
    expect(await userHistory(id)).toEqual([
      { field: "tagline", old_value: "drawing things", new_value: "painting now" },
      { field: "website", old_value: "https://artist20.example", new_value: null },
      { field: "bio", old_value: "<p>hello</p>", new_value: "<p>new bio</p>" },
    ]);
    // Same profile again: nothing more.
    expect(await users.upsertProfiles([edited], at("2025-02-06T00:00:00Z"))).toEqual({ inserted: 0, changed: 0, unchanged: 1, revived: 0 });
    expect(await userHistory(id)).toHaveLength(3);
  });

  it("a rename is kept in the history", async () => {
    const id = uuid(30, "u");
    await users.upsertUsers([makeUser(30)], at("2025-03-01T00:00:00Z"));
    expect(await users.upsertUsers([makeUser(30, { username: "renamed30" })], at("2025-03-02T00:00:00Z"))).toMatchObject({ changed: 1 });
    expect(await userHistory(id)).toEqual([{ field: "username", old_value: "artist30", new_value: "renamed30" }]);
  });

  it("markUserUnavailable marks the user and their works with the reason; a profile answer revives both", async () => {
    const id = uuid(40, "u");
    await users.upsertUsers([makeUser(40)], at("2025-04-01T00:00:00Z"));
    await deviations.upsertDeviations([makeDeviation({ n: 4000, author: 40 }), makeDeviation({ n: 4001, author: 40 })], at("2025-04-01T00:00:00Z"));
    await deviations.markDeviationsGone(
      [{ deviationid: uuid(4001), reason: "deleted", answer: { status: 200, is_deleted: true } }],
      at("2025-04-02T00:00:00Z"),
    );

    expect(await users.markUserUnavailable(id, "artist_suspended", at("2025-04-03T00:00:00Z"))).toEqual({ users: 1, deviations: 1 });
    // Asked again in the same state: nothing newly marked.
    expect(await users.markUserUnavailable(id, "artist_suspended", at("2025-04-04T00:00:00Z"))).toEqual({ users: 0, deviations: 0 });
    // Suspended, then deactivated: the reason follows, the first removal time stays.
    expect(await users.markUserUnavailable(id, "artist_deactivated", at("2025-04-04T12:00:00Z"))).toEqual({ users: 1, deviations: 1 });
    const { rows } = await m.pool.query("SELECT deviationid, title, removed_reason, removed_at FROM deviations WHERE author_userid = $1 ORDER BY deviationid", [
      id,
    ]);
    expect(rows).toEqual([
      // Never "deleted": the work is kept, marked with why it is unavailable.
      { deviationid: uuid(4000), title: "Work 4000", removed_reason: "artist_deactivated", removed_at: at("2025-04-03T00:00:00Z") },
      { deviationid: uuid(4001), title: "Work 4001", removed_reason: "deleted", removed_at: at("2025-04-02T00:00:00Z") },
    ]);
    const user = await m.pool.query("SELECT is_deactivated, removed_at, removed_reason FROM users WHERE userid = $1", [id]);
    expect(user.rows[0]).toEqual({ is_deactivated: true, removed_at: at("2025-04-03T00:00:00Z"), removed_reason: "artist_deactivated" });
    expect(await users.listUnavailableUsers(at("2025-04-05T00:00:00Z"), 10)).toEqual([{ userid: id, username: "artist40", reason: "artist_deactivated" }]);

    // A minimal object (e.g. inside an old message) says nothing about the account's state...
    await users.upsertUsers([makeUser(40)], at("2025-04-05T00:00:00Z"));
    expect((await m.pool.query("SELECT is_deactivated FROM users WHERE userid = $1", [id])).rows[0].is_deactivated).toBe(true);
    // ...a profile answer does: the account is back, and so are its works (a deleted one stays deleted).
    expect(await users.upsertProfiles([makeProfile(40)], at("2025-04-06T00:00:00Z"))).toMatchObject({ revived: 1 });
    expect((await m.pool.query("SELECT is_deactivated, removed_reason FROM users WHERE userid = $1", [id])).rows[0]).toEqual({
      is_deactivated: false,
      removed_reason: null,
    });
    const { rows: after } = await m.pool.query("SELECT deviationid, removed_reason FROM deviations WHERE author_userid = $1 ORDER BY deviationid", [id]);
    expect(after).toEqual([
      { deviationid: uuid(4000), removed_reason: null },
      { deviationid: uuid(4001), removed_reason: "deleted" },
    ]);
    expect(await users.listUnavailableUsers(at("2025-04-07T00:00:00Z"), 10)).toEqual([]);
  });
});

describe(WatchRepository.name, () => {
  it("records watchers idempotently and removes those gone after a full sweep", async () => {
    const entries = [50, 51, 52].map((n) => makeWatchEntry(n));
    await users.upsertUsers(
      entries.map((e) => e.user),
      at("2025-05-01T00:00:00Z"),
    );
    expect(await watch.upsertWatchRelations(accountId, "watcher", entries, at("2025-05-01T00:00:00Z"))).toEqual({ inserted: 3, changed: 0, unchanged: 0 });
    expect(await watch.upsertWatchRelations(accountId, "watcher", entries, at("2025-05-02T00:00:00Z"))).toEqual({ inserted: 0, changed: 0, unchanged: 3 });
    // The same users as "watching" are other rows.
    expect(await watch.upsertWatchRelations(accountId, "watching", entries.slice(0, 1), at("2025-05-02T00:00:00Z"))).toMatchObject({ inserted: 1 });

    const sweep = at("2025-05-08T00:00:00Z");
    await watch.upsertWatchRelations(accountId, "watcher", entries.slice(0, 2), at("2025-05-08T00:00:01Z"));
    expect(await watch.markMissingWatchRelationsRemoved(accountId, "watcher", sweep, at("2025-05-08T00:01:00Z"))).toBe(1);
    const { rows } = await m.pool.query("SELECT userid, kind, removed_reason FROM watch_relations WHERE account_id = $1 ORDER BY kind, userid", [accountId]);
    expect(rows).toEqual([
      { userid: uuid(50, "u"), kind: "watcher", removed_reason: null },
      { userid: uuid(51, "u"), kind: "watcher", removed_reason: null },
      { userid: uuid(52, "u"), kind: "watcher", removed_reason: "gone_from_listing" },
      { userid: uuid(50, "u"), kind: "watching", removed_reason: null },
    ]);
  });

  it("changed watch flags are a change", async () => {
    // An account of its own: the test above lists every watch relation of its account.
    const own = await insertAccount(m.pool, "flags", uuid(10, "u"));
    const entry = makeWatchEntry(60);
    await users.upsertUsers([entry.user], at("2025-06-01T00:00:00Z"));
    await watch.upsertWatchRelations(own, "watching", [entry], at("2025-06-01T00:00:00Z"));
    const flipped = makeWatchEntry(60, { watch: { ...entry.watch, journals: false } });
    expect(await watch.upsertWatchRelations(own, "watching", [flipped], at("2025-06-02T00:00:00Z"))).toEqual({ inserted: 0, changed: 1, unchanged: 0 });
  });
});
