// What backup and restore ask of a database before they touch it: which migrations it holds, whether it is empty.
import { connectPg } from "./connect.ts";

/** The finished migrations of Prisma's ledger, by name (a backup's manifest records them). */
export async function listFinishedMigrations(databaseUrl: string): Promise<string[]> {
  const client = await connectPg(databaseUrl);
  try {
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
