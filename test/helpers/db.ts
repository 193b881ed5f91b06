// A fresh database per test file, copied from the migrated template; dropped afterwards.
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
  const name = `dvault_t_${randomBytes(6).toString("hex")}`;
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
    async drop() {
      await pool.end();
      const admin2 = await connectPg(TEST_PG_URL);
      try {
        await admin2.query(`DROP DATABASE IF EXISTS ${quoteIdent(name)} WITH (FORCE)`);
      } finally {
        await admin2.end();
      }
    },
  };
}
