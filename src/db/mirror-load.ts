// Loading a dump of format 2 (src/backup/restore.ts) into an empty database. First the backup's migrations are
// applied, each in a transaction of its own with its row of Prisma's ledger (their SQL as `prisma migrate deploy`
// runs it, the ledger as Prisma writes it, so a later `dvault migrate` applies only what came after). Not all in
// one transaction: a value `ALTER TYPE … ADD VALUE` adds cannot be used before it commits, and a later migration
// uses one (20261124010000_artist_states). Then, in ONE transaction, the tables' shapes are read back for the caller
// to compare with the manifest, every table is loaded with COPY … FROM STDIN with its own triggers off (the rows
// come as they were, search documents included), and the sequences are set past the loaded ids. Closed without a
// commit, it rolls back and drops what the migrations made (the objects of the public schema that were not there
// before), so a database that existed is left as it was found.
import { createHash, randomUUID } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import type pg from "pg";
import { PACKAGE_ROOT } from "../version.ts";
import { connectPg, quoteIdent } from "./connect.ts";
import { type CopyInStream, copyIn } from "./copy-stream.ts";
import { copyStatement, LEDGER, loadOrder, resetSequences, type TableShape, tableShapes } from "./mirror-tables.ts";

const MIGRATIONS_DIR = path.join(PACKAGE_ROOT, "prisma", "migrations");

/** The migrations this dvault ships (prisma/migrations), by name, in the order they apply. */
export async function knownMigrations(): Promise<string[]> {
  const entries = await readdir(MIGRATIONS_DIR, { withFileTypes: true });
  return entries
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();
}

/** Prisma's ledger as `prisma migrate deploy` creates it (its schema engine's DDL for PostgreSQL). */
const LEDGER_DDL = `CREATE TABLE ${LEDGER} (
  id VARCHAR(36) PRIMARY KEY NOT NULL,
  checksum VARCHAR(64) NOT NULL,
  finished_at TIMESTAMPTZ,
  migration_name VARCHAR(255) NOT NULL,
  logs TEXT,
  rolled_back_at TIMESTAMPTZ,
  started_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  applied_steps_count INTEGER NOT NULL DEFAULT 0
)`;

/** `names` applied in order, each in its own transaction with its ledger row and the checksum Prisma records (sha256 of its file). */
async function applyMigrations(client: pg.ClientBase, names: string[]): Promise<void> {
  await client.query(LEDGER_DDL);
  for (const name of [...names].sort()) {
    const sql = await readFile(path.join(MIGRATIONS_DIR, name, "migration.sql"));
    await client.query("BEGIN");
    await client.query(sql.toString("utf8"));
    await client.query(
      `INSERT INTO ${LEDGER} (id, checksum, finished_at, migration_name, started_at, applied_steps_count) VALUES ($1, $2, now(), $3, now(), 1)`,
      [randomUUID(), createHash("sha256").update(sql).digest("hex"), name],
    );
    await client.query("COMMIT");
  }
}

/** The objects of the public schema a migration can make (relations, functions, types), by oid. */
const PUBLIC_OBJECTS = `SELECT c.oid::int8::text AS oid FROM pg_class c WHERE c.relnamespace = 'public'::regnamespace
  UNION ALL SELECT p.oid::int8::text FROM pg_proc p WHERE p.pronamespace = 'public'::regnamespace
  UNION ALL SELECT t.oid::int8::text FROM pg_type t WHERE t.typnamespace = 'public'::regnamespace`;

/** What to drop, first to last, of the objects not in `before`: tables and views (their sequences, indexes and triggers with them), lone sequences, functions, types. */
const NEW_OBJECTS = `SELECT 'DROP ' || CASE c.relkind WHEN 'S' THEN 'SEQUENCE' WHEN 'v' THEN 'VIEW' WHEN 'm' THEN 'MATERIALIZED VIEW' ELSE 'TABLE' END
    || ' IF EXISTS ' || format('%I', c.relname) || ' CASCADE' AS stmt, CASE c.relkind WHEN 'S' THEN 2 ELSE 1 END AS step
  FROM pg_class c WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p', 'v', 'm', 'S') AND NOT (c.oid::int8::text = ANY($1))
  UNION ALL SELECT 'DROP FUNCTION IF EXISTS ' || p.oid::regprocedure::text || ' CASCADE', 3
  FROM pg_proc p WHERE p.pronamespace = 'public'::regnamespace AND NOT (p.oid::int8::text = ANY($1))
  UNION ALL SELECT 'DROP TYPE IF EXISTS ' || format('%I', t.typname) || ' CASCADE', 4
  FROM pg_type t WHERE t.typnamespace = 'public'::regnamespace AND t.typtype IN ('e', 'd', 'c') AND t.typrelid = 0 AND NOT (t.oid::int8::text = ANY($1))
  ORDER BY step`;

/** Drops what was made since `before` (PUBLIC_OBJECTS' oids): the database as a refused restore found it. */
async function dropNewObjects(client: pg.ClientBase, before: string[]): Promise<void> {
  const { rows } = await client.query(NEW_OBJECTS, [before]);
  for (const r of rows as Array<{ stmt: string }>) await client.query(r.stmt);
}

export type MirrorLoad = {
  /** The tables the migrations made, with their columns: what the manifest must describe. */
  tables: TableShape[];
  /** The table names in an order foreign keys allow. */
  order: string[];
  copy(table: TableShape): CopyInStream;
  /** Sequences set past the loaded ids and the tables' triggers on again: the load is complete. */
  finish(): Promise<void>;
  commit(): Promise<void>;
  /** Closes; before a commit, rolls back and drops what the migrations made. Safe to call twice or on a broken connection. */
  close(): Promise<void>;
};

/** Opens the transaction on `databaseUrl` (an empty database) and applies `migrations` in it. */
export async function openMirrorLoad(databaseUrl: string, migrations: string[]): Promise<MirrorLoad> {
  const client = await connectPg(databaseUrl);
  let committed = false;
  let closed = false;
  const before = ((await client.query(PUBLIC_OBJECTS)).rows as Array<{ oid: string }>).map((r) => r.oid);
  const close = async () => {
    if (closed) return;
    closed = true;
    if (!committed) {
      await client.query("ROLLBACK").catch(() => undefined);
      await dropNewObjects(client, before).catch(() => undefined);
    }
    await client.end().catch(() => undefined);
  };
  try {
    await applyMigrations(client, migrations);
    await client.query("BEGIN");
    const tables = await tableShapes(client);
    const order = await loadOrder(
      client,
      tables.map((t) => t.name),
    );
    // The tables were made in this transaction, so they are ours to alter; foreign keys' own triggers stay on.
    for (const t of tables) await client.query(`ALTER TABLE ${quoteIdent(t.name)} DISABLE TRIGGER USER`);
    return {
      tables,
      order,
      copy: (table) => copyIn(client, copyStatement(table, "FROM STDIN")),
      async finish() {
        await resetSequences(client);
        for (const t of tables) await client.query(`ALTER TABLE ${quoteIdent(t.name)} ENABLE TRIGGER USER`);
      },
      async commit() {
        await client.query("COMMIT");
        committed = true;
      },
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}
