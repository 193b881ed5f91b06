// Whether the database holds every migration this dvault ships: checked before a command spends something
// it cannot get back (a single-use refresh token or authorization code), so a missing table fails first.
import { readdir } from "node:fs/promises";
import path from "node:path";
import { UserError } from "../errors.ts";
import { PACKAGE_ROOT } from "../version.ts";
import { connectPg } from "./connect.ts";

const MIGRATE = "run `npx dvault migrate` first";

/** The names of the migrations under prisma/migrations (undefined when this install has none to compare). */
async function shippedMigrations(): Promise<string[] | undefined> {
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
 * Throws a one-line UserError unless every shipped migration is applied (Prisma's own ledger,
 * `_prisma_migrations`, says which finished). A database with no ledger has no dvault schema at all.
 */
export async function assertSchemaCurrent(databaseUrl: string): Promise<void> {
  const shipped = await shippedMigrations();
  const client = await connectPg(databaseUrl);
  let applied: Set<string>;
  try {
    const ledger = await client.query<{ present: boolean }>("SELECT to_regclass('_prisma_migrations') IS NOT NULL AS present");
    if (!ledger.rows[0]?.present) throw new UserError(`the database has no dvault schema yet: ${MIGRATE}`);
    const { rows } = await client.query<{ migration_name: string }>(
      "SELECT migration_name FROM _prisma_migrations WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL",
    );
    applied = new Set(rows.map((r) => r.migration_name));
  } finally {
    await client.end().catch(() => undefined);
  }
  if (applied.size === 0) throw new UserError(`the database has no dvault schema yet: ${MIGRATE}`);
  const pending = (shipped ?? []).filter((name) => !applied.has(name));
  if (pending.length > 0) {
    throw new UserError(`the database schema is older than this dvault (${pending.length} migration(s) not applied, the newest ${pending.at(-1)}): ${MIGRATE}`);
  }
}
