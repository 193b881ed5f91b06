// Files adopted from a folder on disk (`dvault import gallery-dl`): what the mirror knows of the deviations
// they show, the downloads rows they fill, and imported_files, the record of every adopted file. One
// statement per method.
import type { DownloadKind, DownloadStatus } from "./download.repository.ts";
import type { DeviationType } from "./mirror-rows.ts";
import type { Queryable } from "./with-transaction.ts";

/** What telling an original from a rendition needs to know about a deviation (docs/service-behaviour.md#gallery-dl-layout). */
export type ImportCandidate = {
  deviationid: string;
  /** The last number of its URL: what gallery-dl calls its index. */
  index: number | null;
  title: string | null;
  type: DeviationType | null;
  author: string | null;
  isDeleted: boolean;
  isDownloadable: boolean | null;
  /** The original's size as the service announces it. */
  downloadFilesize: number | null;
  /** The fullview's (`content`) size. */
  contentFilesize: number | null;
  videos: Array<{ quality: string; filesize: number }>;
  isMultiMedia: boolean;
  /** The dimensions the service announces for the work's picture: its `content`'s, else its `preview`'s. */
  announced: { width: number; height: number } | null;
};

export type DownloadState = {
  deviationid: string;
  kind: DownloadKind;
  status: DownloadStatus;
  rendition: string | null;
  path: string | null;
  sha256: string | null;
};

export type ImportedRole = "original" | "rendition" | "extra_image";

export type AdoptedFileRecord = {
  deviationid: string;
  role: ImportedRole;
  rendition: string | null;
  path: string;
  sha256: string;
  size: number;
  sourcePath: string;
  linked: boolean;
  evidence: string;
  at: Date;
};

/** How the file is to fill the deviation's downloads row (kind original). */
export type RowFill = {
  status: Extract<DownloadStatus, "done" | "degraded" | "not_downloadable">;
  /** For degraded and not_downloadable: why the original is not what is stored. */
  degradedReason: string | null;
  /** For degraded: when the original is wanted again (now: it is due at the next run). */
  nextAttemptAt: Date | null;
  sourceFilename: string;
  isPartial: boolean;
  partialReason: string | null;
  note: string;
};

export type AdoptResult = {
  /** The file now fills the deviation's downloads row. */
  filled: boolean;
  /** What the row held before (its file, when it had one: may now be unreferenced). */
  old: { status: DownloadStatus; rendition: string | null; path: string | null } | null;
  /** A new imported_files row (false: this file of this deviation was recorded before). */
  recorded: boolean;
};

export class ImportedFileRepository {
  constructor(private readonly db: Queryable) {}

  /** The mirror's deviations with one of these indexes (the number ending their URL) or ids. */
  async findImportCandidates(args: { indexes: readonly number[]; deviationids: readonly string[] }): Promise<ImportCandidate[]> {
    if (args.indexes.length === 0 && args.deviationids.length === 0) return [];
    const { rows } = await this.db.query<CandidateRow>(FIND_CANDIDATES, [args.indexes.map(String), [...args.deviationids]]);
    return rows.map(toCandidate);
  }

  /** The downloads rows of these deviations, and the files imported for them before (by sha256). */
  async findImportTargets(deviationids: readonly string[]): Promise<{ rows: DownloadState[]; imported: Array<{ deviationid: string; sha256: string }> }> {
    if (deviationids.length === 0) return { rows: [], imported: [] };
    const { rows } = await this.db.query<{
      kind: "row" | "imported";
      deviationid: string;
      dkind: DownloadKind | null;
      status: DownloadStatus | null;
      rendition: string | null;
      path: string | null;
      sha256: string | null;
    }>(FIND_TARGETS, [[...deviationids]]);
    return {
      rows: rows
        .filter((r) => r.kind === "row")
        .map((r) => ({
          deviationid: r.deviationid,
          kind: r.dkind as DownloadKind,
          status: r.status as DownloadStatus,
          rendition: r.rendition,
          path: r.path,
          sha256: r.sha256,
        })),
      imported: rows.filter((r) => r.kind === "imported" && r.sha256 !== null).map((r) => ({ deviationid: r.deviationid, sha256: r.sha256 as string })),
    };
  }

