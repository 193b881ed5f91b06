// The statements of the downloads table and the shapes of their rows (src/db/download.repository.ts runs them).
import { sql } from "./kysely.ts";
import type { DeviationType } from "./mirror-rows.ts";
import { recordset } from "./upsert-page.ts";
import type { ClaimedDownload, DownloadTarget, DownloadKind, DownloadStatus } from "./download.repository.ts";

/** Text from the service as a parameter, or null (a NUL in it is made storable by the pool's client). */
export function text(value: string | null | undefined): string | null {
  return value ?? null;
}

export type ClaimedRow = {
  id: string;
  deviationid: string;
  kind: DownloadKind;
  status: DownloadStatus;
  account_id: number | null;
  rank: number;
  published_at: Date | null;
};

export function toClaimed(r: ClaimedRow): ClaimedDownload {
  return { id: String(r.id), deviationid: r.deviationid, kind: r.kind, status: r.status, accountId: r.account_id, rank: r.rank, publishedAt: r.published_at };
}

export function byPriority(a: ClaimedDownload, b: ClaimedDownload): number {
  return a.rank - b.rank || (b.publishedAt?.getTime() ?? -Infinity) - (a.publishedAt?.getTime() ?? -Infinity) || Number(a.id) - Number(b.id);
}

export type TargetRow = {
  id: string;
  deviationid: string;
  kind: DownloadKind;
  status: DownloadStatus;
  account_id: number | null;
  rendition: string | null;
  path: string | null;
  sha256: string | null;
  size: string | null;
  source_etag: string | null;
  attempts: number;
  next_attempt_at: Date | null;
  degraded_reason: string | null;
  type: DeviationType | null;
  title: string | null;
  is_deleted: boolean;
  is_downloadable: boolean | null;
  download_filesize: string | null;
  published_at: Date | null;
  tier_access: string | null;
  premium: unknown;
  is_mature: boolean | null;
  raw: Record<string, unknown>;
  has_text: boolean;
  html: string | null;
  css: string | null;
  excerpt: string | null;
};

export function toTarget(r: TargetRow): DownloadTarget {
  return {
    id: String(r.id),
    deviationid: r.deviationid,
    kind: r.kind,
    status: r.status,
    accountId: r.account_id,
    rendition: r.rendition,
    path: r.path,
    sha256: r.sha256,
    size: r.size === null ? null : Number(r.size),
    sourceEtag: r.source_etag,
    attempts: r.attempts,
    nextAttemptAt: r.next_attempt_at,
    degradedReason: r.degraded_reason,
    deviation: {
      type: r.type,
      title: r.title,
      isDeleted: r.is_deleted,
      isDownloadable: r.is_downloadable,
      downloadFilesize: r.download_filesize === null ? null : Number(r.download_filesize),
      publishedAt: r.published_at,
      tierAccess: r.tier_access,
      premium: r.premium,
      isMature: r.is_mature,
      raw: r.raw ?? {},
    },
    text: r.has_text ? { html: r.html, css: r.css, excerpt: r.excerpt } : null,
  };
}

export type StoredRowRaw = {
  id: string;
  deviationid: string;
  kind: DownloadKind;
  status: DownloadStatus;
  rendition: string | null;
  path: string;
  sha256: string | null;
  size: string | null;
  is_deleted: boolean;
};

/** Rows wanted at `at`, one per (deviationid, kind); rows already there stay as they are. */
export const markWanted = (rows: readonly object[], at: Date) => sql`
INSERT INTO downloads (deviationid, kind, status, priority, reason, created_at, updated_at)
SELECT deviationid, kind, 'wanted', priority, reason, ${at}, ${at}
FROM ${recordset(rows, sql`deviationid text, kind download_kind, priority integer, reason text`)}
ORDER BY deviationid, kind
ON CONFLICT (deviationid, kind) DO NOTHING`;

/**
 * The rank of a row's class in the configured order ($classes, text[]): its deviation is the account's
 * own (gallery), in one of its collections, by a user it tracks, or none of these (other). The best
 * matching class counts; classes left out of the order come after the listed ones. Needs d, v, a.
 */
