// A downloads row's stored file, written with its history: the file a download stored (or replaced), and a file
// `dvault verify` found missing or corrupt, each one statement that also writes download_history.
// src/db/download.repository.ts's DownloadRepository runs these.
import { kysely, sql } from "./kysely.ts";
import { recordset } from "./upsert-page.ts";
import type { Row } from "./schema.ts";
import type { Queryable } from "./with-transaction.ts";

/** A file now in the archive for a row. */
export type StoredFile = {
  id: string;
  status: "done" | "degraded" | "not_downloadable";
  /** "original", "content", "preview", "thumb", "video:<quality>", "html". */
  rendition: string;
  path: string;
  size: number;
  sha256: string;
  mime: string | null;
  width?: number | null;
  height?: number | null;
  etag?: string | null;
  sourceFilename?: string | null;
  sourceSize?: number | null;
  /** Why the original is not what is stored (degraded, not downloadable). */
  degradedReason?: string | null;
  /** When to try for the original again (a degraded row's next quota window). */
  nextAttemptAt?: Date | null;
  isPartial?: boolean;
  partialReason?: string | null;
  /** Bytes received over the network for it, retries included. */
  bytes: number;
  at: Date;
  note?: string | null;
};

/** Text from the service as a parameter, or null (a NUL in it is made storable by the pool's client). */
export function text(value: string | null | undefined): string | null {
  return value ?? null;
}

/**
 * The downloads rows (as `d`) that hold a stored file, by id after `afterId`, `limit` of them: how `dvault verify`
 * and the inert-text pass page through the archive. The caller joins and selects what it reads
 * (and narrows `path` to a string: it is not null here).
 */
export function storedFilesPage(db: Queryable, page: { afterId: string; limit: number }) {
  return kysely(db)
    .selectFrom("downloads as d")
    .where("d.path", "is not", null)
    .where("d.id", ">", sql<string>`${page.afterId}::bigint`)
    .orderBy("d.id")
    .limit(page.limit);
}

/** What a row held before its file was stored. */
type Held = { old_path: Row<"downloads">["path"]; old_status: Row<"downloads">["status"]; old_rendition: Row<"downloads">["rendition"] };

