// What the dashboard asks PostgreSQL itself (its pages read through the status, search and archive-browser
// read-models): whether the database answers, for /healthz.
import type { Queryable } from "./with-transaction.ts";

export class DashboardRepository {
  constructor(private readonly db: Queryable) {}

  /** Resolves when PostgreSQL answers a trivial query; rejects with its error otherwise. */
  async ping(): Promise<void> {
    await this.db.query("SELECT 1");
  }
}
