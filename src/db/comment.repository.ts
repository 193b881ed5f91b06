// Comments on deviations, profiles and statuses: set-based page writes keyed by commentid.
import type { CommentInput } from "./mirror-input.ts";
import { isoTime, uniqueBy, type UpsertCounts } from "./mirror-rows.ts";
import { sql } from "./kysely.ts";
import { seenAgain, upsertPage } from "./upsert-page.ts";
import type { Queryable } from "./with-transaction.ts";

export type CommentSubject = { kind: "deviation" | "profile" | "status"; id: string };

export class CommentRepository {
  constructor(private readonly db: Queryable) {}

  /**
   * Records a page of comments on one subject (a deviation, a profile's userid, a status). Likes and reply
   * counts are refreshed silently; `changed` counts edited bodies and changed hidden states.
   */
  async upsertComments(subject: CommentSubject, comments: readonly CommentInput[], seenAt: Date): Promise<UpsertCounts> {
    const rows = uniqueBy(comments, (c) => c.commentid).map((c) => ({
      commentid: c.commentid,
      parentid: c.parentid ?? null,
      author_userid: c.user?.userid ?? null,
      posted_at: isoTime(c.posted),
      body: c.body ?? null,
      replies: c.replies ?? null,
      hidden: c.hidden ?? null,
      likes: c.likes ?? null,
      raw: c,
    }));
    if (rows.length === 0) return { inserted: 0, changed: 0, unchanged: 0 };
    return upsertPage(this.db, {
      rows,
      columns: sql`commentid text, parentid text, author_userid text, posted_at timestamptz, body text, replies integer, hidden text, likes integer, raw jsonb`,
      before: sql`
        old AS (
          SELECT c.commentid, c.body, c.hidden, c.removed_at FROM comments c JOIN input USING (commentid)
        )`,
      upsert: sql`
        INSERT INTO comments AS c (commentid, parentid, subject_kind, subject_id, author_userid, posted_at, body, replies,
          hidden, likes, raw, first_seen_at, last_seen_at)
        SELECT commentid, parentid, ${subject.kind}::comment_subject_kind, ${subject.id}, author_userid, posted_at, body, replies, hidden, likes,
          raw, ${seenAt}, ${seenAt}
        FROM input ORDER BY commentid
        ON CONFLICT (commentid) DO UPDATE SET
          parentid = COALESCE(EXCLUDED.parentid, c.parentid),
          author_userid = COALESCE(EXCLUDED.author_userid, c.author_userid),
          posted_at = COALESCE(EXCLUDED.posted_at, c.posted_at),
          body = COALESCE(EXCLUDED.body, c.body),
          replies = COALESCE(EXCLUDED.replies, c.replies),
          hidden = EXCLUDED.hidden,
          likes = COALESCE(EXCLUDED.likes, c.likes),
          raw = EXCLUDED.raw,
          ${seenAgain("c")}
        RETURNING c.commentid, (c.xmax = 0) AS inserted`,
      using: ["commentid"],
      changed: sql`o.removed_at IS NOT NULL OR o.hidden IS DISTINCT FROM i.hidden OR (i.body IS NOT NULL AND o.body IS DISTINCT FROM i.body)`,
    });
  }
}
