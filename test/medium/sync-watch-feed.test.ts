// The watch_feed source through the real runner against the simulator: /feed/home mirrored item by item
// with its deviations and users; a quiet re-run costs one call; new posts are picked up exactly. With
// /feed/home gone, the source degrades to polling the watched artists, the busier ones more often.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { FeedItem } from "../../src/api/types.ts";
import { feedItemId } from "../../src/db/mirror-rows.ts";
import type { GroundTruth } from "../../src/simulator/dataset.ts";
import { feedRoutes } from "../../src/simulator/routes/feed.ts";
import { MAX_CHECK_MS, pollInterval, watchFeedSource } from "../../src/sync/sources/watch-feed.ts";
import { createSyncHarness, type SyncHarness, runSourceLater } from "../helpers/sync-harness.ts";

const DAY = 86_400_000;

type Dataset = GroundTruth;
type SimFeedItem = GroundTruth["feed"][number];
type SimDeviation = GroundTruth["deviations"] extends ReadonlyMap<string, infer D> ? D : never;

type FeedRow = {
  itemid: string;
  ts: Date | null;
  type: string | null;
  by_userid: string | null;
  bucketid: string | null;
  bucket_total: number | null;
  deviationids: string[];
};

async function mirroredFeed(h: SyncHarness): Promise<Map<string, FeedRow>> {
  const { rows } = await h.pool.query<FeedRow>(
    "SELECT itemid, ts, type, by_userid, bucketid, bucket_total, deviationids FROM feed_items WHERE account_id = $1",
    [h.account.id],
  );
  return new Map(rows.map((r) => [r.itemid, r]));
}

/** Deviations a user token sees in the feed: dvault asks for mature ones too (docs/service-behaviour.md#mature-content-param). */
function visibleInFeed(data: Dataset, id: string): boolean {
  const d = data.deviations.get(id);
  return Boolean(d && !d.isDeleted && !data.users.get(d.authorId)?.isDeactivated);
}

/** The mirror row a simulator feed item should become. */
function expectedItem(data: Dataset, item: SimFeedItem): FeedRow {
  const withDeviations = item.type === "deviation_submitted" || item.type === "journal_submitted";
  const shape: FeedItem = withDeviations
    ? { ts: item.ts, type: item.type, bucketid: item.bucketid }
    : { ts: item.ts, type: item.type, by_user: { userid: item.byUserId, username: "" }, status: { statusid: item.bucketid, is_deleted: false } };
  return {
    itemid: feedItemId(shape),
    ts: new Date(item.ts.replace(/\+0000$/, "Z")),
    type: item.type,
    by_userid: item.byUserId,
    bucketid: withDeviations ? item.bucketid : null,
    bucket_total: withDeviations ? item.deviationIds.length : null,
    deviationids: withDeviations ? item.deviationIds.filter((id) => visibleInFeed(data, id)).sort() : [],
  };
}

