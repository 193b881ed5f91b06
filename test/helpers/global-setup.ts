// Runs once per test run: settles the servers the run uses (test/helpers/test-servers.ts: an embedded PostgreSQL
// server, or PostgreSQL alone, where the defaults do not answer) and says which in one line; then migrates a template
// database named after a hash of the migrations, so each medium test file can copy it (CREATE DATABASE ... TEMPLATE)
// instead of migrating again.
import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import type { TestProject } from "vitest/node";
import { connectPg, quoteIdent } from "../../src/db/connect.ts";
import { migrate } from "../../src/db/migrate.ts";
import { withDatabase } from "../../src/db/pg-fields.ts";
import { DEFAULT_TEST_PG_URL, DEFAULT_TEST_REDIS_URL, TEMPLATE_DB_PREFIX } from "./env.ts";
import { settleTestServers } from "./test-servers.ts";

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
  const servers = await settleTestServers(process.env, { pg: DEFAULT_TEST_PG_URL, redis: DEFAULT_TEST_REDIS_URL });
  console.log(servers.line);
  const pgUrl = process.env.DVAULT_TEST_DATABASE_URL || DEFAULT_TEST_PG_URL;
  const prefix = `${RUN_DATABASE_PREFIX}${process.pid}_`;
  try {
    provide("templateDatabase", await migrateTemplate(pgUrl));
    provide("testDatabasePrefix", prefix);
    await dropDatabases(pgUrl, (name) => isDeadRunsDatabase(name));
  } catch (err) {
    servers.stop();
    throw err;
  }
  return async () => {
    try {
      await dropDatabases(pgUrl, (name) => name.startsWith(prefix));
    } finally {
      servers.stop();
    }
  };
}

/** The test databases of a run are named `dvault_t_p<pid of its vitest>_…` (test/helpers/db.ts). */
const RUN_DATABASE_PREFIX = "dvault_t_p";

/** A database left by a run whose process is gone (killed before its end dropped them). */
function isDeadRunsDatabase(name: string): boolean {
  const pid = /^dvault_t_p(\d+)_/.exec(name)?.[1];
  if (pid === undefined || Number(pid) === process.pid) return false;
  try {
    process.kill(Number(pid), 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "ESRCH";
  }
}

/** Connections that drop at once: their drops' checkpoints coalesce (30 databases: 4.7 s one by one, 2.6 s ten at a time). */
const DROPPERS = 8;

/** Drops the databases whose names `chosen` picks. */
async function dropDatabases(pgUrl: string, chosen: (name: string) => boolean): Promise<void> {
  const admin = await connectPg(pgUrl);
  let names: string[];
  try {
    const { rows } = await admin.query<{ datname: string }>("SELECT datname FROM pg_database WHERE datname LIKE 'dvault\\_t\\_p%'");
    names = rows.map((r) => r.datname).filter(chosen);
  } finally {
    await admin.end();
  }
  const dropper = async () => {
    const c = await connectPg(pgUrl);
    try {
      for (let name = names.pop(); name !== undefined; name = names.pop()) await c.query(`DROP DATABASE IF EXISTS ${quoteIdent(name)} WITH (FORCE)`);
    } finally {
      await c.end();
    }
  };
  await Promise.all(Array.from({ length: Math.min(DROPPERS, names.length) }, dropper));
}

/** The template database of this set of migrations, migrated on the server at `pgUrl`. */
async function migrateTemplate(pgUrl: string): Promise<string> {
  // Templates of other migration sets are left alone: another checkout's run may be copying from one.
  const template = TEMPLATE_DB_PREFIX + migrationsHash();
  try {
    await migrate(withDatabase(pgUrl, template), { createDatabase: true });
  } catch (err) {
    // A failed migration is recorded in the template and would block every later run (P3009): start over next time.
    const admin2 = await connectPg(pgUrl);
    await admin2.query(`DROP DATABASE IF EXISTS ${quoteIdent(template)} WITH (FORCE)`).catch(() => undefined);
    await admin2.end();
    throw err;
  }
  return template;
}

declare module "vitest" {
  export interface ProvidedContext {
    templateDatabase: string;
    /** This run's test databases' names begin with it; the run's end drops them (test/helpers/db.ts). */
    testDatabasePrefix: string;
  }
}
