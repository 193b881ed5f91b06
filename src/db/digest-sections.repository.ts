// The read model of a digest (src/digest/collect.ts): one query per section over the mirror. "New" means new
// to dvault: a row's first_seen_at in the window (start, end], and after the baseline of the source that
// brings such rows in (digest_baselines: what the initial full sync brought is not news). Rows come back
// as the database returns them; collect.ts turns them into the digest's items. The plain reads are Kysely's
// builder; the sections (window functions, CTEs, correlated subqueries) are `sql` statements whose rows are
// composed from src/db/schema.ts (docs/ARCHITECTURE.md#converting-a-repository).
import { kysely, type RawBuilder, sql } from "./kysely.ts";
import type { Row } from "./schema.ts";
import type { Queryable } from "./with-transaction.ts";

/** The most items a section lists (its total is counted over all of them). */
const LIMITS = { faves: 30, comments: 30, mentions: 30, notes: 30, deviations: 48, changes: 50, watchers: 60 };

/** (start, end]: what dvault first saw after `start` and up to `end`. */
export type DigestSectionWindow = { start: Date; end: Date };

type Deviation = Row<"deviations">;
/** The account a row belongs to, by its local name. */
type OfAccount = { account: Row<"accounts">["name"] };
/** `count(...) OVER ()::int`: every row of the section, not only the LIMIT shown. */
type Total = { total: number };

/** The columns of a deviation a section refers to (all null when it refers to none). */
export type DevColumns = {
  dev_id: Deviation["deviationid"] | null;
  dev_title: Deviation["title"];
  dev_url: Deviation["url"];
  /** sha256 of the deviation's stored file (its original, else a rendition), when the archive has one. */
  dev_sha256: Row<"downloads">["sha256"];
  /** Computed by ARCHIVED below. */
  dev_archived: "original" | "reduced" | null;
  dev_mature: Deviation["is_mature"];
  dev_removed: Deviation["removed_reason"];
};

export type AccountRowDb = Pick<Row<"accounts">, "name" | "username"> & { sources: number; baselines: number };
export type FaveRowDb = DevColumns &
  OfAccount & {
    people: number;
    names: Row<"users">["username"][] | null;
    latest_at: Row<"messages">["ts"];
    total_people: number;
    total_works: number;
  };
export type CommentRowDb = DevColumns &
  OfAccount &
  Total &
  Pick<Row<"messages">, "type" | "ts"> & { author: Row<"users">["username"] | null; body: Row<"comments">["body"] };
export type WatcherRowDb = OfAccount & Total & Pick<Row<"users">, "username" | "usericon"> & { at: Row<"messages">["first_seen_at"] };
export type MentionRowDb = DevColumns &
  OfAccount &
  Total &
  Pick<Row<"messages">, "type" | "ts"> & { by: Row<"users">["username"] | null; body: Row<"comments">["body"] };
export type NoteRowDb = OfAccount & Total & Pick<Row<"notes">, "noteid" | "subject" | "preview" | "body" | "ts"> & { sender: Row<"users">["username"] | null };
export type NewDeviationRowDb = DevColumns & OfAccount & Total & Pick<Deviation, "published_at" | "type"> & { artist: Row<"users">["username"] | null };
export type ChangeRowDb = DevColumns &
  OfAccount & {
    kind: "artist_unavailable" | "favourite_removed" | "work_removed";
    username: Row<"users">["username"] | null;
    reason: Deviation["removed_reason"];
    at: NonNullable<Deviation["removed_at"]>;
    /** How the account knows the artist or the work (computed per branch). */
    relation: "watching" | "tracked" | "favourites" | "own" | null;
    works: number | null;
  };
export type AccountHealthRowDb = Awaited<ReturnType<DigestSectionsRepository["listAccountHealth"]>>[number];
export type SourceHealthRowDb = Awaited<ReturnType<DigestSectionsRepository["listSourceHealth"]>>[number];
export type OtherRowDb = OfAccount & {
  box: Row<"messages">["box"];
  type: NonNullable<Row<"messages">["type"]>;
  count: number;
  latest_at: Row<"messages">["ts"];
};
export type OpenAlertRowDb = Awaited<ReturnType<DigestSectionsRepository["listOpenAlerts"]>>[number];