describe("watch_feed source while /feed/home answers", () => {
  let h: SyncHarness;
  // A fresh mirror and simulator per test: tests post upstream and count what a run finds.
  beforeEach(async () => {
    h = await createSyncHarness({ sim: { dataset: { feedItems: 200 } }, sources: [watchFeedSource] });
  });
  afterEach(async () => {
    await h?.close();
  });
  const runLater = (opts: { full?: boolean } = {}) => {
    h.sim.clock.advance(60_000);
    return h.runSource("watch_feed", opts);
  };

  it("mirrors all 200 feed items with every deviation of their buckets and their users", async () => {
    const result = await runLater();

    expect(result.status).toBe("ok");
    const data = h.sim.truth;
    expect(data.feed.length).toBe(200);
    const rows = await mirroredFeed(h);
    const expected = data.feed.map((item) => expectedItem(data, item));
    expect([...rows.keys()].sort()).toEqual(expected.map((e) => e.itemid).sort());
    for (const e of expected) expect({ ...rows.get(e.itemid)!, deviationids: [...rows.get(e.itemid)!.deviationids].sort() }).toEqual(e);
    expect(result.counters).toEqual({ new: 200, changed: 0, removed: 0 });

    // Every deviation and author an item points at is mirrored.
    const ids = [...new Set(expected.flatMap((e) => e.deviationids))];
    const { rows: devs } = await h.pool.query<{ deviationid: string; title: string; author_userid: string }>(
      "SELECT d.deviationid, d.title, d.author_userid FROM deviations d JOIN users u ON u.userid = d.author_userid WHERE d.deviationid = ANY($1)",
      [ids],
    );
    expect(devs.map((d) => d.deviationid).sort()).toEqual(ids.sort());
    for (const d of devs) {
      const t = data.deviations.get(d.deviationid)!;
      expect({ title: d.title, author: d.author_userid }).toEqual({ title: t.title, author: t.authorId });
    }
  });

  it("costs at most 2 API calls when nothing changed", async () => {
    // Up to date with upstream first, whatever ran before (or nothing did): then measure a run with no news.
    await runLater();
    const { result, calls } = await runSourceLater(h, "watch_feed");
    expect(result.full).toBe(false);
    expect(calls).toBeLessThanOrEqual(2);
    expect(result.counters).toEqual({ new: 0, changed: 0, removed: 0 });
  });

  it("picks up exactly the new posts of watched artists", async () => {
    await runLater(); // mirrored before the posts
    const data = h.sim.truth;
    const artist = data.users.get(data.feed[0]!.byUserId)!;
    const before = await mirroredFeed(h);
    const posted = [
      h.sim.activity({ kind: "add_deviation", username: artist.username, title: "Fresh one", isMature: false }),
      h.sim.activity({ kind: "add_deviation", username: artist.username, title: "Fresh two", isMature: false }),
    ].map((a) => a.deviationid as string);
    const seq = h.lastSeq();
    const result = await runLater();

    // The feed's head and the page after it.
    expect(h.apiCallsSince(seq)).toBeLessThanOrEqual(2);
    expect(result.counters).toEqual({ new: 2, changed: 0, removed: 0 });
    const rows = await mirroredFeed(h);
    const fresh = [...rows.values()].filter((r) => !before.has(r.itemid));
    expect(fresh.flatMap((r) => r.deviationids).sort()).toEqual([...posted].sort());
    const { rows: devs } = await h.pool.query<{ title: string }>("SELECT title FROM deviations WHERE deviationid = ANY($1) ORDER BY title", [posted]);
    expect(devs.map((d) => d.title)).toEqual(["Fresh one", "Fresh two"]);
  });
});

