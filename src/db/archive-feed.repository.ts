// What the Atom feeds read (src/http/feeds/): the newest arrivals of the archive or of one artist, the
// artists a feed is offered for (watched or tracked), and the accounts' notifications (messages and received
// notes). Newest first by dvault's first-seen time, the one date that never moves for an entry.
import { BEST_FILE, type FileRow, fileOf, type StoredFileRef } from "./archive-browser.repository.ts";
import { kysely, sql } from "./kysely.ts";
import type { Row } from "./schema.ts";
import type { Queryable } from "./with-transaction.ts";

export type ArrivalEntry = {
  deviationid: string;
  title: string | null;
  type: string | null;
  artist: string | null;
  publishedAt: Date | null;
  firstSeenAt: Date;
  /** Description (HTML as received) or the excerpt of a journal or literature. */
  summary: string | null;
  file: StoredFileRef | null;
};

/** An artist a feed is offered for, and whether an account watches them, or tracks them, now. */
export type FeedArtist = Pick<Row<"users">, "userid" | "username"> & { watched: boolean; tracked: boolean };

export type NotificationEntry = {
  kind: "message" | "note";
  accountId: number;
  account: string;
  id: string;
  /** The message's type ("fave", "comment", "mention.comment" ...), "note" for a note. */
  type: string | null;
  firstSeenAt: Date;
  actor: string | null;
  /** The deviation a message is about, with its title and stored file. */
  deviationid: string | null;
  subjectTitle: string | null;
  /** A note's subject. */
  subject: string | null;
  /** A message's HTML, a note's body (HTML) or preview. */
  body: string | null;
  file: StoredFileRef | null;
};

type Deviation = Row<"deviations">;
type Username = Row<"users">["username"];

/** A row of newestArrivals' statement: the work, its author's name, its summary and its best file. */
type ArrivalRow = FileRow &
  Pick<Deviation, "deviationid" | "title" | "published_at" | "first_seen_at"> & {
    type: string | null;
    artist: Username | null;
    summary: Row<"deviation_metadata">["description"] | Row<"deviation_texts">["excerpt"];
  };

/** A row of newestNotifications' statement: a message or a received note, with its subject's title and file. */
type NotificationRow = FileRow & {
  entry_kind: NotificationEntry["kind"];
  account_id: Row<"messages">["account_id"] | Row<"notes">["account_id"];
  account: Row<"accounts">["name"];
  id: Row<"messages">["messageid"] | Row<"notes">["noteid"];
  type: Row<"messages">["type"];
  first_seen_at: Row<"messages">["first_seen_at"] | Row<"notes">["first_seen_at"];
  actor: Username | null;
  deviationid: Row<"messages">["subject_deviationid"];
  subject_title: Deviation["title"];
  subject: Row<"notes">["subject"];
  body: Row<"messages">["html"] | Row<"notes">["body"];
};

export class ArchiveFeedRepository {
  constructor(private readonly db: Queryable) {}

  /** The newest deviations dvault has seen, all or one author's (by userid). */
  async newestArrivals({ authorUserid, limit }: { authorUserid?: string | undefined; limit: number }): Promise<ArrivalEntry[]> {
    const author = authorUserid ?? null;
    const { rows } = await sql<ArrivalRow>`SELECT d.deviationid, d.title, d.type::text AS type, u.username AS artist, d.published_at, d.first_seen_at,
         coalesce(nullif(m.description, ''), t.excerpt) AS summary, f.*
       FROM deviations d
       LEFT JOIN users u ON u.userid = d.author_userid
       LEFT JOIN deviation_metadata m ON m.deviationid = d.deviationid
       LEFT JOIN deviation_texts t ON t.deviationid = d.deviationid
       LEFT JOIN LATERAL (${BEST_FILE}) f ON true
       WHERE ${author}::text IS NULL OR d.author_userid = ${author}::text
       ORDER BY d.first_seen_at DESC, d.deviationid DESC
       LIMIT ${limit}`.execute(kysely(this.db));
    return rows.map((r) => ({
      deviationid: r.deviationid,
      title: r.title,
      type: r.type,
      artist: r.artist,
      publishedAt: r.published_at,
      firstSeenAt: r.first_seen_at,
      summary: r.summary,
      file: fileOf(r),
    }));
  }

