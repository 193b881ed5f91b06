// Runs once per test run: migrates a template database named after a hash of the migrations, so each
// medium test file can copy it (CREATE DATABASE ... TEMPLATE) instead of migrating again.
import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import type { TestProject } from "vitest/node";
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

export default async function setup({ provide, config }: TestProject) {
  // The order the tests run in (vitest.config.ts): printed first, so a failure that depends on it can be replayed.
  if (config.sequence.shuffle) {
    const seed = config.sequence.seed;
    console.log(`test order seed: ${seed} (replay: DVAULT_TEST_SEED=${seed} npm test)`);
  }
  // Templates of other migration sets are left alone: another checkout's run may be copying from one.
  const template = TEMPLATE_DB_PREFIX + migrationsHash();
  try {
    await migrate(withDatabase(TEST_PG_URL, template), { createDatabase: true });
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
