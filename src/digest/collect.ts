// What a digest says, read from the mirror with one query per section. "New" means new to dvault: a row's
// first_seen_at in the window (start, end], and after the baseline of the source that brings such rows
// in (digest_baselines: what the initial full sync brought is not news). The service's own timestamps
// are shown, never used to decide what is new (a late message or a fave on an old work is still news).
import { statfs } from "node:fs/promises";
import path from "node:path";
import { ImportedFileRepository } from "../db/imported-file.repository.ts";
import type { Queryable } from "../db/with-transaction.ts";
import { DigestRepository } from "../db/digest.repository.ts";
import { htmlToText, shorten } from "./text.ts";
import type {
  AccountHealth,
  ChangeItem,
  CommentItem,
  DeviationRef,
  DigestCounts,
  DigestData,
  DigestWindow,
  DiskHealth,
  DownloadsPaused,
  FaveGroup,
  Health,
  MentionItem,
  NewDeviation,
  NoteItem,
  NotificationGroup,
  OpenAlert,
  SourceHealth,
  WatcherItem,
} from "./types.ts";

const DAY_MS = 86_400_000;
/** The service ends refresh tokens at about 90 days; dvault warns from 80. */
export const REFRESH_TOKEN_WARN_DAYS = 80;
/** Below this much free space (or 5% of the disk) the archive's disk is reported as low. */
export const LOW_DISK_BYTES = 5 * 2 ** 30;

const LIMITS = { faves: 30, comments: 30, mentions: 30, notes: 30, deviations: 48, changes: 50, watchers: 60 };

export type CollectOptions = {
  db: Queryable;
  window: DigestWindow;
  now: Date;
  archiveDir: string;
  /** Whether downloads are paused for disk space (see alerts.ts: downloadsPausedProbe). */
  downloadsPaused?: () => Promise<DownloadsPaused>;
  /** The idempotency key of the digest being built: its own failed attempts are not reported in it. */
  digestKey?: string | null;
  /** Record baselines first (default true); a preview may read without writing. */
  recordBaselines?: boolean;
};

export async function collectDigest(opts: CollectOptions): Promise<DigestData> {
  const { db, window, now } = opts;
  const repo = new DigestRepository(db);
  if (opts.recordBaselines !== false) await repo.recordBaselines(now);
  const w = [window.start, window.end];
  const [accounts, faves, comments, watchers, other, mentions, notes, olderUnread, deviations, changes, health] = await Promise.all([
    query<AccountRowDb>(db, ACCOUNTS, []),
    query<FaveRowDb>(db, FAVES, w),
    query<CommentRowDb>(db, COMMENTS, w),
    query<WatcherRowDb>(db, WATCHERS, w),
    query<OtherRowDb>(db, OTHER_NOTIFICATIONS, w),
    query<MentionRowDb>(db, MENTIONS, w),
    query<NoteRowDb>(db, UNREAD_NOTES, w),
    query<{ n: number }>(db, OLDER_UNREAD, [window.start]),
    query<NewDeviationRowDb>(db, NEW_DEVIATIONS, w),
    query<ChangeRowDb>(db, CHANGES, w),
    collectHealth(opts, repo),
  ]);

  const data: Omit<DigestData, "counts"> = {
    window,
    generatedAt: now,
    accounts: accounts.map((a) => ({ name: a.name, username: a.username, baselineComplete: a.baselines >= a.sources && a.sources > 0 })),
    feedback: {
      faves: faves.map(toFave),
      comments: comments.map(toComment),
      commentsTotal: comments[0]?.total ?? 0,
      watchers: watchers.map((r): WatcherItem => ({ account: r.account, username: r.username, usericon: r.usericon, at: r.at })),
      other: other.map((r): NotificationGroup => ({ account: r.account, box: r.box, type: r.type, count: r.count, latestAt: r.latest_at })),
    },
    mentions: mentions.map(toMention),
    mentionsTotal: mentions[0]?.total ?? 0,
    notes: {
      unread: notes.map((r): NoteItem => ({ account: r.account, noteid: r.noteid, sender: r.sender, subject: r.subject, preview: notePreview(r), sentAt: r.ts })),
      total: notes[0]?.total ?? 0,
      olderUnread: olderUnread[0]?.n ?? 0,
    },
    deviations: { items: deviations.map(toNewDeviation), total: deviations[0]?.total ?? 0 },
    changes: changes.map(toChange),
    health,
  };
  return { ...data, counts: countDigest(data) };
}

