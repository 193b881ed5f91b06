// The profile source through the real runner against the simulator: the owner's profile, watchers and
// watched users mirrored field by field; a quiet re-run is one call; a new watcher is picked up without
// a sweep; a deactivated watcher is resolved on one.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { SimUser } from "../../src/simulator/dataset.ts";
import { runSource } from "../../src/sync/run-source.ts";
import { profileSource } from "../../src/sync/sources/profile.ts";
import { storeUserGrant } from "../helpers/owner-grant.ts";
import { createSyncHarness, type SyncHarness, runSourceLater } from "../helpers/sync-harness.ts";

let h: SyncHarness;

// A fresh mirror and simulator per test: tests change the data upstream and count what a run finds.
beforeEach(async () => {
  // More watchers than one page of 50.
  h = await createSyncHarness({ sim: { dataset: { watchers: 70, friends: 25 } }, sources: [profileSource] });
});
afterEach(async () => {
  await h?.close();
});

function runLater(opts: { full?: boolean } = {}) {
  return runSourceLater(h, "profile", opts);
}

function owner(): SimUser {
  return h.sim.truth.users.get(h.sim.truth.ownerId) as SimUser;
}

function user(id: string): SimUser {
  return h.sim.truth.users.get(id) as SimUser;
}

function iso(text: string | null): Date | null {
  return text === null ? null : new Date(text.replace(/\+0000$/, "Z"));
}

type RelationRow = { userid: string; username: string; watch: unknown; watches_you: boolean | null; last_visit_at: Date | null };

async function relations(kind: "watcher" | "watching"): Promise<RelationRow[]> {
  const { rows } = await h.pool.query<RelationRow>(
    `SELECT w.userid, u.username, w.watch, w.watches_you, w.last_visit_at FROM watch_relations w JOIN users u USING (userid)
     WHERE w.account_id = $1 AND w.kind = $2 AND w.removed_at IS NULL ORDER BY w.userid`,
    [h.account.id, kind],
  );
  return rows;
}

function expectedWatchers(): RelationRow[] {
  const me = owner();
  return me.watcherIds
    .map(user)
    .filter((u) => !u.isDeactivated)
    .map((u) => {
      const entry = u.friends.find((f) => f.userid === me.userid);
      return { userid: u.userid, username: u.username, watch: entry?.watch ?? null, watches_you: null, last_visit_at: iso(entry?.lastvisit ?? null) };
    })
    .sort((a, b) => a.userid.localeCompare(b.userid));
}

function expectedWatching(): RelationRow[] {
  const me = owner();
  return me.friends
    .filter((f) => !user(f.userid).isDeactivated)
    .map((f) => ({
      userid: f.userid,
      username: user(f.userid).username,
      watch: f.watch,
      watches_you: user(f.userid).friends.some((x) => x.userid === me.userid),
      last_visit_at: iso(f.lastvisit),
    }))
    .sort((a, b) => a.userid.localeCompare(b.userid));
}