/** What a source's gaps hold, as far as the digest reads them (sync_sources.gaps, jsonb). */
type Gaps = Record<string, { reason?: string }>;

const count = sql<number>`count(*)::int`;

export class DigestSectionsRepository {
  constructor(private readonly db: Queryable) {}

  private async rows<R>(statement: RawBuilder<R>): Promise<R[]> {
    return (await statement.execute(kysely(this.db))).rows;
  }

  /** User accounts, with how many digest sources they sync and how many of those have a baseline. */
  listAccounts(): Promise<AccountRowDb[]> {
    return this.rows(sql<AccountRowDb>`
      SELECT a.name, a.username,
        (SELECT count(DISTINCT s.source) FROM sync_sources s WHERE s.account_id = a.id AND s.source = ANY('{messages,notes,watch_feed,profile,collections}'))::int AS sources,
        (SELECT count(*) FROM digest_baselines b WHERE b.account_id = a.id)::int AS baselines
      FROM accounts a WHERE a.kind = 'user' ORDER BY a.name`);
  }

  /** Favourites new in the window, one group per deviation. */
  listFaves(w: DigestSectionWindow): Promise<FaveRowDb[]> {
    // total_people and total_works count every faved work of the window, not only the LIMIT shown (window
    // functions run before LIMIT): the digest's "N faves" and "…and N more" come from them.
    return this.rows(sql<FaveRowDb>`
      SELECT a.name AS account, count(DISTINCT COALESCE(m.originator_userid, m.messageid))::int AS people,
        (array_agg(DISTINCT u.username ORDER BY u.username) FILTER (WHERE u.username IS NOT NULL))[1:6] AS names,
        max(m.ts) AS latest_at, (sum(count(DISTINCT COALESCE(m.originator_userid, m.messageid))) OVER ())::int AS total_people,
        count(*) OVER ()::int AS total_works, ${DEV("d")}
      FROM ${FROM_MESSAGES}
      LEFT JOIN deviations d ON d.deviationid = m.subject_deviationid
      WHERE m.box = 'feedback' AND ${FAVE} AND ${NEW("m", "b", w)}
      GROUP BY a.name, m.subject_deviationid, d.deviationid
      ORDER BY people DESC, latest_at DESC NULLS LAST
      LIMIT ${sql.lit(LIMITS.faves)}`);
  }

  listComments(w: DigestSectionWindow): Promise<CommentRowDb[]> {
    return this.rows(sql<CommentRowDb>`${MESSAGE_ITEMS("author", sql`m.box = 'feedback' AND ${COMMENT}`, LIMITS.comments, w)}`);
  }

  /** New watchers: "watch" notifications and watcher relations first seen in the window, once per user. */
  listWatchers(w: DigestSectionWindow): Promise<WatcherRowDb[]> {
    return this.rows(sql<WatcherRowDb>`
      WITH fresh AS (
        SELECT m.account_id, m.originator_userid AS userid, m.first_seen_at AS at
        FROM messages m ${BASELINE("b", "m.account_id", "messages")}
        WHERE ${WATCH} AND m.originator_userid IS NOT NULL AND ${NEW("m", "b", w)}
        UNION ALL
        SELECT w.account_id, w.userid, w.first_seen_at
        FROM watch_relations w ${BASELINE("b", "w.account_id", "profile")}
        WHERE w.kind = 'watcher' AND ${NEW("w", "b", w)}
      )
      SELECT a.name AS account, u.username, u.usericon, min(f.at) AS at, count(*) OVER ()::int AS total
      FROM fresh f JOIN accounts a ON a.id = f.account_id JOIN users u ON u.userid = f.userid
      GROUP BY a.name, u.userid, u.username, u.usericon
      ORDER BY at, u.username
      LIMIT ${sql.lit(LIMITS.watchers)}`);
  }

