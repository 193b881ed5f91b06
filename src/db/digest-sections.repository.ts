// The read model of a digest (src/digest/collect.ts): one query per section over the mirror. "New" means new
// to dvault: a row's first_seen_at in the window (start, end], and after the baseline of the source that
// brings such rows in (digest_baselines: what the initial full sync brought is not news). Rows come back
// as the database returns them; collect.ts turns them into the digest's items.
import type { Queryable } from "./with-transaction.ts";

/** The most items a section lists (its total is counted over all of them). */
const LIMITS = { faves: 30, comments: 30, mentions: 30, notes: 30, deviations: 48, changes: 50, watchers: 60 };

/** (start, end]: what dvault first saw after `start` and up to `end`. */
export type DigestSectionWindow = { start: Date; end: Date };

/** The columns of a deviation a section refers to (all null when it refers to none). */
export type DevColumns = {
  dev_id: string | null;
  dev_title: string | null;
  dev_url: string | null;
  /** sha256 of the deviation's stored file (its original, else a rendition), when the archive has one. */
  dev_sha256: string | null;
  dev_archived: "original" | "reduced" | null;
  dev_mature: boolean | null;
  dev_removed: string | null;
};

export type AccountRowDb = { name: string; username: string | null; sources: number; baselines: number };
export type FaveRowDb = DevColumns & {
  account: string;
  people: number;
  names: string[] | null;
  latest_at: Date | null;
  total_people: number;
  total_works: number;
};
export type CommentRowDb = DevColumns & { account: string; type: string | null; author: string | null; body: string | null; ts: Date | null; total: number };
export type WatcherRowDb = { account: string; username: string; usericon: string | null; at: Date; total: number };
export type OtherRowDb = { account: string; box: string; type: string; count: number; latest_at: Date | null };
export type MentionRowDb = DevColumns & { account: string; type: string | null; by: string | null; body: string | null; ts: Date | null; total: number };
export type NoteRowDb = {
  account: string;
  noteid: string;
  sender: string | null;
  subject: string | null;
  preview: string | null;
  body: string | null;
  ts: Date | null;
  total: number;
};
export type NewDeviationRowDb = DevColumns & { account: string; artist: string | null; published_at: Date | null; type: string | null; total: number };
export type ChangeRowDb = DevColumns & {
  account: string;
  kind: "artist_unavailable" | "favourite_removed" | "work_removed";
  username: string | null;
  reason: string | null;
  at: Date;
  relation: "watching" | "tracked" | "favourites" | "own" | null;
  works: number | null;
};
export type AccountHealthRowDb = { name: string; state: string; state_reason: string | null; state_changed_at: Date | null; refresh_issued_at: Date | null };
export type SourceHealthRowDb = {
  account: string;
  source: string;
  key: string;
  gaps: Record<string, { reason?: string }> | null;
  last_result: string | null;
  last_error: string | null;
  unavailable_reason: string | null;
  last_run_at: Date | null;
};
export type OpenAlertRowDb = { kind: string; subject: string; title: string; opened_at: Date };

export class DigestSectionsRepository {
  constructor(private readonly db: Queryable) {}

  private async rows<R extends object>(text: string, values: unknown[]): Promise<R[]> {
    const { rows } = await this.db.query<R & Record<string, unknown>>(text, values);
    return rows;
  }

  /** User accounts, with how many digest sources they sync and how many of those have a baseline. */
  listAccounts(): Promise<AccountRowDb[]> {
    return this.rows(ACCOUNTS, []);
  }

  /** Favourites new in the window, one group per deviation. */
  listFaves(w: DigestSectionWindow): Promise<FaveRowDb[]> {
    return this.rows(FAVES, [w.start, w.end]);
  }

  listComments(w: DigestSectionWindow): Promise<CommentRowDb[]> {
    return this.rows(COMMENTS, [w.start, w.end]);
  }

  listWatchers(w: DigestSectionWindow): Promise<WatcherRowDb[]> {
    return this.rows(WATCHERS, [w.start, w.end]);
  }

