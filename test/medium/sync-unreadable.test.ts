// One unreadable bucket of the watch feed (docs/service-behaviour.md#tolerant-reading): the rest of the
// feed is mirrored, the bad answer is kept with its raw JSON and counted in status and the digest, the
// source ends "incomplete" rather than failed, and the next run that reads everything clears it. Status,
// the dashboard's overview and the digest's health section count it.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { collectDigest } from "../../src/digest/collect.ts";
import { renderDigest } from "../../src/digest/render.ts";
import { overviewPage } from "../../src/http/pages/overview.ts";
import { QueueAdmin } from "../../src/queue/queue-admin.ts";
import { collectStatus } from "../../src/status/collect.ts";
import { watchFeedSource } from "../../src/sync/sources/watch-feed.ts";
import { createSyncHarness, type SyncHarness } from "../helpers/sync-harness.ts";

let h: SyncHarness;

// A fresh account per test: the second starts from the unreadable bucket it makes itself.
beforeEach(async () => {
  h = await createSyncHarness({ sim: { seed: 3, dataset: { feedItems: 30, trackedUsers: 2, trackedUserDeviations: 20 } }, sources: [watchFeedSource] });
});
afterEach(async () => {
  await h?.close();
});

describe("an unreadable bucket of the watch feed", () => {
  it("is kept and skipped; every other item is mirrored and the source is incomplete, not failed", async () => {
    const items = h.sim.truth.feed.filter((f) => f.deviationIds.length > 3);
    expect(items.length).toBeGreaterThan(1);
    // The first bucket asked for answers a page of the wrong shape, twice (the first reading and the re-read).
    h.sim.faults.add({ route: "/feed/home/{bucketid}", kind: "wrong_shape", times: 2 });
    const result = await h.runSource("watch_feed");
    expect(result.status).toBe("incomplete");
    expect(result.unreadable).toBe(1);
    expect(result.reason).toMatch(/could not be read and was skipped/);

    const { rows: feed } = await h.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM feed_items WHERE account_id = $1", [h.account.id]);
    expect(feed[0]?.n).toBe(h.sim.truth.feed.length);
    // Every bucket but one was expanded in full; the bad one keeps the deviations its feed item showed.
    const { rows: buckets } = await h.pool.query<{ bucketid: string; n: number }>(
      "SELECT bucketid, cardinality(deviationids)::int AS n FROM feed_items WHERE account_id = $1 AND bucketid IS NOT NULL",
      [h.account.id],
    );
    const short = buckets.filter((b) => b.n < h.sim.truth.feed.find((f) => f.bucketid === b.bucketid)!.deviationIds.length);
    expect(short).toHaveLength(1);

    const { rows: kept } = await h.pool.query("SELECT operation, subject, count, raw FROM unreadable_responses");
    expect(kept).toEqual([{ operation: "feed.home.bucket", subject: "", count: 1, raw: expect.objectContaining({ has_more: expect.any(Boolean) }) }]);

    const queues = new QueueAdmin(h.services.queues);
    try {
      const status = await collectStatus({ ...h.services, queues });
      expect(status.unreadable).toMatchObject({ count: 1, responses: 1, recent: [expect.objectContaining({ operation: "feed.home.bucket" })] });
      expect(status.sources.find((s) => s.source === "watch_feed")).toMatchObject({ lastResult: "incomplete" });
      // The dashboard's overview says so too, with the operation.
      const page = overviewPage(status);
      expect(page).toContain("1 answer of the service could not be read");
      expect(page).toContain("feed.home.bucket (response): the page has no array of items");
    } finally {
      await queues.close();
    }
    const now = h.sim.clock.now();
    const digest = await collectDigest({ db: h.pool, window: { start: new Date(now.getTime() - 3600_000), end: now }, now, archiveDir: "/tmp" });
    const text = renderDigest(digest, { timezone: "UTC", mode: "preview" }).text;
    expect(text).toContain("1 answer of the service could not be read and was skipped.");
    expect(text).toMatch(/watch_feed is incomplete/);
  });

  it("a full run that reads everything clears it", async () => {
    // The run of the test above: one bucket kept unread.
    h.sim.faults.add({ route: "/feed/home/{bucketid}", kind: "wrong_shape", times: 2 });
    expect(await h.runSource("watch_feed")).toMatchObject({ status: "incomplete", unreadable: 1 });
    h.sim.clock.advance(60_000);
    const result = await h.runSource("watch_feed", { full: true });
    expect(result.status).toBe("ok");
    const { rows } = await h.pool.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM feed_items WHERE cardinality(deviationids) < COALESCE(bucket_total, 0) AND account_id = $1",
      [h.account.id],
    );
    expect(rows[0]?.n).toBe(0);
  });
});
