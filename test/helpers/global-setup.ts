// Runs once per test run: migrates a template database named after a hash of the migrations, so each
// medium test file can copy it (CREATE DATABASE ... TEMPLATE) instead of migrating again.
import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { connectPg, quoteIdent } from "../../src/db/connect.ts";
import { migrate } from "../../src/db/migrate.ts";
import { withDatabase } from "../../src/db/pg-fields.ts";
import { TEMPLATE_DB_PREFIX, TEST_PG_URL } from "./env.ts";

function migrationsHash(): string {
  const root = path.resolve("prisma/migrations");
  const hash = createHash("sha256");
  for (const dir of readdirSync(root).sort()) {
    if (dir.endsWith(".toml")) continue;
    hash.update(dir);
    hash.update(readFileSync(path.join(root, dir, "migration.sql")));
  }
  return hash.digest("hex").slice(0, 12);
}

export default async function setup({ provide }: { provide: (key: string, value: unknown) => void }) {
  const template = TEMPLATE_DB_PREFIX + migrationsHash();
  const admin = await connectPg(TEST_PG_URL);
  try {
    const stale = await admin.query<{ datname: string }>(
      "SELECT datname FROM pg_database WHERE datname LIKE $1 AND datname <> $2",
      [TEMPLATE_DB_PREFIX + "%", template],
    );
    // Templates of older migration sets; test databases are dropped by their own files (other runs may be live).
    for (const row of stale.rows) {
      await admin.query(`DROP DATABASE IF EXISTS ${quoteIdent(row.datname)}`).catch(() => undefined);
    }
  } finally {
    await admin.end();
  }
  try {
    await migrate(withDatabase(TEST_PG_URL, template));
  } catch (err) {
    // A failed migration is recorded in the template and would block every later run (P3009): start over next time.
    const admin2 = await connectPg(TEST_PG_URL);
    await admin2.query(`DROP DATABASE IF EXISTS ${quoteIdent(template)} WITH (FORCE)`).catch(() => undefined);
    await admin2.end();
    throw err;
  }
  provide("templateDatabase", template);
}

declare module "vitest" {
  export interface ProvidedContext {
    templateDatabase: string;
  }
}
