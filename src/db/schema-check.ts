// Whether the database DATABASE_URL names is dvault's: it exists and holds every migration this dvault ships.
// Every command but `dvault migrate` opens the database through here (createServices, the auth commands,
// search), so a typo in DATABASE_URL or a database never migrated is refused with one line and exit code 3
// (src/errors.ts#DatabaseNotReadyError) before anything is read, written or spent — and nothing creates a
// database as a side effect: only `dvault migrate` does (src/db/migrate.ts).
import { readdir } from "node:fs/promises";
import { PACKAGE_ROOT } from "../version.ts";
import { connectPg, databaseNotReady } from "./connect.ts";
import { kysely, sql } from "./kysely.ts";
import path from "node:path";

type PgClient = Awaited<ReturnType<typeof connectPg>>;

/** The names of the migrations under prisma/migrations, sorted (undefined when this install has none to compare). */
export async function shippedMigrations(): Promise<string[] | undefined> {
  try {
    const entries = await readdir(path.join(PACKAGE_ROOT, "prisma/migrations"), { withFileTypes: true });
    return entries
      .filter((e) => e.isDirectory())
      .map((e) => e.name)
      .sort();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
}

/**
 * A connection to the database, once it is known to exist and to hold every shipped migration (Prisma's own
 * ledger, `_prisma_migrations`, says which finished); otherwise the one-line DatabaseNotReadyError. A database with
 * no ledger has no dvault schema at all.
 */
export async function connectReadyDatabase(databaseUrl: string): Promise<PgClient> {
  const shipped = await shippedMigrations();
  const client = await connectPg(databaseUrl);
  try {
    // Prisma's ledger is Prisma's own table, outside dvault's schema (src/db/schema.ts): its one column read here is typed here.
    const ledger = await sql<{ present: boolean }>`SELECT to_regclass('_prisma_migrations') IS NOT NULL AS present`.execute(kysely(client));
    const applied = ledger.rows[0]?.present
      ? new Set(
          (
            await sql<{ migration_name: string }>`
              SELECT migration_name FROM _prisma_migrations WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL`.execute(kysely(client))
          ).rows.map((r) => r.migration_name),
        )
      : new Set<string>();
    if (applied.size === 0) throw databaseNotReady(databaseUrl, "has no dvault schema yet");
    const pending = (shipped ?? []).filter((name) => !applied.has(name));
    if (pending.length > 0) {
      throw databaseNotReady(databaseUrl, `is older than this dvault (${pending.length} migration(s) not applied, the newest ${pending.at(-1)})`);
    }
    return client;
  } catch (err) {
    await client.end().catch(() => undefined);
    throw err;
  }
}

/** Throws the one-line DatabaseNotReadyError unless the database exists and holds every shipped migration. */
export async function assertDatabaseReady(databaseUrl: string): Promise<void> {
  const client = await connectReadyDatabase(databaseUrl);
  await client.end().catch(() => undefined);
}