  /** Notifications of other kinds than faves, comments and watches, counted per box and type. */
  listOtherNotifications(w: DigestSectionWindow): Promise<OtherRowDb[]> {
    return this.rows(sql<OtherRowDb>`
      SELECT a.name AS account, m.box::text AS box, COALESCE(m.type, 'other') AS type, count(*)::int AS count, max(m.ts) AS latest_at
      FROM messages m
      JOIN accounts a ON a.id = m.account_id
      ${BASELINE("b", "m.account_id", "messages")}
      WHERE m.box <> 'mentions' AND NOT (${FAVE} OR ${COMMENT} OR ${WATCH}) AND ${NEW("m", "b", w)}
      GROUP BY a.name, m.box, m.type
      ORDER BY count DESC, type`);
  }

  listMentions(w: DigestSectionWindow): Promise<MentionRowDb[]> {
    return this.rows(sql<MentionRowDb>`${MESSAGE_ITEMS("by", sql`m.box = 'mentions'`, LIMITS.mentions, w)}`);
  }

  /** Unread notes received in the window (not the account's own sent notes). */
  listUnreadNotes(w: DigestSectionWindow): Promise<NoteRowDb[]> {
    return this.rows(sql<NoteRowDb>`
      SELECT a.name AS account, n.noteid, s.username AS sender, n.subject, n.preview, n.body, n.ts,
        count(*) OVER ()::int AS total
      FROM notes n
      JOIN accounts a ON a.id = n.account_id
      ${BASELINE("b", "n.account_id", "notes")}
      LEFT JOIN users s ON s.userid = n.sender_userid
      WHERE n.unread AND n.removed_at IS NULL AND NOT COALESCE(n.sent, false) AND ${NEW("n", "b", w)}
      ORDER BY n.ts DESC NULLS LAST, n.noteid
      LIMIT ${sql.lit(LIMITS.notes)}`);
  }

  /** Unread notes dvault already knew before `start`: still waiting. */
  async countOlderUnread(start: Date): Promise<number> {
    const row = await kysely(this.db)
      .selectFrom("notes as o")
      .select(count.as("n"))
      .where("o.unread", "is", true)
      .where("o.removed_at", "is", null)
      .where((eb) => eb.not(eb.fn.coalesce("o.sent", eb.lit(false))))
      .where("o.first_seen_at", "<=", start)
      .executeTakeFirst();
    return row?.n ?? 0;
  }

  /**
   * New work of watched artists: deviations in watch-feed items new in the window (or new deviations added
   * to a known bucket), and, when the feed is gone and dvault polls the artists' galleries instead, new
   * deviations by artists the account watches (published at most a week before the watch began, so
   * starting to watch someone does not report their whole back catalogue).
   */
  listNewDeviations(w: DigestSectionWindow): Promise<NewDeviationRowDb[]> {
    return this.rows(sql<NewDeviationRowDb>`
      WITH fresh AS (
        SELECT f.account_id, dv AS deviationid
        FROM feed_items f ${BASELINE("b", "f.account_id", "watch_feed")}
        CROSS JOIN LATERAL unnest(f.deviationids) AS dv
        JOIN deviations d ON d.deviationid = dv
        WHERE ${NEW("f", "b", w)} OR ${NEW("d", "b", w)}
        UNION
        SELECT w.account_id, d.deviationid
        FROM watch_relations w ${BASELINE("b", "w.account_id", "watch_feed")}
        JOIN deviations d ON d.author_userid = w.userid
        WHERE w.kind = 'watching' AND w.removed_at IS NULL AND ${NEW("d", "b", w)}
          AND (d.published_at IS NULL OR d.published_at > w.first_seen_at - interval '7 days')
      )
      SELECT a.name AS account, u.username AS artist, d.published_at, d.type::text AS type, count(*) OVER ()::int AS total, ${DEV("d")}
      FROM fresh x
      JOIN accounts a ON a.id = x.account_id
      JOIN deviations d ON d.deviationid = x.deviationid
      LEFT JOIN users u ON u.userid = d.author_userid
      WHERE d.removed_at IS NULL
      ORDER BY d.published_at DESC NULLS LAST, d.deviationid
      LIMIT ${sql.lit(LIMITS.deviations)}`);
  }