const RANK = `LEAST(
    CASE WHEN a.user_id IS NOT NULL AND v.author_userid = a.user_id THEN array_position(%C::text[], 'gallery') END,
    CASE WHEN EXISTS (SELECT 1 FROM folder_members m JOIN collection_folders c ON c.folderid = m.folderid
                      WHERE m.kind = 'collection' AND m.deviationid = d.deviationid AND m.removed_at IS NULL AND c.owner_userid = a.user_id)
         THEN array_position(%C::text[], 'collections') END,
    CASE WHEN EXISTS (SELECT 1 FROM tracked_users t WHERE t.account_id = a.id AND t.removed_at IS NULL AND t.userid = v.author_userid)
         THEN array_position(%C::text[], 'tracked') END,
    COALESCE(array_position(%C::text[], 'other'), cardinality(%C::text[]) + 1))`;

export const rank = (param: string) => RANK.replaceAll("%C", param);

export const CLAIM_DUE = `
WITH a AS (SELECT id, user_id FROM accounts WHERE id = $1),
due AS (
  SELECT d.id, ${rank("$3")} AS rank, v.published_at
  FROM downloads d
  JOIN deviations v ON v.deviationid = d.deviationid
  CROSS JOIN a
  WHERE (d.account_id IS NULL OR d.account_id = a.id)
    AND ($6::text[] IS NULL OR d.deviationid = ANY($6::text[]))
    AND (
      (d.queued_at IS NULL AND (d.status IN ('wanted', 'queued') OR (d.status IN ('deferred_quota', 'degraded', 'failed') AND d.next_attempt_at <= $2)))
      OR (d.queued_at <= $5 AND d.status IN ('wanted', 'queued', 'deferred_quota', 'degraded'))
    )
  ORDER BY rank, v.published_at DESC NULLS LAST, d.id
  LIMIT $4
  FOR UPDATE OF d SKIP LOCKED
)
UPDATE downloads d
SET status = CASE WHEN d.status IN ('wanted', 'deferred_quota', 'failed') THEN 'queued'::download_status ELSE d.status END,
    queued_at = $2, next_attempt_at = NULL, account_id = COALESCE(d.account_id, $1), updated_at = $2
FROM due
WHERE d.id = due.id
RETURNING d.id, d.deviationid, d.kind, d.status, d.account_id, due.rank, due.published_at`;

/**
 * What is left of the downloads of some accounts ($1, int[]; unattributed rows count for any of them) at $2, by the
 * one definition of "due now" that CLAIM_DUE claims by: the run, its summary, status and the exit codes read this.
 */
export const REMAINING = `
SELECT
  count(*) FILTER (WHERE d.queued_at IS NULL AND (d.status IN ('wanted', 'queued')
                   OR (d.status IN ('deferred_quota', 'degraded', 'failed') AND d.next_attempt_at <= $2)))::int AS due_now,
  count(*) FILTER (WHERE d.queued_at IS NOT NULL AND d.status IN ('wanted', 'queued', 'deferred_quota', 'degraded'))::int AS queued,
  count(*) FILTER (WHERE d.queued_at IS NULL AND d.status = 'deferred_quota' AND d.next_attempt_at > $2)::int AS deferred,
  count(*) FILTER (WHERE d.queued_at IS NULL AND d.status = 'degraded' AND d.next_attempt_at > $2)::int AS degraded_waiting,
  min(d.next_attempt_at) FILTER (WHERE d.queued_at IS NULL AND d.status IN ('deferred_quota', 'degraded') AND d.next_attempt_at > $2) AS next_window,
  count(*) FILTER (WHERE d.queued_at IS NULL AND d.status = 'failed' AND d.next_attempt_at > $2)::int AS retry_later,
  min(d.next_attempt_at) FILTER (WHERE d.queued_at IS NULL AND d.status = 'failed' AND d.next_attempt_at > $2) AS next_retry,
  count(*) FILTER (WHERE d.status = 'failed' AND d.next_attempt_at IS NULL)::int AS failed_for_good
FROM downloads d
WHERE d.kind <> 'degraded' AND (d.account_id IS NULL OR d.account_id = ANY($1::int[]))`;

