// The reading pages' read model (src/http/pages/reading.ts): notes and their threads, messages and their stacks,
// comments as a tree, statuses, the watch feed, journals' and literature's text, artists with their folders and what
// could not be archived. Read-only; one query per method. Lists are read after a keyset cursor (`after`: the key and
// id of the last row shown), newest first along an index where the table has one, and never counted whole.
import { kysely, sql } from "./kysely.ts";
import type { Queryable } from "./with-transaction.ts";

/** Where a list resumes: the last row's sort key (an ISO time, or "-infinity" for an undated row) and its id. */
export type ListCursor = { key: string; id: string };

export type Removal = { removedAt: Date | null; removedReason: string | null };

export type NoteFolderRow = { accountId: number; account: string; folderid: string; title: string | null; count: number | null };
export type NoteRow = Removal & {
  accountId: number;
  account: string;
  noteid: string;
  folderid: string | null;
  ts: Date | null;
  unread: boolean | null;
  starred: boolean | null;
  sent: boolean | null;
  subject: string | null;
  preview: string | null;
  body: string | null;
  sender: string | null;
  recipients: Array<{ userid?: string; username?: string }> | null;
  key: string;
};
export type NoteFilter = { folder?: string | undefined; flag?: "sent" | "received" | "unread" | "starred" | undefined };

export type MessageRow = Removal & {
  accountId: number;
  messageid: string;
  box: string;
  type: string | null;
  ts: Date | null;
  stackid: string | null;
  stackCount: number | null;
  isNew: boolean | null;
  orphaned: boolean | null;
  originator: string | null;
  subjectKind: string | null;
  subjectDeviationid: string | null;
  subjectTitle: string | null;
  subjectUser: string | null;
  subjectStatusid: string | null;
  subjectCommentid: string | null;
  html: string | null;
  key: string;
};

export type CommentRow = Removal & {
  commentid: string;
  parentid: string | null;
  author: string | null;
  postedAt: Date | null;
  body: string | null;
  hidden: string | null;
  likes: number | null;
};
/** Where a comment was written: the page that shows its thread. */
export type CommentPlace = { subjectKind: "deviation" | "profile" | "status"; subjectId: string; username: string | null };

export type StatusRow = Removal & {
  statusid: string;
  author: string | null;
  body: string | null;
  postedAt: Date | null;
  url: string | null;
  commentsCount: number | null;
  sharedDeviationids: string[];
  isDeleted: boolean;
};

export type WatchItemRow = {
  accountId: number;
  itemid: string;
  ts: Date | null;
  type: string | null;
  by: string | null;
  bucketTotal: number | null;
  deviationids: string[];
  statusid: string | null;
  key: string;
};

export type WorkCard = Removal & {
  deviationid: string;
  title: string | null;
  type: string | null;
  artist: string | null;
  publishedAt: Date | null;
  key: string;
};

export type ReadingRow = Removal & {
  deviationid: string;
  title: string | null;
  type: string | null;
  url: string | null;
  authorUserid: string | null;
  artist: string | null;
  publishedAt: Date | null;
  isDeleted: boolean;
  removedAnswer: Record<string, unknown> | null;
  html: string | null;
  excerpt: string | null;
  bodyFetchedAt: Date | null;
  textDownloadId: string | null;
};

export type ArtistRow = Removal & {
  userid: string;
  username: string;
  type: string | null;
  isDeactivated: boolean;
  realName: string | null;
  tagline: string | null;
  country: string | null;
  bio: string | null;
  joinedAt: Date | null;
  watchers: number | null;
  deviations: number | null;
  profileUrl: string | null;
  key: string;
};
export type ArtistListRow = ArtistRow & { works: number };
export type ArtistFolderRow = Removal & { kind: "gallery" | "collection"; folderid: string; parent: string | null; name: string | null; size: number | null };
export type NotArchivedRow = Removal & {
  deviationid: string;
  title: string | null;
  reason: "paid" | "watchers_only" | "partial" | null;
  download: string | null;
};
export type ShortfallRow = { source: string; key: string; expected: number; listed: number; recordedAt: Date };