  /**
   * Artists of the account (watched, tracked, or the authors of its favourites) that the service answered
   * as suspended, deactivated or not found in the window (docs/service-behaviour.md#user-error-codes), with
   * how many of their works the archive keeps; favourites removed for their own sake (deleted, unavailable,
   * access lost); and the account's own works and its tracked artists' works found deleted or unavailable
   * upstream (docs/service-behaviour.md#deleted-deviation-lookup) after dvault had seen them live. Works
   * hidden with their artist are told once, on the artist's line; a favourite once, as a favourite.
   */
  listChanges(w: DigestSectionWindow): Promise<ChangeRowDb[]> {
    return this.rows(sql<ChangeRowDb>`
      SELECT * FROM (
        SELECT DISTINCT ON (a.name, u.userid) a.name AS account, 'artist_unavailable' AS kind, u.username, u.removed_reason::text AS reason,
          u.removed_at AS at, NULL::text AS dev_id, NULL::text AS dev_title, NULL::text AS dev_url, NULL::boolean AS dev_mature,
          NULL::text AS dev_removed, NULL::text AS dev_sha256, NULL::text AS dev_archived,
          CASE WHEN EXISTS (SELECT 1 FROM watch_relations w WHERE w.account_id = a.id AND w.userid = u.userid AND w.kind = 'watching') THEN 'watching'
               WHEN EXISTS (SELECT 1 FROM tracked_users t WHERE t.account_id = a.id AND t.userid = u.userid AND t.removed_at IS NULL) THEN 'tracked'
               ELSE 'favourites' END AS relation,
          (SELECT count(*) FROM deviations d WHERE d.author_userid = u.userid)::int AS works
        FROM accounts a
        ${BASELINE("b", "a.id", "profile")}
        JOIN users u ON u.removed_reason IN ('artist_suspended', 'artist_deactivated', 'artist_not_found')
        WHERE ${IN_WINDOW("u.removed_at", "b", w)}
          AND (EXISTS (SELECT 1 FROM watch_relations w WHERE w.account_id = a.id AND w.userid = u.userid AND w.kind = 'watching')
            OR EXISTS (SELECT 1 FROM tracked_users t WHERE t.account_id = a.id AND t.userid = u.userid AND t.removed_at IS NULL)
            OR EXISTS (SELECT 1 FROM collection_folders cf JOIN folder_members fm ON fm.kind = 'collection' AND fm.folderid = cf.folderid
                       JOIN deviations d ON d.deviationid = fm.deviationid
                       WHERE cf.owner_userid = a.user_id AND d.author_userid = u.userid))
        UNION ALL
        SELECT DISTINCT ON (a.name, d.deviationid) a.name AS account, 'favourite_removed' AS kind, au.username, d.removed_reason::text AS reason,
          d.removed_at AS at, ${DEV("d")}, NULL::text AS relation, NULL::int AS works
        FROM accounts a
        ${BASELINE("b", "a.id", "collections")}
        JOIN collection_folders cf ON cf.owner_userid = a.user_id
        JOIN folder_members fm ON fm.kind = 'collection' AND fm.folderid = cf.folderid
        JOIN deviations d ON d.deviationid = fm.deviationid
        LEFT JOIN users au ON au.userid = d.author_userid
        WHERE d.removed_reason IN ('deleted', 'unavailable', 'access_lost')
          AND ${IN_WINDOW("d.removed_at", "b", w)}
        UNION ALL
        SELECT a.name AS account, 'work_removed' AS kind, au.username, d.removed_reason::text AS reason,
          d.removed_at AS at, ${DEV("d")}, CASE WHEN d.author_userid = a.user_id THEN 'own' ELSE 'tracked' END AS relation, NULL::int AS works
        FROM accounts a
        JOIN deviations d ON d.author_userid = a.user_id
          OR d.author_userid IN (SELECT t.userid FROM tracked_users t WHERE t.account_id = a.id AND t.removed_at IS NULL)
        LEFT JOIN users au ON au.userid = d.author_userid
        WHERE a.kind = 'user' AND d.removed_reason IN ('deleted', 'unavailable') AND d.removed_at > d.first_seen_at
          AND d.removed_at > ${w.start}::timestamptz AND d.removed_at <= ${w.end}::timestamptz
          AND NOT EXISTS (SELECT 1 FROM collection_folders cf JOIN folder_members fm ON fm.kind = 'collection' AND fm.folderid = cf.folderid
                          WHERE cf.owner_userid = a.user_id AND fm.deviationid = d.deviationid)
      ) x
      ORDER BY at, kind, username
      LIMIT ${sql.lit(LIMITS.changes)}`);
  }