  /** Notifications of other kinds than faves, comments and watches, counted per box and type. */
  listOtherNotifications(w: DigestSectionWindow): Promise<OtherRowDb[]> {
    return this.rows(OTHER_NOTIFICATIONS, [w.start, w.end]);
  }

  listMentions(w: DigestSectionWindow): Promise<MentionRowDb[]> {
    return this.rows(MENTIONS, [w.start, w.end]);
  }

  listUnreadNotes(w: DigestSectionWindow): Promise<NoteRowDb[]> {
    return this.rows(UNREAD_NOTES, [w.start, w.end]);
  }

  /** Unread notes dvault already knew before `start`. */
  async countOlderUnread(start: Date): Promise<number> {
    return (await this.rows<{ n: number }>(OLDER_UNREAD, [start]))[0]?.n ?? 0;
  }

  listNewDeviations(w: DigestSectionWindow): Promise<NewDeviationRowDb[]> {
    return this.rows(NEW_DEVIATIONS, [w.start, w.end]);
  }

  listChanges(w: DigestSectionWindow): Promise<ChangeRowDb[]> {
    return this.rows(CHANGES, [w.start, w.end]);
  }

  /** User accounts that need the owner; `oldRefreshBefore`: a refresh token issued before it is old. */
  listAccountHealth(oldRefreshBefore: Date): Promise<AccountHealthRowDb[]> {
    return this.rows(ACCOUNT_HEALTH, [oldRefreshBefore]);
  }

  listSourceHealth(): Promise<SourceHealthRowDb[]> {
    return this.rows(SOURCE_HEALTH, []);
  }

  /** Downloads deferred by the weekly allowance, and when the oldest of them was last touched. */
  async countDeferredDownloads(): Promise<{ count: number; oldest: Date | null }> {
    const r = (await this.rows<{ count: number; oldest: Date | null }>(DEFERRED_DOWNLOADS, []))[0];
    return { count: r?.count ?? 0, oldest: r?.oldest ?? null };
  }

  /** Unreadable answers of the service seen in the window. */
  async countUnreadable(w: DigestSectionWindow): Promise<{ count: number; lastSeenAt: Date | null }> {
    const r = (await this.rows<{ count: number; last_seen_at: Date | null }>(UNREADABLE, [w.start, w.end]))[0];
    return { count: r?.count ?? 0, lastSeenAt: r?.last_seen_at ?? null };
  }

  listOpenAlerts(): Promise<OpenAlertRowDb[]> {
    return this.rows(OPEN_ALERTS, []);
  }
}

// $1 = window start, $2 = window end. NEW(x, b): x first seen in the window and after b's baseline.

const NEW = (x: string, b: string) => `${x}.first_seen_at > GREATEST($1::timestamptz, ${b}.baseline_at) AND ${x}.first_seen_at <= $2::timestamptz`;
const BASELINE = (b: string, accountCol: string, source: string) =>
  `JOIN digest_baselines ${b} ON ${b}.account_id = ${accountCol} AND ${b}.source = '${source}'`;

/**
 * The sha256 of the deviation's stored file, the original before a rendition: the digest shows the archive's
 * own thumbnail of it, never the service's signed CDN URL (which stops working within hours).
 */
const STORED = (d: string) => `(SELECT dl.sha256 FROM downloads dl
    WHERE dl.deviationid = ${d}.deviationid AND dl.sha256 IS NOT NULL AND dl.path IS NOT NULL
    ORDER BY (dl.status = 'done') DESC, dl.done_at DESC NULLS LAST, dl.id LIMIT 1)`;

/** A stored file of the deviation: "original" when a downloads row is done, "reduced" for a degraded rendition. */
const ARCHIVED = (d: string) => `(SELECT CASE WHEN bool_or(dl.status = 'done') THEN 'original' WHEN bool_or(dl.status = 'degraded') THEN 'reduced' END
    FROM downloads dl WHERE dl.deviationid = ${d}.deviationid)`;

