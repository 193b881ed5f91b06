// The reading pages' read model (src/http/pages/reading.ts): notes and their threads, messages and their stacks,
// comments as a tree, statuses, the watch feed, journals' and literature's text, artists with their folders and what
// could not be archived. Read-only; one query per method. Lists are read after a keyset cursor (`after`: the key and
// id of the last row shown), newest first along an index where the table has one, and never counted whole (one
// subject's comments are counted, along their subject's index).
import { kysely, type RawBuilder, sql } from "./kysely.ts";
import {
  ARTIST_FOLDERS,
  ARTISTS,
  type ArtistFolderRow,
  type ArtistListRow,
  type ArtistRow,
  COMMENTS,
  COMMENT_COUNTS,
  COMMENT_CURSOR,
  type CommentPlace,
  type CommentRow,
  EMBEDDED,
  keyOf,
  type ListCursor,
  LIST_STATEMENTS,
  MESSAGE,
  type MessageRow,
  MESSAGES,
  NOT_ARCHIVED,
  type NotArchivedRow,
  NOTE_THREAD,
  type NoteFilter,
  type NoteFolderRow,
  type NoteRow,
  NOTES,
  READING,
  type ReadingRow,
  type ShortfallRow,
  STACK,
  STATUS_IN_FEED,
  type StatusRow,
  WATCH,
  type WatchItemRow,
  type WorkCard,
  WORKS_BY,
} from "./reading-statements.ts";
import type { DeviationType, RemovedReason } from "./schema.ts";
import type { Queryable } from "./with-transaction.ts";

export {
  type ArtistFolderRow,
  type ArtistListRow,
  type ArtistRow,
  type CommentPlace,
  type CommentRow,
  LIST_STATEMENTS,
  type ListCursor,
  type MessageRow,
  type NotArchivedRow,
  NOTE_THREAD,
  type NoteFilter,
  type NoteFolderRow,
  type NoteRow,
  type ReadingRow,
  type ShortfallRow,
  STATUS_IN_FEED,
  type StatusRow,
  type WatchItemRow,
  type WorkCard,
};
export type { Removal } from "./reading-statements.ts";

export class ReadingRepository {
  constructor(private readonly db: Queryable) {}

  private async run<T>(statement: RawBuilder<T>): Promise<T[]> {
    return (await statement.execute(kysely(this.db))).rows;
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
    return this.run(NOTES(filter, cursor, limit));
  }

  /** The thread the note is in, oldest first (empty when no note has this id). */
  async noteThread(noteid: string): Promise<NoteRow[]> {
    return this.run(NOTE_THREAD(noteid));
  }

  async messages(box: string | undefined, cursor: ListCursor | undefined, limit: number): Promise<MessageRow[]> {
    return this.run(MESSAGES(box, cursor, limit));
  }

  async message(messageid: string): Promise<MessageRow | undefined> {
    return (await this.run(MESSAGE(messageid)))[0];
  }

  async stack(stackid: string, limit: number): Promise<MessageRow[]> {
    return this.run(STACK(stackid, limit));
  }

  /** The comments on a subject (any of `ids`: a profile's comments may name it by userid or username), oldest first. */
  async comments(kind: CommentPlace["subjectKind"], ids: string[], from: ListCursor | undefined, limit: number): Promise<Array<CommentRow & { key: string }>> {
    return this.run(COMMENTS(kind, ids, from, limit));
  }

  /** The subject's comments counted, and those before `from` in the thread's order. */
  async commentCounts(kind: CommentPlace["subjectKind"], ids: string[], from: ListCursor | undefined): Promise<{ total: number; before: number }> {
    return (await this.run(COMMENT_COUNTS(kind, ids, from)))[0] ?? { total: 0, before: 0 };
  }

  /** The cursor of a comments page that starts at this comment. */
  async commentCursor(commentid: string): Promise<ListCursor | undefined> {
    const row = (await this.run(COMMENT_CURSOR(commentid)))[0];
    return row && { key: row.key, id: row.commentid };
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
    return (await this.statuses().where("s.statusid", "=", statusid).executeTakeFirst()) ?? (await this.run(STATUS_IN_FEED(statusid)))[0];
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
        eb.cast<RemovedReason | null>("s.removed_reason", "text").as("removedReason"),
      ]);
  }

  async watchFeed(cursor: ListCursor | undefined, limit: number): Promise<WatchItemRow[]> {
    return this.run(WATCH(cursor, limit));
  }

  async works(deviationids: readonly string[]): Promise<WorkCard[]> {
    if (deviationids.length === 0) return [];
    return kysely(this.db)
      .selectFrom("deviations as d")
      .leftJoin("users as u", "u.userid", "d.author_userid")
      .select((eb) => [
        "d.deviationid",
        "d.title",
        eb.cast<DeviationType | null>("d.type", "text").as("type"),
        "u.username as artist",
        "d.published_at as publishedAt",
        "d.removed_at as removedAt",
        eb.cast<RemovedReason | null>("d.removed_reason", "text").as("removedReason"),
        keyOf("d.published_at"),
      ])
      .where("d.deviationid", "=", sql<string>`ANY(${deviationids}::text[])`)
      .execute();
  }

  async worksBy(userid: string, cursor: ListCursor | undefined, limit: number): Promise<WorkCard[]> {
    return this.run(WORKS_BY(userid, cursor, limit));
  }

  async reading(deviationid: string): Promise<ReadingRow | undefined> {
    return (await this.run(READING(deviationid)))[0];
  }

  /** src (without its query) → the author's work that shows it. */
  async embeddedWorks(authorUserid: string, srcs: readonly string[]): Promise<Map<string, string>> {
    if (srcs.length === 0) return new Map();
    const rows = await this.run(EMBEDDED(authorUserid, srcs));
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
        eb.cast<RemovedReason | null>("u.removed_reason", "text").as("removedReason"),
        sql<string>`lower(u.username)`.as("key"),
      ])
      .where(sql`lower(u.username)`, "=", sql`lower(${username})`)
      .orderBy(sql`u.removed_at NULLS FIRST`)
      .orderBy("u.last_seen_at", "desc")
      .limit(1)
      .executeTakeFirst();
  }

  async artists(cursor: ListCursor | undefined, limit: number): Promise<ArtistListRow[]> {
    return this.run(ARTISTS(cursor, limit));
  }

  async artistFolders(userid: string): Promise<ArtistFolderRow[]> {
    return this.run(ARTIST_FOLDERS(userid));
  }

  async notArchived(userid: string, limit: number): Promise<NotArchivedRow[]> {
    return this.run(NOT_ARCHIVED(userid, limit));
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