  /** User accounts that need the owner: re-authorization, or a refresh token issued before `oldRefreshBefore` (now - 80 days). */
  listAccountHealth(oldRefreshBefore: Date) {
    return kysely(this.db)
      .selectFrom("accounts")
      .select((eb) => ["name", eb.cast<Row<"accounts">["state"]>("state", "text").as("state"), "state_reason", "state_changed_at", "refresh_issued_at"])
      .where("kind", "=", "user")
      .where((eb) => eb.or([eb("state", "in", ["needs_reauth", "expiring"]), eb.and([eb("state", "=", "ok"), eb("refresh_issued_at", "<", oldRefreshBefore)])]))
      .orderBy("name")
      .execute();
  }

  async listSourceHealth() {
    const rows = await kysely(this.db)
      .selectFrom("sync_sources as s")
      .innerJoin("accounts as a", "a.id", "s.account_id")
      .select((eb) => [
        "a.name as account",
        "s.source",
        "s.key",
        eb.cast<Row<"sync_sources">["last_result"]>("s.last_result", "text").as("last_result"),
        "s.last_error",
        "s.unavailable_reason",
        "s.last_run_at",
        "s.gaps",
      ])
      .where("a.kind", "=", "user")
      .where("a.state", "not in", ["needs_reauth", "revoked"])
      .where((eb) => eb.or([eb("s.last_result", "in", ["failed", "incomplete"]), eb("s.unavailable_reason", "is not", null)]))
      .orderBy("a.name")
      .orderBy("s.source")
      .orderBy("s.key")
      .execute();
    return rows.map((r) => ({ ...r, gaps: r.gaps as Gaps | null }));
  }

  /** Downloads deferred by the weekly allowance, and when the oldest of them was last touched. */
  async countDeferredDownloads(): Promise<{ count: number; oldest: Date | null }> {
    const r = await kysely(this.db)
      .selectFrom("downloads")
      .select((eb) => [count.as("count"), eb.fn.min("updated_at").as("oldest")])
      .where("status", "=", "deferred_quota")
      .executeTakeFirst();
    return { count: r?.count ?? 0, oldest: r?.oldest ?? null };
  }

  /** Unreadable answers of the service seen in the window (kept in unreadable_responses). */
  async countUnreadable(w: DigestSectionWindow): Promise<{ count: number; lastSeenAt: Date | null }> {
    const r = await kysely(this.db)
      .selectFrom("unreadable_responses")
      .select((eb) => [count.as("count"), eb.fn.max("last_seen_at").as("last_seen_at")])
      .where("last_seen_at", ">", w.start)
      .where("last_seen_at", "<=", w.end)
      .executeTakeFirst();
    return { count: r?.count ?? 0, lastSeenAt: r?.last_seen_at ?? null };
  }

  /** Open incidents other sections don't show (accounts and sources have their own lists). */
  listOpenAlerts() {
    return kysely(this.db)
      .selectFrom("alerts")
      .select((eb) => [eb.cast<Row<"alerts">["kind"]>("kind", "text").as("kind"), "subject", "title", "opened_at"])
      .where("resolved_at", "is", null)
      .where("kind", "=", "heartbeat_missing")
      .orderBy("opened_at")
      .execute();
  }
}

