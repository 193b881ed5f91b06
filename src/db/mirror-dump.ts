// A dump of dvault's mirror through the driver (backup format 2, src/backup/backup.ts): one connection holding one
// `REPEATABLE READ READ ONLY` transaction, so the migration list, the tables' shapes and every table's rows are
// read from one snapshot, however long the copy takes and whatever a worker writes meanwhile.
import { connectPg, databaseNotReady } from "./connect.ts";
import { type CopyOutStream, copyOut } from "./copy-stream.ts";
import { copyStatement, LEDGER, type TableShape, tableShapes } from "./mirror-tables.ts";

export type MirrorDump = {
  /** The finished migrations of Prisma's ledger, by name. */
  migrations: string[];
  tables: TableShape[];
  /** One table's rows in COPY's text format; the next table only once this one has ended. */
  copy(table: TableShape): CopyOutStream;
  close(): Promise<void>;
};

/**
 * Opens the snapshot. A database that does not exist, or has no ledger, is refused with the one "run dvault
 * migrate" line (as listFinishedMigrations does); one that is behind is not.
 */
export async function openMirrorDump(databaseUrl: string): Promise<MirrorDump> {
  const client = await connectPg(databaseUrl);
  try {
    await client.query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
    const ledger = await client.query("SELECT to_regclass($1) IS NOT NULL AS present", [LEDGER]);
    if (!(ledger.rows[0] as { present: boolean }).present) throw databaseNotReady(databaseUrl, "has no dvault schema yet");
    const finished = await client.query(
      `SELECT migration_name FROM ${LEDGER} WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL ORDER BY migration_name`,
    );
    const migrations = (finished.rows as Array<{ migration_name: string }>).map((r) => r.migration_name);
    const tables = await tableShapes(client);
    return {
      migrations,
      tables,
      copy: (table) => copyOut(client, copyStatement(table, "TO STDOUT")),
      // A read-only transaction has nothing to commit: the connection is closed, a COPY still running with it.
      close: () => client.end(),
    };
  } catch (err) {
    await client.end().catch(() => undefined);
    throw err;
  }
}
