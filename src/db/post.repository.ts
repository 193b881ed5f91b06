// Status updates and the ordered list of a user's profile posts (journals are deviations, statuses are
// statuses; profile_posts links both to the profile in order).
import type { StatusInput } from "./mirror-input.ts";
import { isoTime, uniqueBy, type UpsertCounts } from "./mirror-rows.ts";
import { sql } from "./kysely.ts";
import { seenAgain, upsertPage } from "./upsert-page.ts";
import type { Queryable } from "./with-transaction.ts";

export type ProfilePostInput = { kind: "journal" | "status"; itemId: string; position: number };

/** Upsert counts of statuses; `removed` counts known statuses that the page reports deleted. */
export type StatusCounts = UpsertCounts & { removed: number };

export class PostRepository {
  constructor(private readonly db: Queryable) {}

  /**
   * Records statuses (deviation-shaped profile posts: see statusFromProfilePost). A deleted status keeps
   * its archived body and gets removed_at / 'deleted'; `changed` counts edited bodies and returning ones.
   */
  async upsertStatuses(statuses: readonly StatusInput[], seenAt: Date): Promise<StatusCounts> {
    const rows = uniqueBy(
      statuses.filter((s): s is StatusInput & { statusid: string } => Boolean(s.statusid)),
      (s) => s.statusid,
    ).map((s) => ({
      statusid: s.statusid,
      is_deleted: s.is_deleted === true,
      author_userid: s.author?.userid ?? null,
      body: s.body ?? null,
      posted_at: isoTime(s.ts),
      url: s.url ?? null,
      comments_count: s.comments_count ?? null,
      is_share: s.is_share ?? null,
      shared_deviationids: s.items ? s.items.flatMap((item) => (item.deviation?.deviationid ? [item.deviation.deviationid] : [])) : null,
      raw: s,
    }));
    if (rows.length === 0) return { inserted: 0, changed: 0, unchanged: 0, removed: 0 };
    return upsertPage(this.db, {
      rows,
      columns: sql`statusid text, is_deleted boolean, author_userid text, body text, posted_at timestamptz, url text, comments_count integer, is_share boolean, shared_deviationids text[], raw jsonb`,
      before: sql`
        old AS (
          SELECT s.statusid, s.body, s.removed_reason FROM statuses s JOIN input USING (statusid)
        )`,
      upsert: sql`
        INSERT INTO statuses AS s (statusid, author_userid, body, posted_at, url, comments_count, is_share,
          shared_deviationids, is_deleted, raw, first_seen_at, last_seen_at, removed_at, removed_reason)
        SELECT statusid, author_userid, body, posted_at, url, comments_count, is_share, COALESCE(shared_deviationids, '{}'),
          is_deleted, raw, ${seenAt}, ${seenAt}, CASE WHEN is_deleted THEN ${seenAt}::timestamptz END,
          CASE WHEN is_deleted THEN 'deleted'::removed_reason END
        FROM input ORDER BY statusid
        ON CONFLICT (statusid) DO UPDATE SET
          author_userid = COALESCE(EXCLUDED.author_userid, s.author_userid),
          body = COALESCE(EXCLUDED.body, s.body),
          posted_at = COALESCE(EXCLUDED.posted_at, s.posted_at),
          url = COALESCE(EXCLUDED.url, s.url),
          comments_count = COALESCE(EXCLUDED.comments_count, s.comments_count),
          is_share = COALESCE(EXCLUDED.is_share, s.is_share),
          shared_deviationids = CASE WHEN EXCLUDED.is_deleted THEN s.shared_deviationids ELSE EXCLUDED.shared_deviationids END,
          is_deleted = EXCLUDED.is_deleted,
          raw = CASE WHEN EXCLUDED.is_deleted THEN s.raw || EXCLUDED.raw ELSE EXCLUDED.raw END,
          last_seen_at = GREATEST(s.last_seen_at, EXCLUDED.last_seen_at),
          removed_at = CASE WHEN EXCLUDED.is_deleted
                            THEN CASE WHEN s.removed_reason = 'deleted' THEN s.removed_at ELSE EXCLUDED.removed_at END END,
          removed_reason = EXCLUDED.removed_reason
        RETURNING s.statusid, (s.xmax = 0) AS inserted`,
      using: ["statusid"],
      changed: sql`NOT i.is_deleted AND (o.removed_reason IS NOT NULL OR (i.body IS NOT NULL AND o.body IS DISTINCT FROM i.body))`,
      also: {
        removed: sql`i.is_deleted AND o.removed_reason IS DISTINCT FROM 'deleted'`,
      },
    });
  }

  /** Records a page of a user's profile posts in order. `changed`: posts that moved or came back. */
  async upsertProfilePosts(ownerUserid: string, posts: readonly ProfilePostInput[], seenAt: Date): Promise<UpsertCounts> {
    const rows = uniqueBy(posts, (p) => `${p.kind}:${p.itemId}`).map((p) => ({ kind: p.kind, item_id: p.itemId, position: p.position }));
    if (rows.length === 0) return { inserted: 0, changed: 0, unchanged: 0 };
    return upsertPage(this.db, {
      rows,
      columns: sql`kind profile_post_kind, item_id text, position integer`,
      before: sql`
        old AS (
          SELECT p.kind, p.item_id, p.position, p.removed_at FROM profile_posts p JOIN input USING (kind, item_id)
          WHERE p.owner_userid = ${ownerUserid}
        )`,
      upsert: sql`
        INSERT INTO profile_posts AS p (owner_userid, kind, item_id, position, first_seen_at, last_seen_at)
        SELECT ${ownerUserid}, kind, item_id, position, ${seenAt}, ${seenAt} FROM input ORDER BY kind, item_id
        ON CONFLICT (owner_userid, kind, item_id) DO UPDATE SET
          position = COALESCE(EXCLUDED.position, p.position),
          ${seenAgain("p")}
        RETURNING p.kind, p.item_id, (p.xmax = 0) AS inserted`,
      using: ["kind", "item_id"],
      changed: sql`o.removed_at IS NOT NULL OR (i.position IS NOT NULL AND o.position IS DISTINCT FROM i.position)`,
    });
  }

  /** After a complete walk of a user's posts started at `sweepStartedAt`: posts not seen since are removed. */
  async markMissingProfilePostsRemoved(ownerUserid: string, sweepStartedAt: Date, at: Date = new Date()): Promise<number> {
    const result = await this.db.query(MARK_MISSING_POSTS, [ownerUserid, sweepStartedAt, at]);
    return result.rowCount ?? 0;
  }
}

const MARK_MISSING_POSTS = `
UPDATE profile_posts SET removed_at = $3, removed_reason = 'gone_from_listing'
WHERE owner_userid = $1 AND last_seen_at < $2 AND removed_at IS NULL`;