const DEV = (d: string) => `${d}.deviationid AS dev_id, ${d}.title AS dev_title, ${d}.url AS dev_url, ${d}.is_mature AS dev_mature,
  ${d}.removed_reason::text AS dev_removed, ${STORED(d)} AS dev_sha256, ${ARCHIVED(d)} AS dev_archived`;

const FAVE = `COALESCE(m.type, '') ~* '^(fav|collect)'`;
const COMMENT = `COALESCE(m.type, '') ~* '^(comment|reply)'`;
const WATCH = `COALESCE(m.type, '') ~* '^watch'`;

const ACCOUNTS = `
SELECT a.name, a.username,
  (SELECT count(DISTINCT s.source) FROM sync_sources s WHERE s.account_id = a.id AND s.source = ANY('{messages,notes,watch_feed,profile,collections}'))::int AS sources,
  (SELECT count(*) FROM digest_baselines b WHERE b.account_id = a.id)::int AS baselines
FROM accounts a WHERE a.kind = 'user' ORDER BY a.name`;

// total_people and total_works count every faved work of the window, not only the LIMIT shown (window functions run
// before LIMIT): the digest's "N faves" and "…and N more" come from them.
const FAVES = `
SELECT a.name AS account, count(DISTINCT COALESCE(m.originator_userid, m.messageid))::int AS people,
  (array_agg(DISTINCT u.username ORDER BY u.username) FILTER (WHERE u.username IS NOT NULL))[1:6] AS names,
  max(m.ts) AS latest_at, (sum(count(DISTINCT COALESCE(m.originator_userid, m.messageid))) OVER ())::int AS total_people,
  count(*) OVER ()::int AS total_works, ${DEV("d")}
FROM messages m
JOIN accounts a ON a.id = m.account_id
${BASELINE("b", "m.account_id", "messages")}
LEFT JOIN users u ON u.userid = m.originator_userid
LEFT JOIN deviations d ON d.deviationid = m.subject_deviationid
WHERE m.box = 'feedback' AND ${FAVE} AND ${NEW("m", "b")}
GROUP BY a.name, m.subject_deviationid, d.deviationid
ORDER BY people DESC, latest_at DESC NULLS LAST
LIMIT ${LIMITS.faves}`;

const COMMENTS = `
SELECT a.name AS account, m.type, u.username AS author, m.ts,
  COALESCE(c.body, m.raw #>> '{comment,body}', m.raw #>> '{subject,comment,body}') AS body,
  count(*) OVER ()::int AS total, ${DEV("d")}
FROM messages m
JOIN accounts a ON a.id = m.account_id
${BASELINE("b", "m.account_id", "messages")}
LEFT JOIN users u ON u.userid = m.originator_userid
LEFT JOIN comments c ON c.commentid = m.subject_commentid
LEFT JOIN deviations d ON d.deviationid = m.subject_deviationid
WHERE m.box = 'feedback' AND ${COMMENT} AND ${NEW("m", "b")}
ORDER BY m.ts DESC NULLS LAST, m.messageid
LIMIT ${LIMITS.comments}`;

/** New watchers: "watch" notifications and watcher relations first seen in the window, once per user. */
const WATCHERS = `
WITH fresh AS (
  SELECT m.account_id, m.originator_userid AS userid, m.first_seen_at AS at
  FROM messages m ${BASELINE("b", "m.account_id", "messages")}
  WHERE ${WATCH} AND m.originator_userid IS NOT NULL AND ${NEW("m", "b")}
  UNION ALL
  SELECT w.account_id, w.userid, w.first_seen_at
  FROM watch_relations w ${BASELINE("b", "w.account_id", "profile")}
  WHERE w.kind = 'watcher' AND ${NEW("w", "b")}
)
SELECT a.name AS account, u.username, u.usericon, min(f.at) AS at, count(*) OVER ()::int AS total
FROM fresh f JOIN accounts a ON a.id = f.account_id JOIN users u ON u.userid = f.userid
GROUP BY a.name, u.userid, u.username, u.usericon
ORDER BY at, u.username
LIMIT ${LIMITS.watchers}`;