describe(profileSource.name, () => {
  it("a grant stored without its user (the login's whoami failed) is named at its first sync; the same user under a second name is skipped, said", async () => {
    // The owner's row, as a login whose /user/whoami failed leaves it.
    await h.pool.query("UPDATE accounts SET user_id = NULL, username = NULL WHERE id = $1", [h.account.id]);
    expect((await runLater({ full: true })).result.status).toBe("ok");
    const named = await h.pool.query("SELECT user_id, username FROM accounts WHERE id = $1", [h.account.id]);
    expect(named.rows).toEqual([{ user_id: owner().userid, username: owner().username }]);

    // The same user logged in again under another local name, whoami failing again.
    const second = await storeUserGrant(h.services, h.sim, { userId: owner().userid, name: "second", named: false });
    const run = runSource({ accountId: second.id, source: "profile" }, { services: h.services, sources: new Map([["profile", profileSource]]) });
    await expect(run).rejects.toThrow(
      `account "second" is ${owner().username}, whom account "${h.account.name}" archives already: nothing is synced twice; end this login with dvault auth logout --account second`,
    );
    const state = await h.pool.query("SELECT last_result::text FROM sync_sources WHERE account_id = $1", [second.id]);
    expect(state.rows).toEqual([{ last_result: "skipped" }]);
  });

  it("follows the account's own user renamed on the service: the new name is stored and the run succeeds", async () => {
    expect((await runLater({ full: true })).result.status).toBe("ok");
    h.sim.activity({ kind: "rename_user", username: owner().username, to: "RenamedOwner" });
    const { result } = await runLater({ full: true });
    expect(result.status).toBe("ok");
    const account = await h.pool.query<{ username: string }>("SELECT username FROM accounts WHERE id = $1", [h.account.id]);
    expect(account.rows[0]?.username).toBe("RenamedOwner");
    const me = await h.pool.query<{ username: string; removed_at: Date | null }>("SELECT username, removed_at FROM users WHERE userid = $1", [owner().userid]);
    expect(me.rows).toEqual([{ username: "RenamedOwner", removed_at: null }]);
    // Later runs ask with the stored name: no lookup again.
    const again = await runLater();
    expect(again.result.status).toBe("ok");
    expect(again.routes.some((r) => r.includes("whoami"))).toBe(false);
  });

  it("mirrors the profile, the watchers and the watched users on the first run", async () => {
    const { result } = await runLater();
    expect(result.status).toBe("ok");
    const me = owner();
    const { rows } = await h.pool.query(
      "SELECT userid, username, real_name, tagline, website, country, countryid, bio, artist_level, artist_specialty, watchers, friends FROM users WHERE userid = $1",
      [me.userid],
    );
    expect(rows).toEqual([
      {
        userid: me.userid,
        username: me.username,
        real_name: me.realName,
        tagline: me.tagline,
        website: me.website,
        country: me.country,
        countryid: me.countryid,
        bio: me.bio,
        artist_level: me.artistLevel,
        artist_specialty: me.artistSpecialty,
        watchers: me.watcherIds.length,
        friends: me.friends.length,
      },
    ]);
    expect(await relations("watcher")).toEqual(expectedWatchers());
    expect(await relations("watching")).toEqual(expectedWatching());
    expect(expectedWatchers().length).toBe(70);
  });

  it("costs at most two API calls when nothing changed upstream", async () => {
    // Up to date with upstream first, whatever ran before (or nothing did): then measure a run with no news.
    await runLater();
    const { result, calls, routes } = await runLater();
    expect(result.full).toBe(false);
    expect(calls, routes.join("\n")).toBeLessThanOrEqual(2);
    expect(result.counters).toEqual({ new: 0, changed: 0, removed: 0 });
  });

  it("picks up a new watcher, stopping at the first page already mirrored", async () => {
    await runLater(); // mirrored before the changes
    const added = h.sim.activity({ kind: "new_watcher" }) as { userid: string };
    const { result, calls, routes } = await runLater();
    expect(result.counters).toEqual({ new: 1, changed: 0, removed: 0 });
    // The profile (its watcher count moved), the first page (new watcher), the second (unchanged: stop).
    expect(calls, routes.join("\n")).toBe(3);
    expect(await relations("watcher")).toEqual(expectedWatchers());
    expect((await relations("watcher")).some((r) => r.userid === added.userid)).toBe(true);
  });

  it("marks a deactivated watcher and their relation on a full sweep", async () => {
    await runLater(); // mirrored before the changes
    const me = owner();
    const watcher = user(me.watcherIds[me.watcherIds.length - 1] as string);
    h.sim.activity({ kind: "deactivate_user", username: watcher.username });
    const { result } = await runLater({ full: true });
    expect(result.status).toBe("ok");
    expect(result.counters).toMatchObject({ new: 0, removed: 1 });
    expect(await relations("watcher")).toEqual(expectedWatchers());
    const { rows } = await h.pool.query(
      `SELECT u.is_deactivated, u.removed_reason::text AS user_reason, w.removed_at IS NOT NULL AS relation_removed
       FROM users u JOIN watch_relations w USING (userid) WHERE u.userid = $1 AND w.kind = 'watcher'`,
      [watcher.userid],
    );
    expect(rows).toEqual([{ is_deactivated: true, user_reason: "artist_deactivated", relation_removed: true }]);
    const { rows: others } = await h.pool.query("SELECT count(*)::int AS n FROM users WHERE is_deactivated");
    expect(others[0]?.n).toBe(1);
    const { rows: history } = await h.pool.query("SELECT count(*)::int AS n FROM user_history");
    expect(history[0]?.n).toBe(0);
  });

  // docs/service-behaviour.md#tolerant-reading: a walk that skipped what it could not read has not seen the whole
  // list, so the people on the skipped page or entry still watch, and no relation ends for it.
  it.each([
    { fault: "wrong_shape" as const, times: 2, what: "a page of watchers it cannot read" },
    { fault: "broken_item" as const, times: 1, what: "a watcher entry it cannot read" },
  ])("ends no relation on a full sweep that skipped $what", async ({ fault, times }) => {
    await runLater(); // mirrored whole
    expect(await relations("watcher")).toEqual(expectedWatchers());
    h.sim.faults.add({ route: "/user/watchers/{username}", kind: fault, times });
    const { result } = await runLater({ full: true });
    expect(result.status).toBe("incomplete");
    expect(result.counters).toMatchObject({ removed: 0 });
    expect(await relations("watcher")).toEqual(expectedWatchers());
  });
});