/** `at` in the window (start, end] and after baseline `b`'s baseline_at. */
const IN_WINDOW = (at: string, b: string, w: DigestSectionWindow) =>
  sql`${sql.ref(at)} > GREATEST(${w.start}::timestamptz, ${sql.ref(`${b}.baseline_at`)}) AND ${sql.ref(at)} <= ${w.end}::timestamptz`;

/** NEW(x, b, w): x first seen in the window and after b's baseline. */
const NEW = (x: string, b: string, w: DigestSectionWindow) => IN_WINDOW(`${x}.first_seen_at`, b, w);

const BASELINE = (b: string, accountCol: string, source: string) =>
  sql`JOIN digest_baselines ${sql.table(b)} ON ${sql.ref(`${b}.account_id`)} = ${sql.ref(accountCol)} AND ${sql.ref(`${b}.source`)} = ${sql.lit(source)}`;

/**
 * The sha256 of the deviation's stored file, the original before a rendition: the digest shows the archive's
 * own thumbnail of it, never the service's signed CDN URL (which stops working within hours).
 */
const STORED = (d: string) => sql`(SELECT dl.sha256 FROM downloads dl
    WHERE dl.deviationid = ${sql.ref(`${d}.deviationid`)} AND dl.sha256 IS NOT NULL AND dl.path IS NOT NULL
    ORDER BY (dl.status = 'done') DESC, dl.done_at DESC NULLS LAST, dl.id LIMIT 1)`;

/** A stored file of the deviation: "original" when a downloads row is done, "reduced" for a degraded rendition. */
const ARCHIVED = (d: string) => sql`(SELECT CASE WHEN bool_or(dl.status = 'done') THEN 'original' WHEN bool_or(dl.status = 'degraded') THEN 'reduced' END
    FROM downloads dl WHERE dl.deviationid = ${sql.ref(`${d}.deviationid`)})`;

/** DevColumns of deviation `d`. */
const DEV = (d: string) => {
  const col = (c: keyof Deviation) => sql.ref(`${d}.${c}`);
  return sql`${col("deviationid")} AS dev_id, ${col("title")} AS dev_title, ${col("url")} AS dev_url, ${col("is_mature")} AS dev_mature,
    ${col("removed_reason")}::text AS dev_removed, ${STORED(d)} AS dev_sha256, ${ARCHIVED(d)} AS dev_archived`;
};

/** Notifications `m` past their account's baseline `b`, with the account `a` and the user `u` who caused them. */
const FROM_MESSAGES = sql`messages m
  JOIN accounts a ON a.id = m.account_id
  ${BASELINE("b", "m.account_id", "messages")}
  LEFT JOIN users u ON u.userid = m.originator_userid`;

/**
 * Comments or mentions (`which` messages) new in the window, newest first, with who wrote them (as `by`), the
 * comment's body (its comments row, else the message's own copy) and the deviation they are on.
 */
const MESSAGE_ITEMS = (by: "author" | "by", which: RawBuilder<unknown>, limit: number, w: DigestSectionWindow) => sql`
  SELECT a.name AS account, m.type, u.username AS ${sql.ref(by)}, m.ts,
    COALESCE(c.body, m.raw #>> '{comment,body}', m.raw #>> '{subject,comment,body}') AS body,
    count(*) OVER ()::int AS total, ${DEV("d")}
  FROM ${FROM_MESSAGES}
  LEFT JOIN comments c ON c.commentid = m.subject_commentid
  LEFT JOIN deviations d ON d.deviationid = m.subject_deviationid
  WHERE ${which} AND ${NEW("m", "b", w)}
  ORDER BY m.ts DESC NULLS LAST, m.messageid
  LIMIT ${sql.lit(limit)}`;

const FAVE = sql`COALESCE(m.type, '') ~* '^(fav|collect)'`;
const COMMENT = sql`COALESCE(m.type, '') ~* '^(comment|reply)'`;
const WATCH = sql`COALESCE(m.type, '') ~* '^watch'`;