describe("watch_feed source when /feed/home is gone", () => {
  let h: SyncHarness;
  const feedHome = feedRoutes.find((r) => r.template === "/feed/home")!;
  // A fresh mirror and simulator per test: tests post upstream and move the clock past poll intervals.
  beforeEach(async () => {
    // The simulator has no fault for "endpoint removed" and its current mode still serves the deprecated
    // /feed/home; flagging the route removed makes it answer the service's 404 "Api endpoint not found.".
    feedHome.removed = true;
    h = await createSyncHarness({ sim: { dataset: { feedItems: 200 } }, sources: [watchFeedSource] });
  });
  afterEach(async () => {
    feedHome.removed = false;
    await h?.close();
  });
  const runLater = (ms = 60_000) => {
    h.sim.clock.advance(ms);
    return h.runSource("watch_feed");
  };

  /** The first gallery page of a user as the service lists it: newest first, deleted ones dropped. */
  function newestPage(userid: string): string[] {
    const data = h.sim.truth;
    const ids = new Set(data.galleryFolders.filter((f) => f.ownerId === userid).flatMap((f) => f.deviationIds));
    return [...ids]
      .map((id) => data.deviations.get(id))
      .filter((d): d is SimDeviation => d !== undefined)
      .sort((a, b) => b.publishedTime - a.publishedTime || b.numericId - a.numericId)
      .slice(0, 24)
      .filter((d) => !d.isDeleted)
      .map((d) => d.deviationid);
  }

  function galleryPolls(seq: number): string[] {
    return h.sim
      .log()
      .filter((e) => e.seq > seq && e.route.endsWith("/gallery/all"))
      .map((e) => String(e.query.username));
  }

  it("degrades with the reason and polls every watched artist's newest gallery page", async () => {
    const data = h.sim.truth;
    const owner = data.users.get(data.ownerId)!;
    const watched = owner.friends.map((f) => data.users.get(f.userid)!).filter((u) => !u.isDeactivated);
    const seq = h.lastSeq();
    const result = await runLater();

    expect(result.status).toBe("degraded");
    expect(result.reason).toBe(
      `watch feed /feed/home removed by the service (404 Api endpoint not found.); fallback: polling ${watched.length} watched artists`,
    );
    expect(galleryPolls(seq).sort()).toEqual(watched.map((u) => u.username).sort());

    // The watch list went into the mirror, and every polled page's deviations are mirrored.
    const { rows: relations } = await h.pool.query<{ userid: string }>("SELECT userid FROM watch_relations WHERE account_id = $1 AND kind = 'watching'", [
      h.account.id,
    ]);
    expect(relations.map((r) => r.userid).sort()).toEqual(watched.map((u) => u.userid).sort());
    const expectedIds = watched.flatMap((u) => newestPage(u.userid));
    expect(expectedIds.length).toBeGreaterThan(0);
    const { rows: devs } = await h.pool.query<{ deviationid: string }>("SELECT deviationid FROM deviations WHERE deviationid = ANY($1)", [expectedIds]);
    expect(devs.length).toBe(expectedIds.length);
    expect(result.counters.new).toBe(expectedIds.length);

    const { rows: state } = await h.pool.query<{ last_result: string; unavailable_reason: string }>(
      "SELECT last_result, unavailable_reason FROM sync_sources WHERE account_id = $1 AND source = 'watch_feed'",
      [h.account.id],
    );
    expect(state).toEqual([{ last_result: "degraded", unavailable_reason: result.reason }]);
  });

  it("costs at most 2 API calls when no artist is due", async () => {
    await runLater(); // every artist polled a minute ago, so none is due now
    const seq = h.lastSeq();
    const result = await runLater();
    const calls = h.apiCallsSince(seq);
    expect(result.status).toBe("degraded");
    expect(calls).toBeLessThanOrEqual(2);
    expect(galleryPolls(seq)).toEqual([]);
    expect(result.counters).toEqual({ new: 0, changed: 0, removed: 0 });
  });

  it("polls an artist who posts more more often, and picks up their new posts", async () => {
    await runLater(); // mirrored before the posts
    const data = h.sim.truth;
    const busy = data.users.get(data.feed[0]!.byUserId)!;
    const posted = Array.from(
      { length: 6 },
      (_, i) => h.sim.activity({ kind: "add_deviation", username: busy.username, title: `Busy ${i}` }).deviationid as string,
    );

    // Everyone is due after a week: the new posts arrive, and the busy artist's pace sets a shorter interval.
    let seq = h.lastSeq();
    let result = await runLater(MAX_CHECK_MS);
    expect(result.counters.new).toBe(posted.length);
    const { rows } = await h.pool.query("SELECT deviationid FROM deviations WHERE deviationid = ANY($1)", [posted]);
    expect(rows.length).toBe(posted.length);
    expect(galleryPolls(seq)).toContain(busy.username);

    // Three days later only the busy artist is polled again.
    seq = h.lastSeq();
    result = await runLater(3 * DAY);
    expect(result.status).toBe("degraded");
    expect(galleryPolls(seq)).toEqual([busy.username]);
  });
});

describe(pollInterval.name, () => {
  const now = Date.UTC(2026, 10, 2);
  it("polls daily posters twice a day and quiet artists weekly", () => {
    const daily = Array.from({ length: 24 }, (_, i) => now - (i + 1) * DAY);
    expect(pollInterval(daily, now)).toBe(12 * 3600_000);
    expect(pollInterval([now - 400 * DAY, now - 800 * DAY], now)).toBe(MAX_CHECK_MS);
    expect(pollInterval([], now)).toBe(MAX_CHECK_MS);
  });
  it("never polls more often than the source runs", () => {
    const burst = Array.from({ length: 24 }, (_, i) => now - i * 1000);
    expect(pollInterval(burst, now)).toBe(30 * 60_000);
  });
});