/** The sort key of a list: its time, the undated last. */
const key = (column: string) => `coalesce(${column}, '-infinity'::timestamptz)`;
/** Rows after the cursor ($a key, $b id) in the order key DESC, id DESC. */
const after = (column: string, id: string, a: number, b: number) =>
  `($${a}::timestamptz IS NULL OR (${key(column)}, ${id}) < ($${a}::timestamptz, $${b}::text))`;
const keyExpression = (column: string) =>
  `CASE WHEN ${column} IS NULL THEN '-infinity' ELSE to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') END`;
const keyText = (column: string) => `${keyExpression(column)} AS key`;
/** keyText for the builder: `column` is one of this file's own column names, never a value. */
const keyOf = (column: string) => sql<string>`${sql.raw(keyExpression(column))}`.as("key");
const REMOVAL = (t: string) => `${t}.removed_at AS "removedAt", ${t}.removed_reason::text AS "removedReason"`;

const NOTE_COLUMNS = `n.account_id AS "accountId", a.name AS account, n.noteid, n.folderid, n.ts, n.unread, n.starred, n.sent, n.subject, n.preview,
  n.body, u.username AS sender, n.recipients, ${REMOVAL("n")}, ${keyText("n.ts")}`;

// $1 folder, $2 flag, $3/$4 cursor, $5 limit.
const NOTES = `
SELECT ${NOTE_COLUMNS}
FROM notes n JOIN accounts a ON a.id = n.account_id LEFT JOIN users u ON u.userid = n.sender_userid
WHERE ($1::text IS NULL OR n.folderid = $1::text)
  AND ($2::text IS NULL OR ($2::text = 'sent' AND n.sent) OR ($2::text = 'received' AND NOT coalesce(n.sent, false))
       OR ($2::text = 'unread' AND n.unread) OR ($2::text = 'starred' AND n.starred))
  AND ${after("n.ts", "n.noteid", 3, 4)}
ORDER BY ${key("n.ts")} DESC, n.noteid DESC LIMIT $5`;

// A thread: the notes of the same account whose subject is the same once "Re:" and "Fwd:" are taken off, written by
// the first note's sender or to them, oldest first. SUBJECT is notes_thread_idx's expression (migration
// 20261128192408_notes_thread_index): kept the same, the thread is read from that index instead of every note.
const SUBJECT = (t: string) => `regexp_replace(lower(coalesce(${t}.subject, '')), '^\\s*((re|fwd?)\\s*:\\s*)+', '')`;
export const NOTE_THREAD = `
WITH first AS (SELECT * FROM notes WHERE noteid = $1 ORDER BY account_id LIMIT 1)
SELECT ${NOTE_COLUMNS}
FROM first f JOIN notes n ON n.account_id = f.account_id
JOIN accounts a ON a.id = n.account_id LEFT JOIN users u ON u.userid = n.sender_userid
WHERE ${SUBJECT("n")} = ${SUBJECT("f")}
  AND (n.noteid = f.noteid OR n.sender_userid = f.sender_userid
       OR n.recipients @> jsonb_build_array(jsonb_build_object('userid', f.sender_userid))
       OR f.recipients @> jsonb_build_array(jsonb_build_object('userid', n.sender_userid)))
ORDER BY ${key("n.ts")}, n.noteid LIMIT 200`;

const MESSAGE_COLUMNS = `m.account_id AS "accountId", m.messageid, m.box::text AS box, m.type, m.ts, m.stackid, m.stack_count AS "stackCount",
  m.is_new AS "isNew", m.orphaned, o.username AS originator, m.subject_kind::text AS "subjectKind", m.subject_deviationid AS "subjectDeviationid",
  d.title AS "subjectTitle", su.username AS "subjectUser", m.subject_statusid AS "subjectStatusid", m.subject_commentid AS "subjectCommentid",
  m.html, ${REMOVAL("m")}, ${keyText("m.ts")}`;
