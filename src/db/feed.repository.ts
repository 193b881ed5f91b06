// Watch-feed items of an account. The service gives them no id; feedItemId computes a stable one.
import type { FeedItemInput } from "./mirror-input.ts";
import { feedItemId, isoTime, uniqueBy, type UpsertCounts } from "./mirror-rows.ts";
import { sql } from "./kysely.ts";
import { upsertPage } from "./upsert-page.ts";
import type { Queryable } from "./with-transaction.ts";

export class FeedRepository {
  constructor(private readonly db: Queryable) {}

  /** Records a page of the watch feed. `changed` counts buckets that grew (their deviations differ). */
  async upsertFeedItems(accountId: number, items: readonly FeedItemInput[], seenAt: Date): Promise<UpsertCounts> {
    const rows = uniqueBy(
      items.map((item) => ({
        itemid: feedItemId(item),
        ts: isoTime(item.ts),
        type: item.type ?? null,
        by_userid: item.by_user?.userid ?? null,
        bucketid: item.bucketid ?? null,
        bucket_total: item.bucket_total ?? null,
        deviationids: (item.deviations ?? []).map((d) => d.deviationid).sort(),
        statusid: item.status?.statusid ?? null,
        raw: item,
      })),
      (r) => r.itemid,
    );
    if (rows.length === 0) return { inserted: 0, changed: 0, unchanged: 0 };
    return upsertPage(this.db, {
      rows,
      columns: sql`itemid text, ts timestamptz, type text, by_userid text, bucketid text, bucket_total integer, deviationids text[], statusid text, raw jsonb`,
      before: sql`
        old AS (
          SELECT f.itemid, f.deviationids FROM feed_items f JOIN input USING (itemid) WHERE f.account_id = ${accountId}
        )`,
      upsert: sql`
        INSERT INTO feed_items AS f (account_id, itemid, ts, type, by_userid, bucketid, bucket_total, deviationids,
          statusid, raw, first_seen_at, last_seen_at)
        SELECT ${accountId}, itemid, ts, type, by_userid, bucketid, bucket_total, deviationids, statusid, raw, ${seenAt}, ${seenAt} FROM input ORDER BY itemid
        ON CONFLICT (account_id, itemid) DO UPDATE SET
          ts = COALESCE(EXCLUDED.ts, f.ts),
          bucket_total = COALESCE(EXCLUDED.bucket_total, f.bucket_total),
          deviationids = EXCLUDED.deviationids,
          statusid = COALESCE(EXCLUDED.statusid, f.statusid),
          raw = EXCLUDED.raw,
          last_seen_at = GREATEST(f.last_seen_at, EXCLUDED.last_seen_at)
        RETURNING f.itemid, (f.xmax = 0) AS inserted`,
      using: ["itemid"],
      changed: sql`o.deviationids IS DISTINCT FROM i.deviationids`,
    });
  }
}