const OTHER_NOTIFICATIONS = `
SELECT a.name AS account, m.box::text AS box, COALESCE(m.type, 'other') AS type, count(*)::int AS count, max(m.ts) AS latest_at
FROM messages m
JOIN accounts a ON a.id = m.account_id
${BASELINE("b", "m.account_id", "messages")}
WHERE m.box <> 'mentions' AND NOT (${FAVE} OR ${COMMENT} OR ${WATCH}) AND ${NEW("m", "b")}
GROUP BY a.name, m.box, m.type
ORDER BY count DESC, type`;

const MENTIONS = `
SELECT a.name AS account, m.type, u.username AS by, m.ts,
  COALESCE(c.body, m.raw #>> '{comment,body}', m.raw #>> '{subject,comment,body}') AS body,
  count(*) OVER ()::int AS total, ${DEV("d")}
FROM messages m
JOIN accounts a ON a.id = m.account_id
${BASELINE("b", "m.account_id", "messages")}
LEFT JOIN users u ON u.userid = m.originator_userid
LEFT JOIN comments c ON c.commentid = m.subject_commentid
LEFT JOIN deviations d ON d.deviationid = m.subject_deviationid
WHERE m.box = 'mentions' AND ${NEW("m", "b")}
ORDER BY m.ts DESC NULLS LAST, m.messageid
LIMIT ${LIMITS.mentions}`;

/** Unread notes received in the window (not the account's own sent notes). */
const UNREAD_NOTES = `
SELECT a.name AS account, n.noteid, s.username AS sender, n.subject, n.preview, n.body, n.ts,
  count(*) OVER ()::int AS total
FROM notes n
JOIN accounts a ON a.id = n.account_id
${BASELINE("b", "n.account_id", "notes")}
LEFT JOIN users s ON s.userid = n.sender_userid
WHERE n.unread AND n.removed_at IS NULL AND NOT COALESCE(n.sent, false) AND ${NEW("n", "b")}
ORDER BY n.ts DESC NULLS LAST, n.noteid
LIMIT ${LIMITS.notes}`;

/** Unread notes dvault already knew before the window ($1 = its start): still waiting. */
const OLDER_UNREAD = `
SELECT count(*)::int AS n FROM notes o WHERE o.unread AND o.removed_at IS NULL AND NOT COALESCE(o.sent, false) AND o.first_seen_at <= $1::timestamptz`;

/**
 * New work of watched artists: deviations in watch-feed items new in the window (or new deviations added
 * to a known bucket), and, when the feed is gone and dvault polls the artists' galleries instead, new
 * deviations by artists the account watches (published at most a week before the watch began, so
 * starting to watch someone does not report their whole back catalogue).
 */
const NEW_DEVIATIONS = `
WITH fresh AS (
  SELECT f.account_id, dv AS deviationid
  FROM feed_items f ${BASELINE("b", "f.account_id", "watch_feed")}
  CROSS JOIN LATERAL unnest(f.deviationids) AS dv
  JOIN deviations d ON d.deviationid = dv
  WHERE ${NEW("f", "b")} OR ${NEW("d", "b")}
  UNION
  SELECT w.account_id, d.deviationid
  FROM watch_relations w ${BASELINE("b", "w.account_id", "watch_feed")}
  JOIN deviations d ON d.author_userid = w.userid
  WHERE w.kind = 'watching' AND w.removed_at IS NULL AND ${NEW("d", "b")}
    AND (d.published_at IS NULL OR d.published_at > w.first_seen_at - interval '7 days')
)
SELECT a.name AS account, u.username AS artist, d.published_at, d.type::text AS type, count(*) OVER ()::int AS total, ${DEV("d")}
FROM fresh x
JOIN accounts a ON a.id = x.account_id
JOIN deviations d ON d.deviationid = x.deviationid
LEFT JOIN users u ON u.userid = d.author_userid
WHERE d.removed_at IS NULL
ORDER BY d.published_at DESC NULLS LAST, d.deviationid
LIMIT ${LIMITS.deviations}`;

