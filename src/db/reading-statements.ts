// The reading pages' statements and their rows (src/db/reading.repository.ts runs them), typed from the tables the
// columns come from (src/db/schema.ts). Each is an sql-tag statement with its values bound; the lists, a note's
// thread and a status the feed carried are exported so that tests compile them and EXPLAIN what runs
// (test/http/reading-pages.test.ts).
import { sql } from "./kysely.ts";
import type { FolderKind, Row } from "./schema.ts";

/** Where a list resumes: the last row's sort key (an ISO time, or "-infinity" for an undated row) and its id. */
export type ListCursor = { key: string; id: string };

type Note = Row<"notes">;
type Message = Row<"messages">;
type Comment = Row<"comments">;
type Status = Row<"statuses">;
type Deviation = Row<"deviations">;
type User = Row<"users">;
type Username = User["username"];
/** The statements' `key` column: the sort key as text (keyText), or the lowercased name of an artist. */
type Key = { key: string };

/** removed_at, and removed_reason as text. */
export type Removal = { removedAt: Deviation["removed_at"]; removedReason: Deviation["removed_reason"] | null };

export type NoteFolderRow = { accountId: Row<"note_folders">["account_id"]; account: Row<"accounts">["name"] } & Pick<
  Row<"note_folders">,
  "folderid" | "title" | "count"
>;
export type NoteRow = Removal &
  Key &
  Pick<Note, "noteid" | "folderid" | "ts" | "unread" | "starred" | "sent" | "subject" | "preview" | "body"> & {
    accountId: Note["account_id"];
    account: Row<"accounts">["name"];
    sender: Username | null;
    /** The service's recipients (jsonb, as received: the schema says no more than JSON), each named as a user is. */
    recipients: Array<Partial<Pick<User, "userid" | "username">>> | null;
  };
export type NoteFilter = { folder?: string | undefined; flag?: "sent" | "received" | "unread" | "starred" | undefined };

export type MessageRow = Removal &
  Key &
  Pick<Message, "messageid" | "type" | "ts" | "stackid" | "orphaned" | "html"> & {
    accountId: Message["account_id"];
    box: Message["box"];
    stackCount: Message["stack_count"];
    isNew: Message["is_new"];
    originator: Username | null;
    subjectKind: Message["subject_kind"];
    subjectDeviationid: Message["subject_deviationid"];
    subjectTitle: Deviation["title"];
    subjectUser: Username | null;
    subjectStatusid: Message["subject_statusid"];
    subjectCommentid: Message["subject_commentid"];
  };

export type CommentRow = Removal &
  Pick<Comment, "commentid" | "parentid" | "body" | "hidden" | "likes"> & { author: Username | null; postedAt: Comment["posted_at"] };
/** Where a comment was written: the page that shows its thread. */
export type CommentPlace = { subjectKind: Comment["subject_kind"]; subjectId: Comment["subject_id"]; username: Username | null };

export type StatusRow = Removal &
  Pick<Status, "statusid" | "body" | "url"> & {
    author: Username | null;
    postedAt: Status["posted_at"];
    commentsCount: Status["comments_count"];
    sharedDeviationids: Status["shared_deviationids"];
    isDeleted: Status["is_deleted"];
  };

export type WatchItemRow = Key &
  Pick<Row<"feed_items">, "itemid" | "ts" | "type" | "deviationids" | "statusid"> & {
    accountId: Row<"feed_items">["account_id"];
    by: Username | null;
    bucketTotal: Row<"feed_items">["bucket_total"];
  };

export type WorkCard = Removal & Key & Pick<Deviation, "deviationid" | "title" | "type"> & { artist: Username | null; publishedAt: Deviation["published_at"] };

export type ReadingRow = Removal &
  Pick<Deviation, "deviationid" | "title" | "type" | "url"> &
  Pick<Row<"deviation_texts">, "html" | "excerpt"> & {
    authorUserid: Deviation["author_userid"];
    artist: Username | null;
    publishedAt: Deviation["published_at"];
    isDeleted: Deviation["is_deleted"];
    /** The service's refusal as received (jsonb). */
    removedAnswer: Record<string, unknown> | null;
    bodyFetchedAt: Row<"deviation_texts">["body_fetched_at"];
    /** The text download's id (bigint) as text. */
    textDownloadId: Row<"downloads">["id"] | null;
  };