export function countDigest(d: Omit<DigestData, "counts">): DigestCounts {
  const h = d.health;
  const problems =
    h.accounts.length +
    h.failingSources.length +
    h.deliveries.length +
    h.alerts.length +
    (h.downloadsPaused.paused ? 1 : 0) +
    ("low" in h.disk && h.disk.low ? 1 : 0);
  return {
    faves: d.feedback.faves.reduce((n, f) => n + f.people, 0),
    comments: d.feedback.commentsTotal,
    watchers: d.feedback.watchers.length,
    mentions: d.mentionsTotal,
    notifications: d.feedback.other.reduce((n, o) => n + o.count, 0),
    notes: d.notes.total,
    deviations: d.deviations.total,
    changes: d.changes.length,
    problems,
  };
}

/** Nothing new and nothing that needs the owner: such a window sends nothing unless configured to. */
export function isEmptyDigest(counts: DigestCounts): boolean {
  return Object.values(counts).every((n) => n === 0);
}

async function collectHealth(opts: CollectOptions, repo: DigestRepository): Promise<Health> {
  const { db, now, window } = opts;
  const [accounts, sources, deferred, deliveries, alerts, disk, paused, unreadable, importedOriginals] = await Promise.all([
    query<AccountHealthRowDb>(db, ACCOUNT_HEALTH, [new Date(now.getTime() - REFRESH_TOKEN_WARN_DAYS * DAY_MS)]),
    query<SourceHealthRowDb>(db, SOURCE_HEALTH, []),
    query<{ count: number; oldest: Date | null }>(db, DEFERRED_DOWNLOADS, []),
    repo.listDeliveryProblems(window.start, opts.digestKey ?? null),
    query<OpenAlertRowDb>(db, OPEN_ALERTS, []),
    diskHealth(opts.archiveDir),
    opts.downloadsPaused ? opts.downloadsPaused().catch((): DownloadsPaused => ({ paused: false })) : Promise.resolve<DownloadsPaused>({ paused: false }),
    query<{ count: number; last_seen_at: Date | null }>(db, UNREADABLE, [window.start, window.end]),
    new ImportedFileRepository(db).countImportedOriginals(),
  ]);
  const toSource = (r: SourceHealthRowDb): SourceHealth => ({
    account: r.account,
    source: r.source,
    key: r.key,
    result: r.last_result,
    error: r.last_error,
    unavailable: r.unavailable_reason,
    lastRunAt: r.last_run_at,
    missing: missingOf(r.gaps),
  });
  return {
    accounts: accounts.map((r) => toAccountHealth(r, now)),
    failingSources: sources.filter((r) => r.last_result === "failed").map(toSource),
    unavailableSources: sources.filter((r) => r.last_result !== "failed" && r.unavailable_reason).map(toSource),
    incompleteSources: sources.filter((r) => r.last_result === "incomplete").map(toSource),
    unreadable: { count: unreadable[0]?.count ?? 0, lastSeenAt: unreadable[0]?.last_seen_at ?? null },
    deferredDownloads: { count: deferred[0]?.count ?? 0, oldest: deferred[0]?.oldest ?? null },
    importedOriginals,
    downloadsPaused: paused,
    deliveries,
    disk,
    alerts: alerts.map((r): OpenAlert => ({ kind: r.kind, subject: r.subject, title: r.title, openedAt: r.opened_at })),
  };
}

/** Free space of the filesystem holding the archive (its nearest existing parent when not created yet). */
export async function diskHealth(dir: string): Promise<DiskHealth> {
  let probe = path.resolve(dir);
  for (;;) {
    try {
      const s = await statfs(probe);
      const freeBytes = Number(s.bavail) * Number(s.bsize);
      const totalBytes = Number(s.blocks) * Number(s.bsize);
      return { path: dir, freeBytes, totalBytes, low: freeBytes < LOW_DISK_BYTES || (totalBytes > 0 && freeBytes / totalBytes < 0.05) };
    } catch (err) {
      const parent = path.dirname(probe);
      if ((err as NodeJS.ErrnoException).code !== "ENOENT" || parent === probe) return { path: dir, error: (err as Error).message };
      probe = parent;
    }
  }
}

async function query<R extends object>(db: Queryable, text: string, values: unknown[]): Promise<R[]> {
  const { rows } = await db.query<R & Record<string, unknown>>(text, values);
  return rows;
}