const MESSAGE_FROM = `messages m LEFT JOIN users o ON o.userid = m.originator_userid
  LEFT JOIN deviations d ON d.deviationid = m.subject_deviationid LEFT JOIN users su ON su.userid = m.subject_userid`;

// $1 box or null, $2/$3 cursor, $4 limit. A stack shows once, as its newest message (the stack's page lists them all).
const MESSAGES = `
SELECT ${MESSAGE_COLUMNS} FROM ${MESSAGE_FROM}
WHERE ($1::text IS NULL OR m.box::text = $1::text) AND ${after("m.ts", "m.messageid", 2, 3)}
  AND (m.stackid IS NULL OR NOT EXISTS (SELECT 1 FROM messages s WHERE s.stackid = m.stackid
    AND (${key("s.ts")}, s.messageid) > (${key("m.ts")}, m.messageid)))
ORDER BY ${key("m.ts")} DESC, m.messageid DESC LIMIT $4`;
const MESSAGE = `SELECT ${MESSAGE_COLUMNS} FROM ${MESSAGE_FROM} WHERE m.messageid = $1 ORDER BY m.account_id LIMIT 1`;
const STACK = `SELECT ${MESSAGE_COLUMNS} FROM ${MESSAGE_FROM} WHERE m.stackid = $1 ORDER BY ${key("m.ts")} DESC, m.messageid DESC LIMIT $2`;

const COMMENTS = `
SELECT c.commentid, c.parentid, u.username AS author, c.posted_at AS "postedAt", c.body, c.hidden, c.likes, ${REMOVAL("c")}
FROM comments c LEFT JOIN users u ON u.userid = c.author_userid
WHERE c.subject_kind = $1::comment_subject_kind AND c.subject_id = ANY($2::text[])
ORDER BY c.posted_at NULLS LAST, c.commentid LIMIT $3`;
// A status the watch feed carried but the statuses table lacks: the one the feed item holds, as the service gave it
// (by feed_items_statusid_idx; exported for the HTTP test's EXPLAIN).
export const STATUS_IN_FEED = `
SELECT fi.statusid, coalesce(u.username, fi.raw -> 'status' -> 'author' ->> 'username') AS author, fi.raw -> 'status' ->> 'body' AS body,
  fi.ts AS "postedAt", fi.raw -> 'status' ->> 'url' AS url,
  CASE WHEN fi.raw -> 'status' ->> 'comments_count' ~ '^[0-9]{1,9}$' THEN (fi.raw -> 'status' ->> 'comments_count')::int END AS "commentsCount",
  '{}'::text[] AS "sharedDeviationids", coalesce(fi.raw -> 'status' ->> 'is_deleted' = 'true', false) AS "isDeleted", NULL::timestamptz AS "removedAt", NULL::text AS "removedReason"
FROM feed_items fi LEFT JOIN users u ON u.userid = fi.raw -> 'status' -> 'author' ->> 'userid'
WHERE fi.statusid = $1 ORDER BY fi.last_seen_at DESC LIMIT 1`;
const WATCH = `
SELECT fi.account_id AS "accountId", fi.itemid, fi.ts, fi.type, u.username AS by, fi.bucket_total AS "bucketTotal", fi.deviationids, fi.statusid, ${keyText("fi.ts")}
FROM feed_items fi LEFT JOIN users u ON u.userid = fi.by_userid
WHERE ${after("fi.ts", "fi.itemid", 1, 2)}
ORDER BY ${key("fi.ts")} DESC, fi.itemid DESC LIMIT $3`;

const WORK_COLUMNS = `d.deviationid, d.title, d.type::text AS type, u.username AS artist, d.published_at AS "publishedAt", ${REMOVAL("d")}, ${keyText("d.published_at")}`;
// Along deviations_browse_idx's key, for one author (the author index narrows, the key orders).
const WORKS_BY = `
SELECT ${WORK_COLUMNS} FROM deviations d LEFT JOIN users u ON u.userid = d.author_userid
WHERE d.author_userid = $1 AND ${after("d.published_at", "d.deviationid", 2, 3)}
ORDER BY ${key("d.published_at")} DESC, d.deviationid DESC LIMIT $4`;

