// Notes and note folders of an account. Keyed per account: a note between two archived accounts is in
// both mirrors.
import type { NoteFolderInput, NoteInput } from "./mirror-input.ts";
import { intOrNull, isoTime, uniqueBy, type UpsertCounts } from "./mirror-rows.ts";
import { sql } from "./kysely.ts";
import { seenAgain, upsertPage } from "./upsert-page.ts";
import type { Queryable } from "./with-transaction.ts";

export class NoteRepository {
  constructor(private readonly db: Queryable) {}

  /**
   * Records a page of the notes of folder `folderid` (a note moved between folders follows). `changed`
   * counts notes whose folder, read or starred state changed, and notes that came back.
   */
  async upsertNotes(accountId: number, folderid: string | null, notes: readonly NoteInput[], seenAt: Date): Promise<UpsertCounts> {
    const rows = uniqueBy(notes, (n) => n.noteid).map((n) => ({
      noteid: n.noteid,
      ts: isoTime(n.ts),
      unread: n.unread ?? null,
      starred: n.starred ?? null,
      sent: n.sent ?? null,
      subject: n.subject ?? null,
      preview: n.preview ?? null,
      body: n.body ?? null,
      sender_userid: n.user?.userid ?? null,
      recipients: n.recipients ? n.recipients.map((r) => ({ userid: r.userid, username: r.username })) : null,
      raw: n,
    }));
    if (rows.length === 0) return { inserted: 0, changed: 0, unchanged: 0 };
    return upsertPage(this.db, {
      rows,
      columns: sql`noteid text, ts timestamptz, unread boolean, starred boolean, sent boolean, subject text, preview text, body text, sender_userid text, recipients jsonb, raw jsonb`,
      before: sql`
        old AS (
          SELECT n.noteid, n.folderid, n.unread, n.starred, n.removed_at
          FROM notes n JOIN input USING (noteid) WHERE n.account_id = ${accountId}
        )`,
      upsert: sql`
        INSERT INTO notes AS n (account_id, noteid, folderid, ts, unread, starred, sent, subject, preview, body,
          sender_userid, recipients, raw, first_seen_at, last_seen_at)
        SELECT ${accountId}, noteid, ${folderid}, ts, unread, starred, sent, subject, preview, body, sender_userid, recipients, raw, ${seenAt}, ${seenAt}
        FROM input ORDER BY noteid
        ON CONFLICT (account_id, noteid) DO UPDATE SET
          folderid = COALESCE(EXCLUDED.folderid, n.folderid),
          ts = COALESCE(EXCLUDED.ts, n.ts),
          unread = COALESCE(EXCLUDED.unread, n.unread),
          starred = COALESCE(EXCLUDED.starred, n.starred),
          sent = COALESCE(EXCLUDED.sent, n.sent),
          subject = COALESCE(EXCLUDED.subject, n.subject),
          preview = COALESCE(EXCLUDED.preview, n.preview),
          body = COALESCE(EXCLUDED.body, n.body),
          sender_userid = COALESCE(EXCLUDED.sender_userid, n.sender_userid),
          recipients = COALESCE(EXCLUDED.recipients, n.recipients),
          raw = EXCLUDED.raw,
          ${seenAgain("n")}
        RETURNING n.noteid, (n.xmax = 0) AS inserted`,
      using: ["noteid"],
      changed: sql`o.removed_at IS NOT NULL OR (${folderid}::text IS NOT NULL AND o.folderid IS DISTINCT FROM ${folderid}::text) OR (i.unread IS NOT NULL AND o.unread IS DISTINCT FROM i.unread) OR (i.starred IS NOT NULL AND o.starred IS DISTINCT FROM i.starred)`,
    });
  }

