// The maintained counters of downloads (migration 20261129060000_download_counts) as status reads them, beside the
// same figures counted over the table as status counted them before: a test compares the two, which must be equal.
import { StatusRepository } from "../../src/db/status.repository.ts";
import type { Queryable } from "../../src/db/with-transaction.ts";

export type DownloadFigures = {
  /** Rows per status with the bytes of the stored ones (0 for the others), in status order. */
  byStatus: Array<{ status: string; n: number; bytes: number }>;
  /** Distinct stored files and their bytes. */
  stored: { files: number; bytes: number };
};

/** What `dvault status` reads: the counters. */
export async function keptDownloadFigures(db: Queryable): Promise<DownloadFigures> {
  const repo = new StatusRepository(db);
  const byStatus = (await repo.countDownloadsByStatus())
    .map((r) => ({ status: r.status, n: r.n, bytes: Number(r.bytes ?? 0) }))
    .sort((a, b) => a.status.localeCompare(b.status));
  const stored = await repo.storedArchive();
  return { byStatus, stored: { files: stored?.files ?? 0, bytes: Number(stored?.bytes ?? 0) } };
}

/** The same figures counted over downloads (the statements status ran before the counters). */
export async function countedDownloadFigures(db: Queryable): Promise<DownloadFigures> {
  const byStatus = await db.query<{ status: string; n: number; bytes: string | null }>(
    `SELECT status::text AS status, count(*)::int AS n, (sum(size) FILTER (WHERE status IN ('done', 'degraded')))::text AS bytes
     FROM downloads GROUP BY status`,
  );
  const stored = await db.query<{ files: number; bytes: string | null }>(
    `SELECT count(*)::int AS files, sum(size)::text AS bytes FROM (
       SELECT DISTINCT ON (path) path, size FROM downloads
       WHERE status IN ('done', 'degraded', 'not_downloadable') AND path IS NOT NULL ORDER BY path) s`,
  );
  return {
    byStatus: byStatus.rows.map((r) => ({ status: r.status, n: r.n, bytes: Number(r.bytes ?? 0) })).sort((a, b) => a.status.localeCompare(b.status)),
    stored: { files: stored.rows[0]?.files ?? 0, bytes: Number(stored.rows[0]?.bytes ?? 0) },
  };
}