const READING = `
SELECT d.deviationid, d.title, d.type::text AS type, d.url, d.author_userid AS "authorUserid", u.username AS artist, d.published_at AS "publishedAt",
  d.is_deleted AS "isDeleted", d.removed_answer AS "removedAnswer", ${REMOVAL("d")}, t.html, t.excerpt, t.body_fetched_at AS "bodyFetchedAt",
  (SELECT dl.id::text FROM downloads dl WHERE dl.deviationid = d.deviationid AND dl.kind = 'text' AND dl.path IS NOT NULL LIMIT 1) AS "textDownloadId"
FROM deviations d LEFT JOIN users u ON u.userid = d.author_userid LEFT JOIN deviation_texts t ON t.deviationid = d.deviationid
WHERE d.deviationid = $1`;

// The works of the journal's author whose picture an embedded <img> shows: the service's URL of its content or
// preview, signature (query) left off. Only the author's works are looked at (their index), not the whole archive.
const EMBEDDED = `
SELECT s.src, d.deviationid
FROM unnest($2::text[]) AS s(src)
JOIN deviations d ON d.author_userid = $1
  AND s.src IN (split_part(d.raw -> 'content' ->> 'src', '?', 1), split_part(d.raw -> 'preview' ->> 'src', '?', 1))`;

const ARTIST_COLUMNS = `u.userid, u.username, u.type, u.is_deactivated AS "isDeactivated", u.real_name AS "realName", u.tagline, u.country, u.bio,
  u.joined_at AS "joinedAt", u.watchers, u.deviations, u.profile_raw ->> 'profile_url' AS "profileUrl", ${REMOVAL("u")}, lower(u.username) AS key`;
// Whoever made a work in the archive or is watched: the page's rows only are counted (the author index).
const ARTISTS = `
SELECT ${ARTIST_COLUMNS}, (SELECT count(*)::int FROM deviations d WHERE d.author_userid = u.userid) AS works
FROM users u
WHERE ($1::text IS NULL OR (lower(u.username), u.userid) > ($1::text, $2::text))
  AND (EXISTS (SELECT 1 FROM deviations d WHERE d.author_userid = u.userid)
       OR EXISTS (SELECT 1 FROM watch_relations w WHERE w.userid = u.userid AND w.kind = 'watching'))
ORDER BY lower(u.username), u.userid LIMIT $3`;
const ARTIST_FOLDERS = `
SELECT 'gallery' AS kind, f.folderid, f.parent_folderid AS parent, f.name, f.size, ${REMOVAL("f")}, f.position
FROM gallery_folders f WHERE f.owner_userid = $1
UNION ALL
SELECT 'collection', c.folderid, NULL, c.name, c.size, ${REMOVAL("c")}, c.position
FROM collection_folders c WHERE c.owner_userid = $1
ORDER BY 1 DESC, 7 NULLS LAST, 4 LIMIT 500`;
// The author's works not archived in full: the reasons of src/db/not-archivable.repository.ts, a download that
// failed or is refused, or the work gone upstream.
const NOT_ARCHIVED = `
SELECT * FROM (
  SELECT d.deviationid, d.title, ${REMOVAL("d")},
    CASE
      WHEN d.tier_access = 'locked' OR d.premium -> 'premium_folder_data' ->> 'has_access' = 'false' THEN
        CASE WHEN d.premium -> 'premium_folder_data' ->> 'type' = 'watchers' THEN 'watchers_only' ELSE 'paid' END
      WHEN d.raw ->> 'is_multi_media' = 'true'
        OR EXISTS (SELECT 1 FROM downloads x WHERE x.deviationid = d.deviationid AND x.is_partial AND x.status IN ('done', 'degraded')) THEN 'partial'
    END AS reason,
    (SELECT concat_ws(': ', replace(x.status::text, '_', ' '), coalesce(x.last_error, x.reason, x.degraded_reason))
     FROM downloads x WHERE x.deviationid = d.deviationid AND x.status IN ('failed', 'not_downloadable') ORDER BY x.id LIMIT 1) AS download,
    d.published_at
  FROM deviations d WHERE d.author_userid = $1
) w WHERE w.reason IS NOT NULL OR w.download IS NOT NULL OR w."removedAt" IS NOT NULL
ORDER BY w.published_at DESC NULLS LAST, w.deviationid LIMIT $2`;
/** The lists' statements, for EXPLAIN in tests: each is read along its index (migration 20261128170000_reading_lists_index). */
export const LIST_STATEMENTS = { notes: NOTES, messages: MESSAGES, watch: WATCH } as const;

