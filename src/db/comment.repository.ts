// Comments on deviations, profiles and statuses: set-based page writes keyed by commentid.
import type { CommentInput } from "./mirror-input.ts";
import { isoTime, jsonParam, toCounts, uniqueBy, type CountsRow, type UpsertCounts } from "./mirror-rows.ts";
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
    const { rows: result } = await this.db.query<CountsRow>(UPSERT, [jsonParam(rows), subject.kind, subject.id, seenAt]);
    return toCounts(result[0]);
  }
}

const UPSERT = `
WITH input AS (
  SELECT * FROM jsonb_to_recordset($1::jsonb) AS x(
    commentid text, parentid text, author_userid text, posted_at timestamptz, body text, replies integer,
    hidden text, likes integer, raw jsonb)
), old AS (
  SELECT c.commentid, c.body, c.hidden, c.removed_at FROM comments c JOIN input USING (commentid)
), upserted AS (
  INSERT INTO comments AS c (commentid, parentid, subject_kind, subject_id, author_userid, posted_at, body, replies,
    hidden, likes, raw, first_seen_at, last_seen_at)
  SELECT commentid, parentid, $2::comment_subject_kind, $3, author_userid, posted_at, body, replies, hidden, likes,
    raw, $4, $4
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
    last_seen_at = GREATEST(c.last_seen_at, EXCLUDED.last_seen_at),
    removed_at = NULL,
    removed_reason = NULL
  RETURNING c.commentid, (c.xmax = 0) AS inserted
)
SELECT
  count(*) FILTER (WHERE u.inserted)::int AS inserted,
  count(*) FILTER (WHERE NOT u.inserted AND (o.removed_at IS NOT NULL OR o.hidden IS DISTINCT FROM i.hidden
    OR (i.body IS NOT NULL AND o.body IS DISTINCT FROM i.body)))::int AS changed,
  count(*)::int AS total
FROM upserted u JOIN input i USING (commentid) LEFT JOIN old o USING (commentid)`;