export type ArtistRow = Removal &
  Key &
  Pick<User, "userid" | "username" | "type" | "tagline" | "country" | "bio" | "watchers" | "deviations"> & {
    isDeactivated: User["is_deactivated"];
    realName: User["real_name"];
    joinedAt: User["joined_at"];
    profileUrl: string | null;
  };
export type ArtistListRow = ArtistRow & { works: number };
export type ArtistFolderRow = Removal &
  Pick<Row<"gallery_folders">, "folderid" | "name" | "size"> & { kind: FolderKind; parent: Row<"gallery_folders">["parent_folderid"] };
export type NotArchivedRow = Removal &
  Pick<Deviation, "deviationid" | "title"> & {
    reason: "paid" | "watchers_only" | "partial" | null;
    /** The first failed or refused download: its status and why. */
    download: string | null;
  };
export type ShortfallRow = Pick<Row<"listing_shortfalls">, "source" | "key" | "expected" | "listed"> & {
  recordedAt: Row<"listing_shortfalls">["recorded_at"];
};

const cursorArgs = (c: ListCursor | undefined) => [c ? c.key : null, c ? c.id : null];

/** The sort key of a list: its time, the undated last. */
/** Where an undated row sorts: last of a list newest first ('-infinity'), or of one oldest first ('infinity'). */
type Undated = "-infinity" | "infinity";
const key = (column: string, undated: Undated = "-infinity") => `coalesce(${column}, '${undated}'::timestamptz)`;
/** Rows after the cursor (its key and id bound) in the order key DESC, id DESC. */
const afterCursor = (column: string, id: string, c: ListCursor | undefined) => {
  const [k, i] = cursorArgs(c);
  return sql`(${k}::timestamptz IS NULL OR (${sql.raw(key(column))}, ${sql.raw(id)}) < (${k}::timestamptz, ${i}::text))`;
};
const keyExpression = (column: string, undated: Undated = "-infinity") =>
  `CASE WHEN ${column} IS NULL THEN '${undated}' ELSE to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') END`;
const keyText = (column: string) => `${keyExpression(column)} AS key`;
/** keyText for the builder: `column` is one of this file's own column names, never a value. */
export const keyOf = (column: string) => sql<string>`${sql.raw(keyExpression(column))}`.as("key");
const REMOVAL = (t: string) => `${t}.removed_at AS "removedAt", ${t}.removed_reason::text AS "removedReason"`;

const NOTE_COLUMNS = `n.account_id AS "accountId", a.name AS account, n.noteid, n.folderid, n.ts, n.unread, n.starred, n.sent, n.subject, n.preview,
  n.body, u.username AS sender, n.recipients, ${REMOVAL("n")}, ${keyText("n.ts")}`;

export const NOTES = (filter: NoteFilter, cursor: ListCursor | undefined, limit: number) => {
  const [folder, flag] = [filter.folder ?? null, filter.flag ?? null];
  return sql<NoteRow>`
SELECT ${sql.raw(NOTE_COLUMNS)}
FROM notes n JOIN accounts a ON a.id = n.account_id LEFT JOIN users u ON u.userid = n.sender_userid
WHERE (${folder}::text IS NULL OR n.folderid = ${folder}::text)
  AND (${flag}::text IS NULL OR (${flag}::text = 'sent' AND n.sent) OR (${flag}::text = 'received' AND NOT coalesce(n.sent, false))
       OR (${flag}::text = 'unread' AND n.unread) OR (${flag}::text = 'starred' AND n.starred))
  AND ${afterCursor("n.ts", "n.noteid", cursor)}
ORDER BY ${sql.raw(key("n.ts"))} DESC, n.noteid DESC LIMIT ${limit}`;
};

// A thread: the notes of the same account whose subject is the same once "Re:" and "Fwd:" are taken off, written by
// the first note's sender or to them, oldest first. SUBJECT is notes_thread_idx's expression (migration
// 20261128192408_notes_thread_index): kept the same, the thread is read from that index instead of every note.
const SUBJECT = (t: string) => `regexp_replace(lower(coalesce(${t}.subject, '')), '^\\s*((re|fwd?)\\s*:\\s*)+', '')`;
export const NOTE_THREAD = (noteid: string) => sql<NoteRow>`
WITH first AS (SELECT * FROM notes WHERE noteid = ${noteid} ORDER BY account_id LIMIT 1)
SELECT ${sql.raw(NOTE_COLUMNS)}
FROM first f JOIN notes n ON n.account_id = f.account_id
JOIN accounts a ON a.id = n.account_id LEFT JOIN users u ON u.userid = n.sender_userid
WHERE ${sql.raw(SUBJECT("n"))} = ${sql.raw(SUBJECT("f"))}
  AND (n.noteid = f.noteid OR n.sender_userid = f.sender_userid
       OR n.recipients @> jsonb_build_array(jsonb_build_object('userid', f.sender_userid))
       OR f.recipients @> jsonb_build_array(jsonb_build_object('userid', n.sender_userid)))
ORDER BY ${sql.raw(key("n.ts"))}, n.noteid LIMIT 200`;