  /** After a complete walk of a folder started at `sweepStartedAt`: its notes not seen since are removed. */
  async markMissingNotesRemoved(accountId: number, folderid: string, sweepStartedAt: Date, at: Date = new Date()): Promise<number> {
    const result = await this.db.query(MARK_MISSING_NOTES, [accountId, folderid, sweepStartedAt, at]);
    return result.rowCount ?? 0;
  }

  /**
   * After a complete sweep of every folder in `listed` started at `sweepStartedAt`: the notes of folders no longer
   * listed (removed upstream with their notes) that no walk met since are removed.
   */
  async markNotesOfUnlistedFoldersRemoved(accountId: number, listed: readonly string[], sweepStartedAt: Date, at: Date = new Date()): Promise<number> {
    const result = await this.db.query(MARK_NOTES_OF_UNLISTED_FOLDERS, [accountId, [...listed], sweepStartedAt, at]);
    return result.rowCount ?? 0;
  }

  /** Note folders missing from the complete folder list `listed` are removed; a listed one seen again comes back (upsertNoteFolders). */
  async markNoteFoldersRemoved(accountId: number, listed: readonly string[], at: Date = new Date()): Promise<number> {
    const result = await this.db.query(MARK_UNLISTED_NOTE_FOLDERS, [accountId, [...listed], at]);
    return result.rowCount ?? 0;
  }

  /** Records the note folder list (`folder` or `folderid`, count as a string). */
  async upsertNoteFolders(accountId: number, folders: readonly NoteFolderInput[], seenAt: Date): Promise<UpsertCounts> {
    const rows = uniqueBy(
      folders.flatMap((f) => {
        const folderid = f.folderid ?? f.folder;
        return folderid ? [{ folderid, parentid: f.parentid ?? null, title: f.title ?? null, count: intOrNull(f.count), raw: f }] : [];
      }),
      (r) => r.folderid,
    );
    if (rows.length === 0) return { inserted: 0, changed: 0, unchanged: 0 };
    return upsertPage(this.db, {
      rows,
      columns: sql`folderid text, parentid text, title text, count integer, raw jsonb`,
      before: sql`
        old AS (
          SELECT f.folderid, f.parentid, f.title, f.removed_at FROM note_folders f JOIN input USING (folderid) WHERE f.account_id = ${accountId}
        )`,
      upsert: sql`
        INSERT INTO note_folders AS f (account_id, folderid, parentid, title, count, raw, first_seen_at, last_seen_at)
        SELECT ${accountId}, folderid, parentid, title, count, raw, ${seenAt}, ${seenAt} FROM input ORDER BY folderid
        ON CONFLICT (account_id, folderid) DO UPDATE SET
          parentid = EXCLUDED.parentid,
          title = COALESCE(EXCLUDED.title, f.title),
          count = COALESCE(EXCLUDED.count, f.count),
          raw = EXCLUDED.raw,
          ${seenAgain("f")}
        RETURNING f.folderid, (f.xmax = 0) AS inserted`,
      using: ["folderid"],
      changed: sql`o.removed_at IS NOT NULL OR o.parentid IS DISTINCT FROM i.parentid OR (i.title IS NOT NULL AND o.title IS DISTINCT FROM i.title)`,
    });
  }
}

const MARK_MISSING_NOTES = `
UPDATE notes SET removed_at = $4, removed_reason = 'gone_from_listing'
WHERE account_id = $1 AND folderid = $2 AND last_seen_at < $3 AND removed_at IS NULL`;

const MARK_NOTES_OF_UNLISTED_FOLDERS = `
UPDATE notes SET removed_at = $4, removed_reason = 'gone_from_listing'
WHERE account_id = $1 AND (folderid IS NULL OR folderid <> ALL($2::text[])) AND last_seen_at < $3 AND removed_at IS NULL`;

const MARK_UNLISTED_NOTE_FOLDERS = `
UPDATE note_folders SET removed_at = $3, removed_reason = 'gone_from_listing'
WHERE account_id = $1 AND folderid <> ALL($2::text[]) AND removed_at IS NULL`;
