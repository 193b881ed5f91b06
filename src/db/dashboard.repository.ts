// What the dashboard asks PostgreSQL itself (its pages read through the status, search and archive-browser
// read-models): whether the database answers, for /healthz; when a sync run last finished, for /api/activity.
import type { Queryable } from "./with-transaction.ts";

export class DashboardRepository {
  constructor(private readonly db: Queryable) {}

  /** Resolves when PostgreSQL answers a trivial query; rejects with its error otherwise. */
  async ping(): Promise<void> {
    await this.db.query("SELECT 1");
  }

  /** When the latest sync run of any source finished (null before the first). */
  async lastSyncRunAt(): Promise<Date | null> {
    const { rows } = await this.db.query<{ at: Date | null }>("SELECT max(last_run_at) AS at FROM sync_sources");
    return rows[0]?.at ?? null;
  }
}
