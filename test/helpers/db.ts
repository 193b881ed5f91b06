// A fresh database per test file, copied from the migrated template. Its name carries the run's prefix
// (test/helpers/global-setup.ts), and the run's end drops them all: a DROP DATABASE forces a checkpoint on
// PostgreSQL 15 (pg_stat_bgwriter's checkpoints_req counts one a drop), 1–3 s a file while the other worker writes.
import { randomBytes } from "node:crypto";
import { inject } from "vitest";
import { connectPg, quoteIdent } from "../../src/db/connect.ts";
import { withDatabase } from "../../src/db/pg-fields.ts";
import { createPgPool, type PgPool } from "../../src/db/connect.ts";
import { TEST_PG_URL } from "./env.ts";

export type TestDatabase = {
  url: string;
  name: string;
  /** A pool of its own on the database (the services of a test open theirs). */
  pool: PgPool;
  drop(): Promise<void>;
};

export async function createTestDatabase(): Promise<TestDatabase> {
  const template = inject("templateDatabase");
  const name = `${inject("testDatabasePrefix")}${randomBytes(6).toString("hex")}`;
  const admin = await connectPg(TEST_PG_URL);
  try {
    await admin.query(`CREATE DATABASE ${quoteIdent(name)} TEMPLATE ${quoteIdent(template)}`);
  } finally {
    await admin.end();
  }
  const url = withDatabase(TEST_PG_URL, name);
  const pool = createPgPool(url);
  return {
    url,
    name,
    pool,
    /** Ends the pool; the database itself goes at the run's end, with the run's others. */
    async drop() {
      await pool.end();
    },
  };
}