/**
 * Artists of the account (watched, tracked, or the authors of its favourites) that the service answered
 * as suspended, deactivated or not found in the window (docs/service-behaviour.md#user-error-codes), with
 * how many of their works the archive keeps; favourites removed for their own sake (deleted, unavailable,
 * access lost); and the account's own works and its tracked artists' works found deleted or unavailable
 * upstream (docs/service-behaviour.md#deleted-deviation-lookup) after dvault had seen them live. Works
 * hidden with their artist are told once, on the artist's line; a favourite once, as a favourite.
 */
const CHANGES = `
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
  WHERE u.removed_at > GREATEST($1::timestamptz, b.baseline_at) AND u.removed_at <= $2::timestamptz
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
    AND d.removed_at > GREATEST($1::timestamptz, b.baseline_at) AND d.removed_at <= $2::timestamptz
  UNION ALL
  SELECT a.name AS account, 'work_removed' AS kind, au.username, d.removed_reason::text AS reason,
    d.removed_at AS at, ${DEV("d")}, CASE WHEN d.author_userid = a.user_id THEN 'own' ELSE 'tracked' END AS relation, NULL::int AS works
  FROM accounts a
  JOIN deviations d ON d.author_userid = a.user_id
    OR d.author_userid IN (SELECT t.userid FROM tracked_users t WHERE t.account_id = a.id AND t.removed_at IS NULL)
  LEFT JOIN users au ON au.userid = d.author_userid
  WHERE a.kind = 'user' AND d.removed_reason IN ('deleted', 'unavailable') AND d.removed_at > d.first_seen_at
    AND d.removed_at > $1::timestamptz AND d.removed_at <= $2::timestamptz
    AND NOT EXISTS (SELECT 1 FROM collection_folders cf JOIN folder_members fm ON fm.kind = 'collection' AND fm.folderid = cf.folderid
                    WHERE cf.owner_userid = a.user_id AND fm.deviationid = d.deviationid)
) x
ORDER BY at, kind, username
LIMIT ${LIMITS.changes}`;

/** Accounts that need the owner: re-authorization, or a refresh token past the warning age ($1 = now - 80 days). */
const ACCOUNT_HEALTH = `
SELECT name, state::text AS state, state_reason, state_changed_at, refresh_issued_at
FROM accounts
WHERE kind = 'user' AND (state IN ('needs_reauth', 'expiring') OR (state = 'ok' AND refresh_issued_at < $1))
ORDER BY name`;

const SOURCE_HEALTH = `
SELECT a.name AS account, s.source, s.key, s.last_result::text AS last_result, s.last_error, s.unavailable_reason, s.last_run_at, s.gaps
FROM sync_sources s JOIN accounts a ON a.id = s.account_id
WHERE a.kind = 'user' AND a.state NOT IN ('needs_reauth', 'revoked')
  AND (s.last_result IN ('failed', 'incomplete') OR s.unavailable_reason IS NOT NULL)
ORDER BY a.name, s.source, s.key`;

/** Answers of the service that could not be read and were skipped, seen in the window (kept in unreadable_responses). */
const UNREADABLE = `
SELECT count(*)::int AS count, max(last_seen_at) AS last_seen_at FROM unreadable_responses
WHERE last_seen_at > $1::timestamptz AND last_seen_at <= $2::timestamptz`;

const DEFERRED_DOWNLOADS = `SELECT count(*)::int AS count, min(updated_at) AS oldest FROM downloads WHERE status = 'deferred_quota'`;

/** Open incidents other sections don't show (accounts and sources have their own lists). */
const OPEN_ALERTS = `
SELECT kind::text AS kind, subject, title, opened_at FROM alerts
WHERE resolved_at IS NULL AND kind = 'heartbeat_missing'
ORDER BY opened_at`;