  /**
   * Records an adopted file and, with `fill`, makes it the file of the deviation's downloads row (created when
   * missing) — one statement. An original never replaces a stored original, and a rendition only fills a row
   * that holds no file: otherwise the file is recorded beside the row (imported_files only). The row's
   * source becomes "imported"; a replaced file is kept in download_history.
   */
  async adoptImportedFile(file: AdoptedFileRecord, fill: RowFill | null): Promise<AdoptResult> {
    const { rows } = await this.db.query<{
      filled: boolean;
      old_status: DownloadStatus | null;
      old_rendition: string | null;
      old_path: string | null;
      recorded: boolean;
    }>(ADOPT, [
      file.deviationid,
      file.role,
      file.rendition,
      file.path,
      file.sha256,
      file.size,
      file.sourcePath,
      file.linked,
      file.evidence,
      file.at,
      fill !== null,
      fill?.status ?? null,
      fill?.degradedReason ?? null,
      fill?.nextAttemptAt ?? null,
      fill?.sourceFilename ?? null,
      fill?.isPartial ?? false,
      fill?.partialReason ?? null,
      fill?.note ?? null,
    ]);
    const r = rows[0];
    if (!r) throw new Error(`adopting a file of ${file.deviationid} returned nothing`);
    return {
      filled: r.filled,
      old: r.old_status === null ? null : { status: r.old_status, rendition: r.old_rendition, path: r.old_path },
      recorded: r.recorded,
    };
  }