  /** A user by name, any case (an artist feed's address names them). */
  async userByName(username: string): Promise<{ userid: string; username: string } | null> {
    const row = await kysely(this.db)
      .selectFrom("users")
      .select(["userid", "username"])
      .where(sql`lower(username)`, "=", sql`lower(${username})`)
      .orderBy("last_seen_at", "desc")
      .limit(1)
      .executeTakeFirst();
    return row ?? null;
  }

  /** The artists an account watches or tracks (a live relation), by name. */
  async followedArtists(): Promise<FeedArtist[]> {
    const { rows } = await sql<FeedArtist>`SELECT u.userid, u.username,
         EXISTS (SELECT 1 FROM watch_relations w WHERE w.userid = u.userid AND w.kind = 'watching' AND w.removed_at IS NULL) AS watched,
         EXISTS (SELECT 1 FROM tracked_users t WHERE (t.userid = u.userid OR lower(t.username) = lower(u.username)) AND t.removed_at IS NULL) AS tracked
       FROM users u
       WHERE EXISTS (SELECT 1 FROM watch_relations w WHERE w.userid = u.userid AND w.kind = 'watching' AND w.removed_at IS NULL)
          OR EXISTS (SELECT 1 FROM tracked_users t WHERE (t.userid = u.userid OR lower(t.username) = lower(u.username)) AND t.removed_at IS NULL)
       ORDER BY lower(u.username)`.execute(kysely(this.db));
    return rows;
  }

  /** The accounts' newest notifications: every message (faves, comments, mentions ...) and the notes they received. */
  async newestNotifications({ limit }: { limit: number }): Promise<NotificationEntry[]> {
    const { rows } = await sql<NotificationRow>`SELECT x.*, d.title AS subject_title, f.*
       FROM (
         -- Each kind's newest first, by its own index (messages_first_seen_idx, notes_first_seen_idx), then the
         -- newest of both: the union as a whole has no index, and was read and sorted whole (half a second at
         -- 200 000 messages, bench/archive-scale.ts).
         (SELECT 'message' AS entry_kind, m.account_id, a.name AS account, m.messageid AS id, m.type, m.first_seen_at,
           o.username AS actor, m.subject_deviationid AS deviationid, NULL::text AS subject, m.html AS body
         FROM messages m JOIN accounts a ON a.id = m.account_id LEFT JOIN users o ON o.userid = m.originator_userid
         ORDER BY m.first_seen_at DESC, m.messageid DESC
         LIMIT ${limit})
         UNION ALL
         (SELECT 'note', n.account_id, a.name, n.noteid, 'note', n.first_seen_at, s.username, NULL, n.subject, coalesce(n.body, n.preview)
         FROM notes n JOIN accounts a ON a.id = n.account_id LEFT JOIN users s ON s.userid = n.sender_userid
         WHERE n.sent IS NOT TRUE
         ORDER BY n.first_seen_at DESC, n.noteid DESC
         LIMIT ${limit})
         ORDER BY first_seen_at DESC, id DESC
         LIMIT ${limit}
       ) x
       LEFT JOIN deviations d ON d.deviationid = x.deviationid
       LEFT JOIN LATERAL (${BEST_FILE}) f ON true
       ORDER BY x.first_seen_at DESC, x.id DESC`.execute(kysely(this.db));
    return rows.map((r) => ({
      kind: r.entry_kind,
      accountId: r.account_id,
      account: r.account,
      id: r.id,
      type: r.type,
      firstSeenAt: r.first_seen_at,
      actor: r.actor,
      deviationid: r.deviationid,
      subjectTitle: r.subject_title,
      subject: r.subject,
      body: r.body,
      file: fileOf(r),
    }));
  }
}
