// Watch-feed items of an account. The service gives them no id; feedItemId computes a stable one.
import type { FeedItemInput } from "./mirror-input.ts";
import { feedItemId, isoTime, jsonParam, toCounts, uniqueBy, type CountsRow, type UpsertCounts } from "./mirror-rows.ts";
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
    const { rows: result } = await this.db.query<CountsRow>(UPSERT, [jsonParam(rows), accountId, seenAt]);
    return toCounts(result[0]);
  }
}

const UPSERT = `
WITH input AS (
  SELECT * FROM jsonb_to_recordset($1::jsonb) AS x(
    itemid text, ts timestamptz, type text, by_userid text, bucketid text, bucket_total integer,
    deviationids text[], statusid text, raw jsonb)
), old AS (
  SELECT f.itemid, f.deviationids FROM feed_items f JOIN input USING (itemid) WHERE f.account_id = $2
), upserted AS (
  INSERT INTO feed_items AS f (account_id, itemid, ts, type, by_userid, bucketid, bucket_total, deviationids,
    statusid, raw, first_seen_at, last_seen_at)
  SELECT $2, itemid, ts, type, by_userid, bucketid, bucket_total, deviationids, statusid, raw, $3, $3 FROM input ORDER BY itemid
  ON CONFLICT (account_id, itemid) DO UPDATE SET
    ts = COALESCE(EXCLUDED.ts, f.ts),
    bucket_total = COALESCE(EXCLUDED.bucket_total, f.bucket_total),
    deviationids = EXCLUDED.deviationids,
    statusid = COALESCE(EXCLUDED.statusid, f.statusid),
    raw = EXCLUDED.raw,
    last_seen_at = GREATEST(f.last_seen_at, EXCLUDED.last_seen_at)
  RETURNING f.itemid, (f.xmax = 0) AS inserted
)
SELECT
  count(*) FILTER (WHERE u.inserted)::int AS inserted,
  count(*) FILTER (WHERE NOT u.inserted AND o.deviationids IS DISTINCT FROM i.deviationids)::int AS changed,
  count(*)::int AS total
FROM upserted u JOIN input i USING (itemid) LEFT JOIN old o USING (itemid)`;