const cursorArgs = (c: ListCursor | undefined) => [c ? c.key : null, c ? c.id : null];

export class ReadingRepository {
  constructor(private readonly db: Queryable) {}

  private async rows<T>(text: string, values: unknown[]): Promise<T[]> {
    return (await this.db.query<T & Record<string, unknown>>(text, values)).rows;
  }

  async noteFolders(): Promise<NoteFolderRow[]> {
    return kysely(this.db)
      .selectFrom("note_folders as f")
      .innerJoin("accounts as a", "a.id", "f.account_id")
      .select(["f.account_id as accountId", "a.name as account", "f.folderid", "f.title", "f.count"])
      .where("f.removed_at", "is", null)
      .orderBy("a.name")
      .orderBy(sql`f.title NULLS LAST`)
      .orderBy("f.folderid")
      .limit(200)
      .execute();
  }

  /** One page of notes, newest first, after the cursor; one more than `limit` says there is a next page. */
  async notes(filter: NoteFilter, cursor: ListCursor | undefined, limit: number): Promise<NoteRow[]> {
    return this.rows(NOTES, [filter.folder ?? null, filter.flag ?? null, ...cursorArgs(cursor), limit]);
  }

  /** The thread the note is in, oldest first (empty when no note has this id). */
  async noteThread(noteid: string): Promise<NoteRow[]> {
    return this.rows(NOTE_THREAD, [noteid]);
  }

  async messages(box: string | undefined, cursor: ListCursor | undefined, limit: number): Promise<MessageRow[]> {
    return this.rows(MESSAGES, [box ?? null, ...cursorArgs(cursor), limit]);
  }

  async message(messageid: string): Promise<MessageRow | undefined> {
    return (await this.rows<MessageRow>(MESSAGE, [messageid]))[0];
  }

  async stack(stackid: string, limit: number): Promise<MessageRow[]> {
    return this.rows(STACK, [stackid, limit]);
  }

  /** The comments on a subject (any of `ids`: a profile's comments may name it by userid or username), oldest first. */
  async comments(kind: CommentPlace["subjectKind"], ids: string[], limit: number): Promise<CommentRow[]> {
    return this.rows(COMMENTS, [kind, ids, limit]);
  }

  async commentPlace(commentid: string): Promise<CommentPlace | undefined> {
    return kysely(this.db)
      .selectFrom("comments as c")
      .select((eb) => [
        "c.subject_kind as subjectKind",
        "c.subject_id as subjectId",
        eb
          .selectFrom("users as u")
          .select("u.username")
          .where(sql<boolean>`c.subject_kind = 'profile' AND (u.userid = c.subject_id OR lower(u.username) = lower(c.subject_id))`)
          .limit(1)
          .as("username"),
      ])
      .where("c.commentid", "=", commentid)
      .executeTakeFirst();
  }

  /** The status as mirrored, else as the watch feed carried it. */
  async status(statusid: string): Promise<StatusRow | undefined> {
    return (await this.statuses().where("s.statusid", "=", statusid).executeTakeFirst()) ?? (await this.rows<StatusRow>(STATUS_IN_FEED, [statusid]))[0];
  }

  async statusesBy(userid: string, limit: number): Promise<StatusRow[]> {
    return this.statuses().where("s.author_userid", "=", userid).orderBy(sql`s.posted_at DESC NULLS LAST`).orderBy("s.statusid", "desc").limit(limit).execute();
  }