function notePreview(r: NoteRowDb): string | null {
  // The body when known (the service's preview is cut short), else the preview.
  const text = htmlToText(r.body) || htmlToText(r.preview);
  return text ? shorten(text.replace(/\s+/g, " "), 200) : null;
}

// ---- rows ---------------------------------------------------------------------------------------------

type DevColumns = {
  dev_id: string | null;
  dev_title: string | null;
  dev_url: string | null;
  dev_thumb: string | null;
  dev_archived: "original" | "reduced" | null;
  dev_mature: boolean | null;
  dev_removed: string | null;
};

function devRef(r: DevColumns): DeviationRef {
  return {
    deviationid: r.dev_id,
    title: r.dev_title,
    url: r.dev_url,
    thumbUrl: r.dev_thumb,
    archived: r.dev_archived,
    isMature: r.dev_mature ?? false,
    removedReason: r.dev_removed,
  };
}

type AccountRowDb = { name: string; username: string | null; sources: number; baselines: number };
type FaveRowDb = DevColumns & { account: string; people: number; names: string[] | null; latest_at: Date | null };
type CommentRowDb = DevColumns & { account: string; type: string | null; author: string | null; body: string | null; ts: Date | null; total: number };
type WatcherRowDb = { account: string; username: string; usericon: string | null; at: Date };
type OtherRowDb = { account: string; box: string; type: string; count: number; latest_at: Date | null };
type MentionRowDb = DevColumns & { account: string; type: string | null; by: string | null; body: string | null; ts: Date | null; total: number };
type NoteRowDb = { account: string; noteid: string; sender: string | null; subject: string | null; preview: string | null; body: string | null; ts: Date | null; total: number };
type NewDeviationRowDb = DevColumns & { account: string; artist: string | null; published_at: Date | null; type: string | null; total: number };
type ChangeRowDb = DevColumns & {
  account: string;
  kind: ChangeItem["kind"];
  username: string | null;
  reason: string | null;
  at: Date;
  relation: ChangeItem["relation"];
  works: number | null;
};
type AccountHealthRowDb = { name: string; state: string; state_reason: string | null; state_changed_at: Date | null; refresh_issued_at: Date | null };
type SourceHealthRowDb = {
  account: string;
  source: string;
  key: string;
  gaps: Record<string, { reason?: string }> | null;
  last_result: string | null;
  last_error: string | null;
  unavailable_reason: string | null;
  last_run_at: Date | null;
};
type OpenAlertRowDb = { kind: string; subject: string; title: string; opened_at: Date };

const toFave = (r: FaveRowDb): FaveGroup => ({ account: r.account, deviation: devRef(r), people: r.people, names: r.names ?? [], latestAt: r.latest_at });

const toComment = (r: CommentRowDb): CommentItem => ({
  account: r.account,
  kind: /^repl/i.test(r.type ?? "") ? "reply" : "comment",
  author: r.author,
  body: shorten(htmlToText(r.body), 400),
  postedAt: r.ts,
  deviation: r.dev_id ? devRef(r) : null,
});

const toMention = (r: MentionRowDb): MentionItem => ({
  account: r.account,
  type: r.type,
  by: r.by,
  body: r.body ? shorten(htmlToText(r.body), 300) : null,
  deviation: r.dev_id ? devRef(r) : null,
  at: r.ts,
});

const toNewDeviation = (r: NewDeviationRowDb): NewDeviation => ({
  account: r.account,
  artist: r.artist,
  deviation: devRef(r),
  publishedAt: r.published_at,
  type: r.type,
});

const toChange = (r: ChangeRowDb): ChangeItem => ({
  account: r.account,
  kind: r.kind,
  username: r.username,
  deviation: r.dev_id ? devRef(r) : null,
  reason: r.reason,
  at: r.at,
  relation: r.relation,
  works: r.works,
});

/** What a source's gaps say is missing, one reason per gap. */
function missingOf(gaps: Record<string, { reason?: string }> | null): string[] {
  return Object.values(gaps ?? {})
    .map((g) => g.reason)
    .filter((r): r is string => typeof r === "string" && r.length > 0);
}