  /** Originals in the archive that an import brought (the digest's health section). */
  async countImportedOriginals(): Promise<number> {
    const { rows } = await this.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM downloads WHERE source = 'imported' AND status = 'done' AND rendition = 'original'`,
    );
    return rows[0]?.n ?? 0;
  }

  /** Every archive path an imported file keeps alive, with its deviations (`dvault verify` checks them all). */
  async listImportedPaths(): Promise<Array<{ path: string; sha256: string; size: number; deviationids: string[]; records: number }>> {
    const { rows } = await this.db.query<{ path: string; sha256: string; size: string; deviationids: string[]; records: number }>(
      `SELECT path, sha256, size, array_agg(DISTINCT deviationid ORDER BY deviationid) AS deviationids, count(*)::int AS records
       FROM imported_files GROUP BY path, sha256, size ORDER BY path`,
    );
    return rows.map((r) => ({ path: r.path, sha256: r.sha256, size: Number(r.size), deviationids: r.deviationids, records: r.records }));
  }

  /** The archive no longer holds the bytes at `path` (verify --fix set them aside): its import records go. */
  async forgetImportedPath(path: string): Promise<number> {
    const { rowCount } = await this.db.query(`DELETE FROM imported_files WHERE path = $1`, [path]);
    return rowCount ?? 0;
  }
}

type CandidateRow = {
  deviationid: string;
  idx: string | null;
  title: string | null;
  type: DeviationType | null;
  author: string | null;
  is_deleted: boolean;
  is_downloadable: boolean | null;
  download_filesize: string | null;
  content_filesize: string | null;
  videos: unknown;
  multi: boolean;
  content: unknown;
  preview: unknown;
};

function toCandidate(r: CandidateRow): ImportCandidate {
  const videos = Array.isArray(r.videos)
    ? r.videos.flatMap((v: unknown) => {
        const o = v as { quality?: unknown; filesize?: unknown };
        const size = Number(o.filesize);
        return typeof o.quality === "string" && Number.isSafeInteger(size) && size > 0 ? [{ quality: o.quality, filesize: size }] : [];
      })
    : [];
  return {
    deviationid: r.deviationid,
    index: r.idx === null ? null : Number(r.idx),
    title: r.title,
    type: r.type,
    author: r.author,
    isDeleted: r.is_deleted,
    isDownloadable: r.is_downloadable,
    downloadFilesize: r.download_filesize === null ? null : Number(r.download_filesize),
    contentFilesize: r.content_filesize === null ? null : Number(r.content_filesize),
    videos,
    isMultiMedia: r.multi,
    announced: dimensions(r.content) ?? dimensions(r.preview),
  };
}

/** A rendition's width and height when both are whole numbers above zero (a hostile raw may say anything). */
function dimensions(image: unknown): { width: number; height: number } | null {
  const o = (image ?? {}) as { width?: unknown; height?: unknown };
  const width = Number(o.width);
  const height = Number(o.height);
  return Number.isSafeInteger(width) && Number.isSafeInteger(height) && width > 0 && height > 0 ? { width, height } : null;
}

// The index is the number at the end of the URL (docs/service-behaviour.md#gallery-dl-layout). A numeric
// string that is not a whole number (a hostile raw) is left out rather than failing the cast.
const FIND_CANDIDATES = `
SELECT d.deviationid, substring(d.url from '-([0-9]{1,15})$') AS idx, d.title, d.type, u.username AS author, d.is_deleted,
       d.is_downloadable, d.download_filesize,
       CASE WHEN d.raw #>> '{content,filesize}' ~ '^[0-9]{1,15}$' THEN d.raw #>> '{content,filesize}' END AS content_filesize,
       CASE WHEN jsonb_typeof(d.raw -> 'videos') = 'array' THEN d.raw -> 'videos' END AS videos,
       COALESCE(d.raw ->> 'is_multi_media' = 'true', false) AS multi,
       d.raw -> 'content' AS content, d.raw -> 'preview' AS preview
FROM deviations d
LEFT JOIN users u ON u.userid = d.author_userid
WHERE substring(d.url from '-([0-9]{1,15})$') = ANY($1::text[]) OR d.deviationid = ANY($2::text[])`;

const FIND_TARGETS = `
SELECT 'row' AS kind, deviationid, kind::text AS dkind, status::text AS status, rendition, path, sha256 FROM downloads WHERE deviationid = ANY($1::text[])
UNION ALL
SELECT 'imported', deviationid, NULL, NULL, rendition, path, sha256 FROM imported_files WHERE deviationid = ANY($1::text[])`;

// $1 deviationid, $2 role, $3 rendition, $4 path, $5 sha256, $6 size, $7 source_path, $8 linked, $9 evidence,
// $10 at, $11 fill?, $12 status, $13 degraded_reason, $14 next_attempt_at, $15 source_filename, $16 is_partial,
// $17 partial_reason, $18 the history note. The row may be claimed by a downloader (queued_at): it is filled all
// the same, and the downloader then finds it done (the caller holds the file's download lock meanwhile).
const ADOPT = `
WITH old AS (
  SELECT id, status, rendition, path, sha256, size FROM downloads WHERE deviationid = $1 AND kind = 'original' FOR UPDATE
),
allowed AS (
  SELECT $11::boolean AND (
    NOT EXISTS (SELECT 1 FROM old)
    OR EXISTS (SELECT 1 FROM old WHERE CASE WHEN $2 = 'original' THEN NOT (status = 'done' AND rendition = 'original') ELSE path IS NULL END)
  ) AS ok
),
ins AS (
  INSERT INTO downloads (deviationid, kind, status, rendition, path, size, sha256, source_filename, degraded_reason, next_attempt_at,
                         is_partial, partial_reason, source, reason, created_at, updated_at, done_at, verified_at)
  SELECT $1, 'original', $12::download_status, COALESCE($3, 'original'), $4, $6, $5, $15, $13, $14, $16, $17, 'imported',
         'imported from a gallery-dl folder', $10, $10, $10, $10
  FROM allowed
  WHERE allowed.ok AND NOT EXISTS (SELECT 1 FROM old)
  RETURNING id
),
upd AS (
  UPDATE downloads d
  SET status = $12::download_status, rendition = COALESCE($3, 'original'), path = $4, size = $6, sha256 = $5, mime = NULL, width = NULL, height = NULL,
      source_etag = NULL, source_filename = $15, source_size = NULL, degraded_reason = $13, next_attempt_at = $14,
      is_partial = $16, partial_reason = $17, queued_at = NULL, last_error = NULL, failures = 0, source = 'imported',
      upgraded_at = CASE WHEN old.status = 'degraded' AND $12::download_status = 'done' THEN $10 ELSE d.upgraded_at END,
      done_at = $10, verified_at = $10, updated_at = $10
  FROM old, allowed
  WHERE d.id = old.id AND allowed.ok
  RETURNING d.id
),
hist AS (
  INSERT INTO download_history (download_id, deviationid, changed_at, change, old_status, old_rendition, old_path, old_sha256, old_size,
                                new_status, new_rendition, new_path, new_sha256, new_size, note)
  SELECT old.id, $1, $10, CASE WHEN old.status = 'degraded' AND $12::download_status = 'done' THEN 'upgraded' ELSE 'replaced' END,
         old.status, old.rendition, old.path, old.sha256, old.size, $12::download_status, COALESCE($3, 'original'), $4, $5, $6, $18
  FROM old, upd
  WHERE old.path IS NOT NULL AND (old.path IS DISTINCT FROM $4 OR old.sha256 IS DISTINCT FROM $5)
),
target AS (SELECT id FROM ins UNION ALL SELECT id FROM upd),
imp AS (
  INSERT INTO imported_files (deviationid, role, rendition, path, sha256, size, source_path, linked, download_id, evidence, imported_at)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, (SELECT id FROM target), $9, $10)
  ON CONFLICT (deviationid, sha256) DO NOTHING
  RETURNING id
)
SELECT EXISTS (SELECT 1 FROM target) AS filled,
       (SELECT status FROM old) AS old_status, (SELECT rendition FROM old) AS old_rendition, (SELECT path FROM old) AS old_path,
       EXISTS (SELECT 1 FROM imp) AS recorded`;