export type RemainingRow = {
  due_now: number;
  queued: number;
  deferred: number;
  degraded_waiting: number;
  next_window: Date | null;
  retry_later: number;
  next_retry: Date | null;
  failed_for_good: number;
};

export const LIST_QUEUED = `
SELECT d.id, d.deviationid, d.kind, d.status, d.account_id, ${rank("$1")} AS rank, v.published_at
FROM downloads d
JOIN deviations v ON v.deviationid = d.deviationid
LEFT JOIN accounts a ON a.id = d.account_id
WHERE d.queued_at IS NOT NULL AND d.id > $2::bigint
ORDER BY d.id
LIMIT $3`;

export const FIND_TARGET = `
SELECT d.id, d.deviationid, d.kind, d.status, d.account_id, d.rendition, d.path, d.sha256, d.size, d.source_etag,
       d.attempts, d.next_attempt_at, d.degraded_reason,
       v.type, v.title, v.is_deleted, v.is_downloadable, v.download_filesize, v.published_at, v.tier_access, v.premium, v.is_mature, v.raw,
       t.deviationid IS NOT NULL AS has_text, t.html, t.css, t.excerpt
FROM downloads d
JOIN deviations v ON v.deviationid = d.deviationid
LEFT JOIN deviation_texts t ON t.deviationid = d.deviationid
WHERE d.deviationid = $1 AND d.kind = $2::download_kind`;

export const RECORD_ATTEMPT = `
UPDATE downloads SET attempts = attempts + 1, last_attempt_at = $3, updated_at = $3, account_id = COALESCE($2, account_id)
WHERE id = $1::bigint`;

export const MARK_STORED = `
WITH old AS (
  SELECT id, status, rendition, path, sha256, size FROM downloads WHERE id = $1::bigint FOR UPDATE
),
upd AS (
  UPDATE downloads d
  SET status = $2::download_status, rendition = $3, path = $4, size = $5, sha256 = $6, mime = $7, width = $8, height = $9,
      source_etag = $10, source_filename = $11, source_size = $12, degraded_reason = $13, next_attempt_at = $14,
      is_partial = $15, partial_reason = $16, bytes_transferred = d.bytes_transferred + $17,
      queued_at = NULL, last_error = NULL, failures = 0, source = 'service',
      upgraded_at = CASE WHEN old.status = 'degraded' AND $2::download_status = 'done' THEN $18 ELSE d.upgraded_at END,
      done_at = $18, verified_at = $18, updated_at = $18
  FROM old
  WHERE d.id = old.id
  RETURNING d.id, d.deviationid, d.status, d.rendition, d.path, d.sha256, d.size
),
hist AS (
  INSERT INTO download_history (download_id, deviationid, changed_at, change, old_status, old_rendition, old_path, old_sha256, old_size,
                                new_status, new_rendition, new_path, new_sha256, new_size, note)
  SELECT upd.id, upd.deviationid, $18,
         CASE WHEN old.status = 'degraded' AND upd.status = 'done' THEN 'upgraded' ELSE 'replaced' END,
         old.status, old.rendition, old.path, old.sha256, old.size, upd.status, upd.rendition, upd.path, upd.sha256, upd.size, $19
  FROM old, upd
  WHERE old.path IS NOT NULL AND (old.path IS DISTINCT FROM upd.path OR old.sha256 IS DISTINCT FROM upd.sha256)
)
SELECT old.path AS old_path, old.status AS old_status, old.rendition AS old_rendition FROM old`;

export const MARK_DEFERRED = `
UPDATE downloads
SET status = CASE WHEN status = 'degraded' THEN 'degraded'::download_status ELSE 'deferred_quota'::download_status END,
    degraded_reason = $2, next_attempt_at = $3, bytes_transferred = bytes_transferred + $4, queued_at = NULL, updated_at = $5
WHERE id = $1::bigint`;

export const MARK_NOT_DOWNLOADABLE = `
UPDATE downloads
SET status = 'not_downloadable', degraded_reason = $2, last_error = $2, next_attempt_at = NULL,
    bytes_transferred = bytes_transferred + $3, queued_at = NULL, updated_at = $4
WHERE id = $1::bigint`;