  /** Mirrored statuses with their author's name (STATUS_IN_FEED's columns). */
  private statuses() {
    return kysely(this.db)
      .selectFrom("statuses as s")
      .leftJoin("users as u", "u.userid", "s.author_userid")
      .select((eb) => [
        "s.statusid",
        "u.username as author",
        "s.body",
        "s.posted_at as postedAt",
        "s.url",
        "s.comments_count as commentsCount",
        "s.shared_deviationids as sharedDeviationids",
        "s.is_deleted as isDeleted",
        "s.removed_at as removedAt",
        eb.cast<string | null>("s.removed_reason", "text").as("removedReason"),
      ]);
  }

  async watchFeed(cursor: ListCursor | undefined, limit: number): Promise<WatchItemRow[]> {
    return this.rows(WATCH, [...cursorArgs(cursor), limit]);
  }

  async works(deviationids: readonly string[]): Promise<WorkCard[]> {
    if (deviationids.length === 0) return [];
    return kysely(this.db)
      .selectFrom("deviations as d")
      .leftJoin("users as u", "u.userid", "d.author_userid")
      .select((eb) => [
        "d.deviationid",
        "d.title",
        eb.cast<string | null>("d.type", "text").as("type"),
        "u.username as artist",
        "d.published_at as publishedAt",
        "d.removed_at as removedAt",
        eb.cast<string | null>("d.removed_reason", "text").as("removedReason"),
        keyOf("d.published_at"),
      ])
      .where("d.deviationid", "=", sql<string>`ANY(${deviationids}::text[])`)
      .execute();
  }

  async worksBy(userid: string, cursor: ListCursor | undefined, limit: number): Promise<WorkCard[]> {
    return this.rows(WORKS_BY, [userid, ...cursorArgs(cursor), limit]);
  }

  async reading(deviationid: string): Promise<ReadingRow | undefined> {
    return (await this.rows<ReadingRow>(READING, [deviationid]))[0];
  }

  /** src (without its query) → the author's work that shows it. */
  async embeddedWorks(authorUserid: string, srcs: readonly string[]): Promise<Map<string, string>> {
    if (srcs.length === 0) return new Map();
    const rows = await this.rows<{ src: string; deviationid: string }>(EMBEDDED, [authorUserid, srcs]);
    return new Map(rows.map((r) => [r.src, r.deviationid]));
  }

  async artist(username: string): Promise<ArtistRow | undefined> {
    return kysely(this.db)
      .selectFrom("users as u")
      .select((eb) => [
        "u.userid",
        "u.username",
        "u.type",
        "u.is_deactivated as isDeactivated",
        "u.real_name as realName",
        "u.tagline",
        "u.country",
        "u.bio",
        "u.joined_at as joinedAt",
        "u.watchers",
        "u.deviations",
        sql<string | null>`u.profile_raw ->> 'profile_url'`.as("profileUrl"),
        "u.removed_at as removedAt",
        eb.cast<string | null>("u.removed_reason", "text").as("removedReason"),
        sql<string>`lower(u.username)`.as("key"),
      ])
      .where(sql`lower(u.username)`, "=", sql`lower(${username})`)
      .orderBy(sql`u.removed_at NULLS FIRST`)
      .orderBy("u.last_seen_at", "desc")
      .limit(1)
      .executeTakeFirst();
  }

  async artists(cursor: ListCursor | undefined, limit: number): Promise<ArtistListRow[]> {
    return this.rows(ARTISTS, [...cursorArgs(cursor), limit]);
  }

  async artistFolders(userid: string): Promise<ArtistFolderRow[]> {
    return this.rows(ARTIST_FOLDERS, [userid]);
  }

  async notArchived(userid: string, limit: number): Promise<NotArchivedRow[]> {
    return this.rows(NOT_ARCHIVED, [userid, limit]);
  }

  async shortfalls(userid: string): Promise<ShortfallRow[]> {
    return kysely(this.db)
      .selectFrom("listing_shortfalls")
      .select(["source", "key", "expected", "listed", "recorded_at as recordedAt"])
      .where("artist_userid", "=", userid)
      .orderBy("source")
      .orderBy("key")
      .execute();
  }
}
