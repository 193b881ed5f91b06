// Whether a table exists, read from the catalogs' rows (an MVCC scan), never through to_regclass or a query of the
// table itself. A name a session looked up and did not find stays "not found" in that session's catalog cache until
// it next takes a relation lock; an advisory lock takes none, so a CREATE SCHEMA IF NOT EXISTS made under one then
// meets the schema another process has just made: a unique violation on pg_namespace (175 of 240 starts, 4 at once,
// when the coordination tables' start first read their version table; 0 with this check instead).
import { kysely, sql } from "./kysely.ts";
import type { Queryable } from "./with-transaction.ts";

export async function tableExists(q: Queryable, schema: string, table: string): Promise<boolean> {
  const { rows } = await sql<{ made: boolean }>`
    SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = ${schema} AND c.relname = ${table}) AS made`.execute(kysely(q));
  return rows[0]?.made === true;
}
