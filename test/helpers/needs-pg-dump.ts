// The tests of backup format 1 (pg_dump's custom format, src/backup/backup.ts) need a pg_dump that fits the test
// server: pg_dump refuses a server of a later major than its own, and the embedded server a run starts where none
// answers (test/helpers/test-servers.ts) is PostgreSQL 18 while the machine's pg_dump may be older or missing. There
// they skip, saying why once per file; format 2 (through the driver) is tested everywhere.
import { spawnSync } from "node:child_process";
import { it } from "vitest";
import { connectPg } from "../../src/db/connect.ts";
import { TEST_PG_URL } from "./env.ts";

/** Why pg_dump cannot back up the test server, or undefined when it can. */
async function pgDumpMisfit(): Promise<string | undefined> {
  const run = spawnSync("pg_dump", ["--version"], { encoding: "utf8" });
  const tool = Number(/(\d+)(?:\.\d+)?/.exec(run.stdout ?? "")?.[1]);
  if (run.status !== 0 || !Number.isInteger(tool)) return "no pg_dump is installed";
  const client = await connectPg(TEST_PG_URL);
  try {
    const server = Math.floor(Number((await client.query<{ v: string }>("SELECT current_setting('server_version_num') AS v")).rows[0]?.v) / 10_000);
    return tool >= server ? undefined : `pg_dump ${tool} refuses the test server, PostgreSQL ${server}`;
  } finally {
    await client.end();
  }
}

const misfit = await pgDumpMisfit();
if (misfit) console.log(`backup format 1 (pg_dump) tests skipped: ${misfit}`);

/** Whether pg_dump can back up the test server (a fixture that makes a backup of format 1 asks first). */
export const PG_DUMP_FITS = misfit === undefined;

/** `it` for a test of backup format 1: skipped where pg_dump does not fit the test server. */
export const itNeedingPgDump = it.skipIf(misfit !== undefined);
