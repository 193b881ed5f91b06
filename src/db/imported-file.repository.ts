// Files adopted from a folder on disk (`dvault import gallery-dl`): what the mirror knows of the deviations
// they show, the downloads rows they fill, and imported_files, the record of every adopted file. One
// statement per method.
import { kysely, sql } from "./kysely.ts";
import type { DeviationType, DownloadKind, DownloadStatus, Row } from "./schema.ts";
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

export type DownloadState = Pick<Row<"downloads">, "deviationid" | "kind" | "status" | "rendition" | "path" | "sha256">;

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
    // The index is the number at the end of the URL (docs/service-behaviour.md#gallery-dl-layout). A numeric
    // string that is not a whole number (a hostile raw) is left out rather than failing the cast.
    const index = sql<string | null>`substring(d.url from '-([0-9]{1,15})$')`;
    const rows = await kysely(this.db)
      .selectFrom("deviations as d")
      .leftJoin("users as u", "u.userid", "d.author_userid")
      .select(["d.deviationid", index.as("idx"), "d.title", "d.type", "u.username as author", "d.is_deleted", "d.is_downloadable", "d.download_filesize"])
      .select([
        sql<string | null>`CASE WHEN d.raw #>> '{content,filesize}' ~ '^[0-9]{1,15}$' THEN d.raw #>> '{content,filesize}' END`.as("content_filesize"),
        sql<unknown>`CASE WHEN jsonb_typeof(d.raw -> 'videos') = 'array' THEN d.raw -> 'videos' END`.as("videos"),
        sql<boolean>`COALESCE(d.raw ->> 'is_multi_media' = 'true', false)`.as("multi"),
        sql<unknown>`d.raw -> 'content'`.as("content"),
        sql<unknown>`d.raw -> 'preview'`.as("preview"),
      ])
      .where((eb) =>
        eb.or([
          eb(index, "=", sql<string>`ANY(${args.indexes.map(String)}::text[])`),
          eb("d.deviationid", "=", sql<string>`ANY(${[...args.deviationids]}::text[])`),
        ]),
      )
      .execute();
    return rows.map((r) => ({
      deviationid: r.deviationid,
      index: r.idx === null ? null : Number(r.idx),
      title: r.title,
      type: r.type,
      author: r.author,
      isDeleted: r.is_deleted,
      isDownloadable: r.is_downloadable,
      downloadFilesize: r.download_filesize === null ? null : Number(r.download_filesize),
      contentFilesize: r.content_filesize === null ? null : Number(r.content_filesize),
      videos: videos(r.videos),
      isMultiMedia: r.multi,
      announced: dimensions(r.content) ?? dimensions(r.preview),
    }));
  }

  /** The downloads rows of these deviations, and the files imported for them before (by sha256). */
  async findImportTargets(deviationids: readonly string[]): Promise<{ rows: DownloadState[]; imported: Array<{ deviationid: string; sha256: string }> }> {
    if (deviationids.length === 0) return { rows: [], imported: [] };
    const ids = sql<string>`ANY(${[...deviationids]}::text[])`;
    const rows = await kysely(this.db)
      .selectFrom("downloads")
      .select([sql<"row" | "imported">`'row'`.as("kind"), "deviationid", sql<DownloadKind | null>`kind::text`.as("dkind")])
      .select([sql<DownloadStatus | null>`status::text`.as("status"), "rendition", "path", "sha256"])
      .where("deviationid", "=", ids)
      .unionAll((db) =>
        db
          .selectFrom("imported_files")
          .select([sql<"row" | "imported">`'imported'`.as("kind"), "deviationid", sql<DownloadKind | null>`NULL`.as("dkind")])
          .select([sql<DownloadStatus | null>`NULL`.as("status"), "rendition", "path", "sha256"])
          .where("deviationid", "=", ids),
      )
      .execute();
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
    const r = await adopt(this.db, file, fill);
    if (!r) throw new Error(`adopting a file of ${file.deviationid} returned nothing`);
    return {
      filled: r.filled,
      old: r.old_status === null ? null : { status: r.old_status, rendition: r.old_rendition, path: r.old_path },
      recorded: r.recorded,
    };
  }

  /** Originals in the archive that an import brought (the digest's health section). */
  async countImportedOriginals(): Promise<number> {
    const row = await kysely(this.db)
      .selectFrom("downloads")
      .select(sql<number>`count(*)::int`.as("n"))
      .where("source", "=", "imported")
      .where("status", "=", "done")
      .where("rendition", "=", "original")
      .executeTakeFirst();
    return row?.n ?? 0;
  }

  /** Every archive path an imported file keeps alive, with its deviations (`dvault verify` checks them all). */
  async listImportedPaths(): Promise<Array<{ path: string; sha256: string; size: number; deviationids: string[]; records: number }>> {
    const rows = await kysely(this.db)
      .selectFrom("imported_files")
      .select(["path", "sha256", "size"])
      .select([sql<string[]>`array_agg(DISTINCT deviationid ORDER BY deviationid)`.as("deviationids"), sql<number>`count(*)::int`.as("records")])
      .groupBy(["path", "sha256", "size"])
      .orderBy("path")
      .execute();
    return rows.map((r) => ({ ...r, size: Number(r.size) }));
  }

  /** The archive no longer holds the bytes at `path` (verify --fix set them aside): its import records go. */
  async forgetImportedPath(path: string): Promise<number> {
    const result = await kysely(this.db).deleteFrom("imported_files").where("path", "=", path).executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}

/** The videos a raw announces, each with a quality and a whole size above zero (a hostile raw may say anything). */
function videos(raw: unknown): Array<{ quality: string; filesize: number }> {
  if (!Array.isArray(raw)) return [];
  return raw.flatMap((v: unknown) => {
    const o = v as { quality?: unknown; filesize?: unknown };
    const size = Number(o.filesize);
    return typeof o.quality === "string" && Number.isSafeInteger(size) && size > 0 ? [{ quality: o.quality, filesize: size }] : [];
  });
}

