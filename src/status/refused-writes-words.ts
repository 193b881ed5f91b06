// The words `dvault status` and the dashboard's overview share for a database that refuses writes (a standby, read-only
// by default): nothing is archived while it lasts and the worker's jobs wait for it without spending attempts
// (src/queue/outage.ts), so both open with what to do (docs/status.md).
import type { StatusReport } from "./schema.ts";

/** null while the database takes writes; otherwise why nothing is archived, and what to do. */
export function refusedWritesLine({ refusesWrites }: StatusReport["database"]): string | null {
  if (!refusesWrites) return null;
  const what =
    refusesWrites === "standby"
      ? "the database is a standby (in recovery): point DATABASE_URL at the primary, or promote it"
      : "the database is read-only (default_transaction_read_only is on): turn it off";
  return `PostgreSQL refuses writes, so nothing is archived and the worker's jobs wait without spending attempts; ${what}`;
}
