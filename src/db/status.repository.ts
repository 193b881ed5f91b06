// The read model of `dvault status` and the dashboard's overview (src/status/collect.ts): counts and sums
// over downloads, the weekly allowance and the archive's stored files. One query per method; the caller
// decides what a missing table or column (a schema not migrated yet) means.
import type { Queryable } from "./with-transaction.ts";

/**
 * A downloads row `d` that only a new login can move: its account has no usable grant, or it belongs to
 * no account yet and no user account has one (src/downloads/run-once.ts claims nothing for them).
 */
const BLOCKED_ROW = `
  EXISTS (SELECT 1 FROM accounts a WHERE a.id = d.account_id AND a.state IN ('needs_reauth', 'revoked'))
  OR (d.account_id IS NULL AND EXISTS (SELECT 1 FROM accounts a WHERE a.kind = 'user')
      AND NOT EXISTS (SELECT 1 FROM accounts a WHERE a.kind = 'user' AND a.state NOT IN ('needs_reauth', 'revoked')))`;

const WAITING_FOR_LOGIN = `
SELECT count(*)::int AS rows, count(*) FILTER (WHERE d.status = 'failed')::int AS failed
FROM downloads d
WHERE (d.status IN ('wanted', 'queued') OR (d.status = 'failed' AND d.next_attempt_at IS NOT NULL)) AND (${BLOCKED_ROW})`;

export type DownloadStatusCount = { status: string; n: number; bytes: string | null };

export class StatusRepository {
  constructor(private readonly db: Queryable) {}

  /** Rows per download status, with the bytes of the stored ones (done, degraded) as text. */
  async countDownloadsByStatus(): Promise<DownloadStatusCount[]> {
    const { rows } = await this.db.query<DownloadStatusCount>(
      "SELECT status::text AS status, count(*)::int AS n, sum(size) FILTER (WHERE status IN ('done', 'degraded'))::text AS bytes FROM downloads GROUP BY status",
    );
    return rows;
  }

  /** When the first download deferred by the quota is tried again; null when none has a time. */
  async nextQuotaWindow(): Promise<Date | null> {
    const { rows } = await this.db.query<{ at: Date | null }>("SELECT min(next_attempt_at) AS at FROM downloads WHERE status = 'deferred_quota'");
    return rows[0]?.at ?? null;
  }

  /** Rows that only a new login can move, and how many of them failed. */
  async countWaitingForLogin(): Promise<{ rows: number; failed: number } | undefined> {
    return (await this.db.query<{ rows: number; failed: number }>(WAITING_FOR_LOGIN)).rows[0];
  }

  /** Failed rows retried on their own (src/downloads/retry.ts), and the first next attempt among them. */
  async countFailedRetrying(): Promise<{ n: number; at: Date | null } | undefined> {
    const { rows } = await this.db.query<{ n: number; at: Date | null }>(
      `SELECT count(*)::int AS n, min(d.next_attempt_at) AS at FROM downloads d
       WHERE d.status = 'failed' AND d.next_attempt_at IS NOT NULL AND NOT (${BLOCKED_ROW})`,
    );
    return rows[0];
  }

  /** Stored files and their bytes (as text); content-addressed files shared between downloads count once. */
  async storedArchive(): Promise<{ files: number; bytes: string | null } | undefined> {
    const { rows } = await this.db.query<{ files: number; bytes: string | null }>(
      `SELECT count(*)::int AS files, sum(size)::text AS bytes FROM (
         SELECT DISTINCT ON (path) path, size FROM downloads WHERE status IN ('done', 'degraded', 'not_downloadable') AND path IS NOT NULL
       ) stored`,
    );
    return rows[0];
  }
}