const MESSAGE_COLUMNS = `m.account_id AS "accountId", m.messageid, m.box::text AS box, m.type, m.ts, m.stackid, m.stack_count AS "stackCount",
  m.is_new AS "isNew", m.orphaned, o.username AS originator, m.subject_kind::text AS "subjectKind", m.subject_deviationid AS "subjectDeviationid",
  d.title AS "subjectTitle", su.username AS "subjectUser", m.subject_statusid AS "subjectStatusid", m.subject_commentid AS "subjectCommentid",
  m.html, ${REMOVAL("m")}, ${keyText("m.ts")}`;
const MESSAGE_FROM = `messages m LEFT JOIN users o ON o.userid = m.originator_userid
  LEFT JOIN deviations d ON d.deviationid = m.subject_deviationid LEFT JOIN users su ON su.userid = m.subject_userid`;

// In one box or all. A stack shows once, as its newest message (the stack's page lists them all).
export const MESSAGES = (box: string | undefined, cursor: ListCursor | undefined, limit: number) => sql<MessageRow>`
SELECT ${sql.raw(MESSAGE_COLUMNS)} FROM ${sql.raw(MESSAGE_FROM)}
WHERE (${box ?? null}::text IS NULL OR m.box::text = ${box ?? null}::text) AND ${afterCursor("m.ts", "m.messageid", cursor)}
  AND (m.stackid IS NULL OR NOT EXISTS (SELECT 1 FROM messages s WHERE s.stackid = m.stackid
    AND (${sql.raw(key("s.ts"))}, s.messageid) > (${sql.raw(key("m.ts"))}, m.messageid)))
ORDER BY ${sql.raw(key("m.ts"))} DESC, m.messageid DESC LIMIT ${limit}`;
export const MESSAGE = (messageid: string) =>
  sql<MessageRow>`SELECT ${sql.raw(MESSAGE_COLUMNS)} FROM ${sql.raw(MESSAGE_FROM)} WHERE m.messageid = ${messageid} ORDER BY m.account_id LIMIT 1`;
export const STACK = (stackid: string, limit: number) =>
  sql<MessageRow>`SELECT ${sql.raw(MESSAGE_COLUMNS)} FROM ${sql.raw(MESSAGE_FROM)} WHERE m.stackid = ${stackid} ORDER BY ${sql.raw(key("m.ts"))} DESC, m.messageid DESC LIMIT ${limit}`;

// A subject's comments oldest first, the undated last: the key is the time, 'infinity' for none (cursor text
// "infinity"), and a page starts at its cursor's comment (inclusive, so a link can open a thread at one comment).
const COMMENT_KEY = key("c.posted_at", "infinity");
const COMMENT_KEY_TEXT = keyExpression("c.posted_at", "infinity");
const ofSubject = (kind: CommentPlace["subjectKind"], ids: string[]) =>
  sql`c.subject_kind = ${kind}::comment_subject_kind AND c.subject_id = ANY(${ids}::text[])`;