/** A rendition's width and height when both are whole numbers above zero (a hostile raw may say anything). */
function dimensions(image: unknown): { width: number; height: number } | null {
  const o = (image ?? {}) as { width?: unknown; height?: unknown };
  const width = Number(o.width);
  const height = Number(o.height);
  return Number.isSafeInteger(width) && Number.isSafeInteger(height) && width > 0 && height > 0 ? { width, height } : null;
}

/** What adopting a file did: whether it fills the row, what the row held, whether it is newly recorded. */
type Adopted = { filled: boolean; recorded: boolean; old_status: Row<"downloads">["status"] | null } & {
  [K in "rendition" | "path" as `old_${K}`]: Row<"downloads">[K];
};

// The row may be claimed by a downloader (queued_at): it is filled all the same, and the downloader then finds it
// done (the caller holds the file's download lock meanwhile).
async function adopt(db: Queryable, file: AdoptedFileRecord, fill: RowFill | null): Promise<Adopted | undefined> {
  const { deviationid, role, rendition, path, sha256, size, sourcePath, linked, evidence } = file;
  const at = sql`${file.at}::timestamptz`;
  const status = sql`${fill?.status ?? null}::download_status`;
  const stored = sql`COALESCE(${rendition}::text, 'original')`;
  const degradedReason = sql`${fill?.degradedReason ?? null}::text`;
  const nextAttemptAt = sql`${fill?.nextAttemptAt ?? null}::timestamptz`;
  const sourceFilename = sql`${fill?.sourceFilename ?? null}::text`;
  const isPartial = sql`${fill?.isPartial ?? false}::boolean`;
  const partialReason = sql`${fill?.partialReason ?? null}::text`;
  const { rows } = await sql<Adopted>`
WITH old AS (
  SELECT id, status, rendition, path, sha256, size FROM downloads WHERE deviationid = ${deviationid} AND kind = 'original' FOR UPDATE
),
allowed AS (
  SELECT ${fill !== null}::boolean AND (
    NOT EXISTS (SELECT 1 FROM old)
    OR EXISTS (SELECT 1 FROM old WHERE CASE WHEN ${role}::text = 'original' THEN NOT (status = 'done' AND rendition = 'original') ELSE path IS NULL END)
  ) AS ok
),
ins AS (
  INSERT INTO downloads (deviationid, kind, status, rendition, path, size, sha256, source_filename, degraded_reason, next_attempt_at,
                         is_partial, partial_reason, source, reason, created_at, updated_at, done_at, verified_at)
  SELECT ${deviationid}::text, 'original', ${status}, ${stored}, ${path}::text, ${size}::bigint, ${sha256}::text, ${sourceFilename}, ${degradedReason},
         ${nextAttemptAt}, ${isPartial}, ${partialReason}, 'imported', 'imported from a gallery-dl folder', ${at}, ${at}, ${at}, ${at}
  FROM allowed
  WHERE allowed.ok AND NOT EXISTS (SELECT 1 FROM old)
  RETURNING id
),
upd AS (
  UPDATE downloads d
  SET status = ${status}, rendition = ${stored}, path = ${path}, size = ${size}, sha256 = ${sha256}, mime = NULL, width = NULL, height = NULL,
      source_etag = NULL, source_filename = ${sourceFilename}, source_size = NULL, degraded_reason = ${degradedReason}, next_attempt_at = ${nextAttemptAt},
      is_partial = ${isPartial}, partial_reason = ${partialReason}, queued_at = NULL, last_error = NULL, failures = 0, source = 'imported',
      upgraded_at = CASE WHEN old.status = 'degraded' AND ${status} = 'done' THEN ${at} ELSE d.upgraded_at END,
      done_at = ${at}, verified_at = ${at}, updated_at = ${at}
  FROM old, allowed
  WHERE d.id = old.id AND allowed.ok
  RETURNING d.id
),
hist AS (
  INSERT INTO download_history (download_id, deviationid, changed_at, change, old_status, old_rendition, old_path, old_sha256, old_size,
                                new_status, new_rendition, new_path, new_sha256, new_size, note)
  SELECT old.id, ${deviationid}::text, ${at}, CASE WHEN old.status = 'degraded' AND ${status} = 'done' THEN 'upgraded' ELSE 'replaced' END,
         old.status, old.rendition, old.path, old.sha256, old.size, ${status}, ${stored}, ${path}::text, ${sha256}::text, ${size}::bigint,
         ${fill?.note ?? null}::text
  FROM old, upd
  WHERE old.path IS NOT NULL AND (old.path IS DISTINCT FROM ${path}::text OR old.sha256 IS DISTINCT FROM ${sha256}::text)
),
target AS (SELECT id FROM ins UNION ALL SELECT id FROM upd),
imp AS (
  INSERT INTO imported_files (deviationid, role, rendition, path, sha256, size, source_path, linked, download_id, evidence, imported_at)
  VALUES (${deviationid}, ${role}, ${rendition}, ${path}, ${sha256}, ${size}, ${sourcePath}, ${linked}, (SELECT id FROM target), ${evidence}, ${at})
  ON CONFLICT (deviationid, sha256) DO NOTHING
  RETURNING id
)
SELECT EXISTS (SELECT 1 FROM target) AS filled,
       (SELECT status FROM old) AS old_status, (SELECT rendition FROM old) AS old_rendition, (SELECT path FROM old) AS old_path,
       EXISTS (SELECT 1 FROM imp) AS recorded`.execute(kysely(db));
  return rows[0];
}