function toAccountHealth(r: AccountHealthRowDb, now: Date): AccountHealth {
  const refreshAgeDays = r.refresh_issued_at ? Math.floor((now.getTime() - r.refresh_issued_at.getTime()) / DAY_MS) : null;
  const problem: AccountHealth["problem"] =
    r.state === "needs_reauth"
      ? "needs_reauth"
      : r.state === "revoked"
        ? "revoked"
        : refreshAgeDays !== null && refreshAgeDays >= REFRESH_TOKEN_WARN_DAYS
          ? "refresh_token_old"
          : "expiring";
  return {
    name: r.name,
    state: r.state,
    reason: r.state_reason,
    since: r.state_changed_at,
    refreshAgeDays,
    command: `dvault auth login --account ${r.name}`,
    problem,
  };
}

// ---- SQL ----------------------------------------------------------------------------------------------
// $1 = window start, $2 = window end. NEW(x, b): x first seen in the window and after b's baseline.

const NEW = (x: string, b: string) => `${x}.first_seen_at > GREATEST($1::timestamptz, ${b}.baseline_at) AND ${x}.first_seen_at <= $2::timestamptz`;
const BASELINE = (b: string, accountCol: string, source: string) =>
  `JOIN digest_baselines ${b} ON ${b}.account_id = ${accountCol} AND ${b}.source = '${source}'`;

/** The thumbnail closest to 300 px wide, else the preview: as the service sent them (signed URLs). */
const THUMB = (d: string) => `COALESCE(
    (SELECT t->>'src' FROM jsonb_array_elements(CASE WHEN jsonb_typeof(${d}.raw->'thumbs') = 'array' THEN ${d}.raw->'thumbs' ELSE '[]'::jsonb END) AS t
     WHERE t->>'src' IS NOT NULL
     ORDER BY abs(CASE WHEN jsonb_typeof(t->'width') = 'number' THEN (t->>'width')::numeric ELSE 0 END - 300) LIMIT 1),
    ${d}.raw #>> '{preview,src}')`;

/** A stored file of the deviation: "original" when a downloads row is done, "reduced" for a degraded rendition. */
const ARCHIVED = (d: string) => `(SELECT CASE WHEN bool_or(dl.status = 'done') THEN 'original' WHEN bool_or(dl.status = 'degraded') THEN 'reduced' END
    FROM downloads dl WHERE dl.deviationid = ${d}.deviationid)`;

const DEV = (d: string) => `${d}.deviationid AS dev_id, ${d}.title AS dev_title, ${d}.url AS dev_url, ${d}.is_mature AS dev_mature,
  ${d}.removed_reason::text AS dev_removed, ${THUMB(d)} AS dev_thumb, ${ARCHIVED(d)} AS dev_archived`;

const FAVE = `COALESCE(m.type, '') ~* '^(fav|collect)'`;
const COMMENT = `COALESCE(m.type, '') ~* '^(comment|reply)'`;
const WATCH = `COALESCE(m.type, '') ~* '^watch'`;

const ACCOUNTS = `
SELECT a.name, a.username,
  (SELECT count(DISTINCT s.source) FROM sync_sources s WHERE s.account_id = a.id AND s.source = ANY('{messages,notes,watch_feed,profile,collections}'))::int AS sources,
  (SELECT count(*) FROM digest_baselines b WHERE b.account_id = a.id)::int AS baselines
FROM accounts a WHERE a.kind = 'user' ORDER BY a.name`;

const FAVES = `
SELECT a.name AS account, count(DISTINCT COALESCE(m.originator_userid, m.messageid))::int AS people,
  (array_agg(DISTINCT u.username ORDER BY u.username) FILTER (WHERE u.username IS NOT NULL))[1:6] AS names,
  max(m.ts) AS latest_at, ${DEV("d")}
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
SELECT a.name AS account, u.username, u.usericon, min(f.at) AS at
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
 * how many of their works the archive keeps; and favourites removed for their own sake (deleted, access
 * lost). Works hidden with their artist are told once, on the artist's line.
 */
const CHANGES = `
SELECT * FROM (
  SELECT DISTINCT ON (a.name, u.userid) a.name AS account, 'artist_unavailable' AS kind, u.username, u.removed_reason::text AS reason,
    u.removed_at AS at, NULL::text AS dev_id, NULL::text AS dev_title, NULL::text AS dev_url, NULL::boolean AS dev_mature,
    NULL::text AS dev_removed, NULL::text AS dev_thumb, NULL::text AS dev_archived,
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
  WHERE d.removed_reason IN ('deleted', 'access_lost')
    AND d.removed_at > GREATEST($1::timestamptz, b.baseline_at) AND d.removed_at <= $2::timestamptz
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