export const COMMENTS = (kind: CommentPlace["subjectKind"], ids: string[], from: ListCursor | undefined, limit: number) => sql<CommentRow & { key: string }>`
SELECT c.commentid, c.parentid, u.username AS author, c.posted_at AS "postedAt", c.body, c.hidden, c.likes, ${sql.raw(REMOVAL("c"))},
  ${sql.raw(COMMENT_KEY_TEXT)} AS key
FROM comments c LEFT JOIN users u ON u.userid = c.author_userid
WHERE ${ofSubject(kind, ids)}
  AND (${from?.key ?? null}::timestamptz IS NULL OR (${sql.raw(COMMENT_KEY)}, c.commentid) >= (${from?.key ?? null}::timestamptz, ${from?.id ?? null}::text))
ORDER BY ${sql.raw(COMMENT_KEY)}, c.commentid LIMIT ${limit}`;
/** How many comments a subject has, and how many come before a page's first (its cursor): where the page stands. */
export const COMMENT_COUNTS = (kind: CommentPlace["subjectKind"], ids: string[], from: ListCursor | undefined) => sql<{ total: number; before: number }>`
SELECT count(*)::int AS total,
  count(*) FILTER (WHERE (${sql.raw(COMMENT_KEY)}, c.commentid) < (${from?.key ?? null}::timestamptz, ${from?.id ?? null}::text))::int AS before
FROM comments c WHERE ${ofSubject(kind, ids)}`;
/** One comment's cursor: a comments page that starts at it. */
export const COMMENT_CURSOR = (commentid: string) => sql<Pick<Comment, "commentid"> & { key: string }>`
SELECT ${sql.raw(COMMENT_KEY_TEXT)} AS key, c.commentid FROM comments c WHERE c.commentid = ${commentid}`;
// A status the watch feed carried but the statuses table lacks: the one the feed item holds, as the service gave it
// (by feed_items_statusid_idx; exported for the HTTP test's EXPLAIN).
export const STATUS_IN_FEED = (statusid: string) => sql<StatusRow>`
SELECT fi.statusid, coalesce(u.username, fi.raw -> 'status' -> 'author' ->> 'username') AS author, fi.raw -> 'status' ->> 'body' AS body,
  fi.ts AS "postedAt", fi.raw -> 'status' ->> 'url' AS url,
  CASE WHEN fi.raw -> 'status' ->> 'comments_count' ~ '^[0-9]{1,9}$' THEN (fi.raw -> 'status' ->> 'comments_count')::int END AS "commentsCount",
  '{}'::text[] AS "sharedDeviationids", coalesce(fi.raw -> 'status' ->> 'is_deleted' = 'true', false) AS "isDeleted", NULL::timestamptz AS "removedAt", NULL::text AS "removedReason"
FROM feed_items fi LEFT JOIN users u ON u.userid = fi.raw -> 'status' -> 'author' ->> 'userid'
WHERE fi.statusid = ${statusid} ORDER BY fi.last_seen_at DESC LIMIT 1`;
export const WATCH = (cursor: ListCursor | undefined, limit: number) => sql<WatchItemRow>`
SELECT fi.account_id AS "accountId", fi.itemid, fi.ts, fi.type, u.username AS by, fi.bucket_total AS "bucketTotal", fi.deviationids, fi.statusid, ${sql.raw(keyText("fi.ts"))}
FROM feed_items fi LEFT JOIN users u ON u.userid = fi.by_userid
WHERE ${afterCursor("fi.ts", "fi.itemid", cursor)}
ORDER BY ${sql.raw(key("fi.ts"))} DESC, fi.itemid DESC LIMIT ${limit}`;

const WORK_COLUMNS = `d.deviationid, d.title, d.type::text AS type, u.username AS artist, d.published_at AS "publishedAt", ${REMOVAL("d")}, ${keyText("d.published_at")}`;
// Along deviations_browse_idx's key, for one author (the author index narrows, the key orders).
export const WORKS_BY = (userid: string, cursor: ListCursor | undefined, limit: number) => sql<WorkCard>`
SELECT ${sql.raw(WORK_COLUMNS)} FROM deviations d LEFT JOIN users u ON u.userid = d.author_userid
WHERE d.author_userid = ${userid} AND ${afterCursor("d.published_at", "d.deviationid", cursor)}
ORDER BY ${sql.raw(key("d.published_at"))} DESC, d.deviationid DESC LIMIT ${limit}`;

export const READING = (deviationid: string) => sql<ReadingRow>`
SELECT d.deviationid, d.title, d.type::text AS type, d.url, d.author_userid AS "authorUserid", u.username AS artist, d.published_at AS "publishedAt",
  d.is_deleted AS "isDeleted", d.removed_answer AS "removedAnswer", ${sql.raw(REMOVAL("d"))}, t.html, t.excerpt, t.body_fetched_at AS "bodyFetchedAt",
  (SELECT dl.id::text FROM downloads dl WHERE dl.deviationid = d.deviationid AND dl.kind = 'text' AND dl.path IS NOT NULL LIMIT 1) AS "textDownloadId"
FROM deviations d LEFT JOIN users u ON u.userid = d.author_userid LEFT JOIN deviation_texts t ON t.deviationid = d.deviationid
WHERE d.deviationid = ${deviationid}`;

