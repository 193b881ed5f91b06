// What backup and restore ask of a database before they touch it: which migrations it holds, whether it is empty.
import { connectPg, databaseNotReady } from "./connect.ts";

/**
 * The finished migrations of Prisma's ledger, by name (a backup's manifest records them). A database that does
 * not exist, or has no ledger, is refused with the one "run dvault migrate" line; one that is behind is not (a
 * backup before an upgrade is what a careful person takes).
 */
export async function listFinishedMigrations(databaseUrl: string): Promise<string[]> {
  const client = await connectPg(databaseUrl);
  try {
    const ledger = await client.query<{ present: boolean }>("SELECT to_regclass('_prisma_migrations') IS NOT NULL AS present");
    if (!ledger.rows[0]?.present) throw databaseNotReady(databaseUrl, "has no dvault schema yet");
    const { rows } = await client.query<{ migration_name: string }>(
      "SELECT migration_name FROM _prisma_migrations WHERE finished_at IS NOT NULL ORDER BY migration_name",
    );
    return rows.map((r) => r.migration_name);
  } finally {
    await client.end();
  }
}

/** How many tables the public schema holds: a restore goes only into a database with none. */
export async function countPublicTables(databaseUrl: string): Promise<number> {
  const client = await connectPg(databaseUrl);
  try {
    const { rows } = await client.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'public'");
    return rows[0]?.n ?? 0;
  } finally {
    await client.end();
  }
}
