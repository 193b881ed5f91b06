// What the dashboard asks PostgreSQL itself (its pages read through the status, search and archive-browser
// read-models): whether the database answers, for /healthz; when a sync run last finished, for /api/activity.
import { kysely, sql } from "./kysely.ts";
import type { Queryable } from "./with-transaction.ts";

export class DashboardRepository {
  constructor(private readonly db: Queryable) {}

  /** Resolves when PostgreSQL answers a trivial query; rejects with its error otherwise. */
  async ping(): Promise<void> {
    await sql`SELECT 1`.execute(kysely(this.db));
  }

  /** When the latest sync run of any source finished (null before the first). */
  async lastSyncRunAt(): Promise<Date | null> {
    const row = await kysely(this.db)
      .selectFrom("sync_sources")
      .select((eb) => eb.fn.max("last_run_at").as("at"))
      .executeTakeFirst();
    return row?.at ?? null;
  }
}