// The works of the journal's author whose picture an embedded <img> shows: the service's URL of its content or
// preview, signature (query) left off. Only the author's works are looked at (their index), not the whole archive.
export const EMBEDDED = (authorUserid: string, srcs: readonly string[]) => sql<{ src: string } & Pick<Row<"deviations">, "deviationid">>`
SELECT s.src, d.deviationid
FROM unnest(${srcs}::text[]) AS s(src)
JOIN deviations d ON d.author_userid = ${authorUserid}
  AND s.src IN (split_part(d.raw -> 'content' ->> 'src', '?', 1), split_part(d.raw -> 'preview' ->> 'src', '?', 1))`;

const ARTIST_COLUMNS = `u.userid, u.username, u.type, u.is_deactivated AS "isDeactivated", u.real_name AS "realName", u.tagline, u.country, u.bio,
  u.joined_at AS "joinedAt", u.watchers, u.deviations, u.profile_raw ->> 'profile_url' AS "profileUrl", ${REMOVAL("u")}, lower(u.username) AS key`;
// Whoever made a work in the archive or is watched: the page's rows only are counted (the author index).
export const ARTISTS = (cursor: ListCursor | undefined, limit: number) => {
  const [k, i] = cursorArgs(cursor);
  return sql<ArtistListRow>`
SELECT ${sql.raw(ARTIST_COLUMNS)}, (SELECT count(*)::int FROM deviations d WHERE d.author_userid = u.userid) AS works
FROM users u
WHERE (${k}::text IS NULL OR (lower(u.username), u.userid) > (${k}::text, ${i}::text))
  AND (EXISTS (SELECT 1 FROM deviations d WHERE d.author_userid = u.userid)
       OR EXISTS (SELECT 1 FROM watch_relations w WHERE w.userid = u.userid AND w.kind = 'watching'))
ORDER BY lower(u.username), u.userid LIMIT ${limit}`;
};
export const ARTIST_FOLDERS = (userid: string) => sql<ArtistFolderRow>`
SELECT 'gallery' AS kind, f.folderid, f.parent_folderid AS parent, f.name, f.size, ${sql.raw(REMOVAL("f"))}, f.position
FROM gallery_folders f WHERE f.owner_userid = ${userid}
UNION ALL
SELECT 'collection', c.folderid, NULL, c.name, c.size, ${sql.raw(REMOVAL("c"))}, c.position
FROM collection_folders c WHERE c.owner_userid = ${userid}
ORDER BY 1 DESC, 7 NULLS LAST, 4 LIMIT 500`;
// The author's works not archived in full: the reasons of src/db/not-archivable.repository.ts, a download that
// failed or is refused, or the work gone upstream.
export const NOT_ARCHIVED = (userid: string, limit: number) => sql<NotArchivedRow>`
SELECT * FROM (
  SELECT d.deviationid, d.title, ${sql.raw(REMOVAL("d"))},
    CASE
      WHEN d.tier_access = 'locked' OR d.premium -> 'premium_folder_data' ->> 'has_access' = 'false' THEN
        CASE WHEN d.premium -> 'premium_folder_data' ->> 'type' = 'watchers' THEN 'watchers_only' ELSE 'paid' END
      WHEN d.raw ->> 'is_multi_media' = 'true'
        OR EXISTS (SELECT 1 FROM downloads x WHERE x.deviationid = d.deviationid AND x.is_partial AND x.status IN ('done', 'degraded')) THEN 'partial'
    END AS reason,
    (SELECT concat_ws(': ', replace(x.status::text, '_', ' '), coalesce(x.last_error, x.reason, x.degraded_reason))
     FROM downloads x WHERE x.deviationid = d.deviationid AND x.status IN ('failed', 'not_downloadable') ORDER BY x.id LIMIT 1) AS download,
    d.published_at
  FROM deviations d WHERE d.author_userid = ${userid}
) w WHERE w.reason IS NOT NULL OR w.download IS NOT NULL OR w."removedAt" IS NOT NULL
ORDER BY w.published_at DESC NULLS LAST, w.deviationid LIMIT ${limit}`;
/** The lists' statements, for EXPLAIN in tests (compiled with their values): each is read along its index (migration 20261128170000_reading_lists_index). */
export const LIST_STATEMENTS = { notes: NOTES, messages: MESSAGES, watch: WATCH } as const;
