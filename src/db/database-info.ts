// What backup and restore ask of a database before they touch it: which migrations it holds, whether it is empty.
import { connectPg, databaseNotReady } from "./connect.ts";
import { kysely, sql } from "./kysely.ts";

/**
 * The two tables outside dvault's schema (src/db/schema.ts) read here, with the columns read: Prisma's
 * migration ledger (written by `prisma migrate`, never by dvault) and PostgreSQL's catalog of tables.
 */
type Outside = {
  _prisma_migrations: { migration_name: string; finished_at: Date | null };
  pg_tables: { schemaname: string };
};

/**
 * The finished migrations of Prisma's ledger, by name (a backup's manifest records them). A database that does
 * not exist, or has no ledger, is refused with the one "run dvault migrate" line; one that is behind is not (a
 * backup before an upgrade is what a careful person takes).
 */
export async function listFinishedMigrations(databaseUrl: string): Promise<string[]> {
  const client = await connectPg(databaseUrl);
  try {
    const db = kysely(client).withTables<Outside>();
    const ledger = await db.selectNoFrom(sql<boolean>`to_regclass('_prisma_migrations') IS NOT NULL`.as("present")).executeTakeFirst();
    if (!ledger?.present) throw databaseNotReady(databaseUrl, "has no dvault schema yet");
    const rows = await db.selectFrom("_prisma_migrations").select("migration_name").where("finished_at", "is not", null).orderBy("migration_name").execute();
    return rows.map((r) => r.migration_name);
  } finally {
    await client.end();
  }
}

/** How many tables the public schema holds: a restore goes only into a database with none. */
export async function countPublicTables(databaseUrl: string): Promise<number> {
  const client = await connectPg(databaseUrl);
  try {
    const row = await kysely(client)
      .withTables<Outside>()
      .selectFrom("pg_tables")
      .select(sql<number>`count(*)::int`.as("n"))
      .where("schemaname", "=", "public")
      .executeTakeFirst();
    return row?.n ?? 0;
  } finally {
    await client.end();
  }
}
