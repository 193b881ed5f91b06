// The downloads table from the sync side: sync only says which files it wants; the download worker
// (issue 6) owns every later status.
import { jsonParam } from "./mirror-rows.ts";
import type { Queryable } from "./with-transaction.ts";

export type DownloadKind = "original" | "degraded" | "text";

export type WantedDownload = {
  deviationid: string;
  kind: DownloadKind;
  /** Higher first; default 0. */
  priority?: number;
  /** Why it is wanted, e.g. "own gallery", "favourite". */
  reason?: string | null;
};

export class DownloadRepository {
  constructor(private readonly db: Queryable) {}

  /**
   * Inserts a 'wanted' row per (deviation, kind) not already known; existing rows, whatever their status,
   * are left alone. The deviations must exist. Returns how many rows were new.
   */
  async markDownloadsWanted(rows: readonly WantedDownload[], at: Date = new Date()): Promise<number> {
    // One row per (deviation, kind): the highest priority asked for, the first reason given.
    const merged = new Map<string, { deviationid: string; kind: DownloadKind; priority: number; reason: string | null }>();
    for (const r of rows) {
      const key = `${r.deviationid}:${r.kind}`;
      const known = merged.get(key);
      merged.set(key, {
        deviationid: r.deviationid,
        kind: r.kind,
        priority: Math.max(known?.priority ?? -Infinity, r.priority ?? 0),
        reason: known?.reason ?? r.reason ?? null,
      });
    }
    const input = [...merged.values()];
    if (input.length === 0) return 0;
    const result = await this.db.query(MARK_WANTED, [jsonParam(input), at]);
    return result.rowCount ?? 0;
  }
}

const MARK_WANTED = `
INSERT INTO downloads (deviationid, kind, status, priority, reason, created_at, updated_at)
SELECT deviationid, kind, 'wanted', priority, reason, $2, $2
FROM jsonb_to_recordset($1::jsonb) AS x(deviationid text, kind download_kind, priority integer, reason text)
ORDER BY deviationid, kind
ON CONFLICT (deviationid, kind) DO NOTHING`;