/** See DownloadRepository.markDownloadsStored: what each row held before, by id, for the rows that were there. */
export async function markStored(db: Queryable, files: readonly StoredFile[]): Promise<Map<string, Held>> {
  const input = files.map((f) => ({
    id: f.id,
    status: f.status,
    rendition: f.rendition,
    path: f.path,
    size: f.size,
    sha256: f.sha256,
    mime: f.mime,
    width: f.width ?? null,
    height: f.height ?? null,
    etag: f.etag ?? null,
    source_filename: f.sourceFilename ?? null,
    source_size: f.sourceSize ?? null,
    degraded_reason: f.degradedReason ?? null,
    next_attempt_at: f.nextAttemptAt ?? null,
    is_partial: f.isPartial ?? false,
    partial_reason: f.partialReason ?? null,
    bytes: f.bytes,
    at: f.at,
    note: f.note ?? null,
  }));
  const columns = sql`id bigint, status download_status, rendition text, path text, size bigint, sha256 text, mime text, width integer,
    height integer, etag text, source_filename text, source_size bigint, degraded_reason text, next_attempt_at timestamptz,
    is_partial boolean, partial_reason text, bytes bigint, at timestamptz, note text`;
  // One statement for the whole batch (one round trip, one commit); the rows locked in id order, so two batches never deadlock.
  // It may run twice for the same file: a batch whose commit answer was lost (the connection dropped at COMMIT) is
  // written again row by row (src/downloads/group-commit.ts). A row that already holds exactly this write — its
  // status, rendition, path and sha256, stamped done at this write's time — is that write, committed: nothing stores
  // a file over a row in its final state without first moving it out of it (a claim queues it, an edit wants it
  // again, verify clears its path), so no other write can have left it so. The replay adds no bytes (and, its path
  // unchanged, no history row), and answers what the row held before the write from the history row the write made.
  const { rows } = await sql<Held & { id: string }>`
WITH input AS (SELECT * FROM ${recordset(input, columns)}),
old AS (
  SELECT d.id, d.status, d.rendition, d.path, d.sha256, d.size,
         (d.status = i.status AND d.rendition = i.rendition AND d.path = i.path AND d.sha256 = i.sha256 AND d.done_at = i.at) AS replay
  FROM downloads d JOIN input i ON i.id = d.id ORDER BY d.id FOR UPDATE OF d
),
upd AS (
  UPDATE downloads d
  SET status = i.status, rendition = i.rendition, path = i.path, size = i.size, sha256 = i.sha256, mime = i.mime,
      width = i.width, height = i.height, source_etag = i.etag, source_filename = i.source_filename,
      source_size = i.source_size, degraded_reason = i.degraded_reason, next_attempt_at = i.next_attempt_at,
      is_partial = i.is_partial, partial_reason = i.partial_reason,
      bytes_transferred = d.bytes_transferred + CASE WHEN old.replay THEN 0 ELSE i.bytes END,
      queued_at = NULL, last_error = NULL, failures = 0, source = 'service',
      upgraded_at = CASE WHEN old.status = 'degraded' AND i.status = 'done' THEN i.at ELSE d.upgraded_at END,
      done_at = i.at, verified_at = i.at, updated_at = i.at
  FROM old JOIN input i ON i.id = old.id
  WHERE d.id = old.id
  RETURNING d.id, d.deviationid, d.status, d.rendition, d.path, d.sha256, d.size
),
hist AS (
  INSERT INTO download_history (download_id, deviationid, changed_at, change, old_status, old_rendition, old_path, old_sha256, old_size,
                                new_status, new_rendition, new_path, new_sha256, new_size, note)
  SELECT upd.id, upd.deviationid, i.at,
         CASE WHEN old.status = 'degraded' AND upd.status = 'done' THEN 'upgraded' ELSE 'replaced' END,
         old.status, old.rendition, old.path, old.sha256, old.size, upd.status, upd.rendition, upd.path, upd.sha256, upd.size, i.note
  FROM old JOIN upd ON upd.id = old.id JOIN input i ON i.id = old.id
  WHERE old.path IS NOT NULL AND (old.path IS DISTINCT FROM upd.path OR old.sha256 IS DISTINCT FROM upd.sha256)
),
-- A replay's row before the write it repeats: that write's history row (none when it replaced no file).
before AS (
  SELECT DISTINCT ON (x.download_id) x.download_id AS id, x.old_path, x.old_status, x.old_rendition
  FROM download_history x JOIN old ON old.id = x.download_id AND old.replay JOIN input i ON i.id = old.id
  WHERE x.changed_at = i.at AND x.new_path = i.path
  ORDER BY x.download_id, x.id DESC
)
SELECT old.id::text AS id,
       CASE WHEN old.replay THEN before.old_path ELSE old.path END AS old_path,
       CASE WHEN old.replay THEN COALESCE(before.old_status, old.status) ELSE old.status END AS old_status,
       CASE WHEN old.replay THEN before.old_rendition ELSE old.rendition END AS old_rendition
FROM old LEFT JOIN before ON before.id = old.id`.execute(kysely(db));
  return new Map(rows.map(({ id, ...held }) => [id, held]));
}

/** See DownloadRepository.markFileLost: the rows re-queued. */
export async function markLost(db: Queryable, args: { path: string; change: "missing" | "corrupt"; note: string; at: Date }): Promise<number> {
  const at = sql`${args.at}::timestamptz`;
  const note = sql`${text(args.note)}::text`;
  const { rows } = await sql<{ n: number }>`
WITH old AS (
  SELECT d.id, d.deviationid, d.status, d.rendition, d.path, d.sha256, d.size, v.is_deleted
  FROM downloads d JOIN deviations v ON v.deviationid = d.deviationid
  WHERE d.path = ${args.path}
  FOR UPDATE OF d
),
upd AS (
  UPDATE downloads d
  SET status = CASE WHEN old.is_deleted THEN 'failed'::download_status ELSE 'wanted'::download_status END,
      path = NULL, sha256 = NULL, size = NULL, rendition = NULL, degraded_reason = NULL, is_partial = false, partial_reason = NULL,
      next_attempt_at = NULL, queued_at = NULL, done_at = NULL, verified_at = ${at}, updated_at = ${at}, last_error = ${note}, failures = 0
  FROM old
  WHERE d.id = old.id
  RETURNING d.id, old.is_deleted
),
hist AS (
  INSERT INTO download_history (download_id, deviationid, changed_at, change, old_status, old_rendition, old_path, old_sha256, old_size, new_status, note)
  SELECT old.id, old.deviationid, ${at}, ${args.change}::text, old.status, old.rendition, old.path, old.sha256, old.size,
         CASE WHEN old.is_deleted THEN 'failed'::download_status ELSE 'wanted'::download_status END, ${note}
  FROM old
)
SELECT count(*) FILTER (WHERE NOT is_deleted)::int AS n FROM upd`.execute(kysely(db));
  return rows[0]?.n ?? 0;
}