// $6: permanent, $8: the retry delays in ms (bigint[]). On the right of SET, failures is the old count.
export const RECORD_FAILURE = `
UPDATE downloads
SET last_error = $3, bytes_transferred = bytes_transferred + $5, updated_at = $7,
    status = CASE WHEN $4 AND status <> 'degraded' THEN 'failed'::download_status ELSE status END,
    failures = CASE WHEN $4 THEN failures + 1 ELSE failures END,
    next_attempt_at = CASE
      WHEN NOT $4 THEN next_attempt_at
      WHEN $6 AND status <> 'degraded' THEN NULL
      ELSE $7::timestamptz + (($8::bigint[])[CASE WHEN $6 THEN cardinality($8::bigint[]) ELSE LEAST(failures + 1, cardinality($8::bigint[])) END])::double precision * interval '1 millisecond'
    END,
    queued_at = CASE WHEN $4 THEN NULL ELSE queued_at END
WHERE deviationid = $1 AND kind = $2::download_kind
RETURNING status, failures, next_attempt_at`;

// A person asked to try a failed download now (dvault jobs retry, the dashboard): due at once, with a fresh
// failure count, so its next failures back off from the first delay again (src/downloads/retry.ts).
export const RETRY_NOW = `
UPDATE downloads
SET failures = 0, next_attempt_at = $3, updated_at = $3
WHERE deviationid = $1 AND kind = $2::download_kind AND queued_at IS NULL AND status IN ('failed', 'degraded')
RETURNING id`;

// A released deferred or degraded row is due again at once (its claim had cleared next_attempt_at).
export const RELEASE = `
UPDATE downloads
SET queued_at = NULL, status = CASE WHEN status = 'queued' THEN 'wanted'::download_status ELSE status END,
    next_attempt_at = CASE WHEN status IN ('deferred_quota', 'degraded') THEN COALESCE(next_attempt_at, $2) ELSE next_attempt_at END,
    updated_at = $2
WHERE id = $1::bigint`;

export const LIST_STORED = `
SELECT d.id, d.deviationid, d.kind, d.status, d.rendition, d.path, d.sha256, d.size, v.is_deleted
FROM downloads d JOIN deviations v ON v.deviationid = d.deviationid
WHERE d.path IS NOT NULL AND d.id > $1::bigint
ORDER BY d.id
LIMIT $2`;

export const MARK_FILE_LOST = `
WITH old AS (
  SELECT d.id, d.deviationid, d.status, d.rendition, d.path, d.sha256, d.size, v.is_deleted
  FROM downloads d JOIN deviations v ON v.deviationid = d.deviationid
  WHERE d.path = $1
  FOR UPDATE OF d
),
upd AS (
  UPDATE downloads d
  SET status = CASE WHEN old.is_deleted THEN 'failed'::download_status ELSE 'wanted'::download_status END,
      path = NULL, sha256 = NULL, size = NULL, rendition = NULL, degraded_reason = NULL, is_partial = false, partial_reason = NULL,
      next_attempt_at = NULL, queued_at = NULL, done_at = NULL, verified_at = $4, updated_at = $4, last_error = $3, failures = 0
  FROM old
  WHERE d.id = old.id
  RETURNING d.id, old.is_deleted
),
hist AS (
  INSERT INTO download_history (download_id, deviationid, changed_at, change, old_status, old_rendition, old_path, old_sha256, old_size, new_status, note)
  SELECT old.id, old.deviationid, $4, $2, old.status, old.rendition, old.path, old.sha256, old.size,
         CASE WHEN old.is_deleted THEN 'failed'::download_status ELSE 'wanted'::download_status END, $3
  FROM old
)
SELECT count(*) FILTER (WHERE NOT is_deleted)::int AS n FROM upd`;

export const STATUS_COUNTS = `
SELECT kind, status, count(*)::int AS n, sum(size)::bigint AS bytes, count(*) FILTER (WHERE is_partial)::int AS partial,
       min(next_attempt_at) AS next_attempt_at
FROM downloads
GROUP BY kind, status
ORDER BY kind, status`;
