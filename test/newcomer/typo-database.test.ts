// A newcomer's typo in DATABASE_URL (issue #26): every command that opens the database refuses one that does not
// exist, or exists without dvault's migrations, with one line that names it and says to run dvault migrate, and
// exit code 3; none creates or migrates a database on the side. The worker migrates a database that exists (the
// Docker image relies on it) and exits on one that does not. The real CLI in child processes with piped stdio.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { COMMANDS } from "../../src/cli/program.ts";
import { connectPg, quoteIdent } from "../../src/db/connect.ts";
import { withDatabase } from "../../src/db/pg-fields.ts";
import { collectRun, type CliRun } from "../helpers/dvault-cli.ts";
import { TEST_ENGINE, TEST_PG_ADDRESS, TEST_PG_URL } from "../helpers/env.ts";
import { createTestRedis, type TestRedis } from "../helpers/redis.ts";

const tag = randomBytes(4).toString("hex");
const typo = `dvault_t_typo_${tag}`;
const empty = `dvault_t_unmigrated_${tag}`;
const forWorker = `dvault_t_worker_${tag}`;
const scratch = mkdtempSync(path.join(os.tmpdir(), "dvault-typo-"));
let redis: TestRedis;
let env: Record<string, string>;

/**
 * Every command of `dvault` that opens the database, as a person would type it. The test below holds this list
 * to src/cli/program.ts: a new command must be added here or to NO_DATABASE with its reason.
 */
const OPENS_DATABASE: Record<string, string[]> = {
  sync: ["sync", "--once"],
  download: ["download", "--once"],
  archive: ["archive", "--once"],
  status: ["status"],
  engine: ["engine", "status"],
  search: ["search", "kitten"],
  digest: ["digest", "--history"],
  verify: ["verify"],
  thumbnails: ["thumbnails", "--once"],
  auth: ["auth", "status"],
  track: ["track", "list"],
  feeds: ["feeds", "list"],
  account: ["account", "set", "someone", "--download-quota", "3"],
  import: ["import", "gallery-dl", scratch],
  backup: ["backup", "--out", path.join(scratch, "backup")],
  worker: ["worker"],
  add: ["add", "https://www.deviantart.com/someone/art/a-work-123"],
  api: ["api", "user.whoami"],
};

/**
 * The ways in: most commands open the database through createServices (src/services.ts), the auth commands
 * through their own context (src/cli/auth-context.ts), search and backup on a connection of their own; each
 * checks with src/db/schema-check.ts (backup with src/db/database-info.ts, which lets a database that is only
 * behind be backed up before an upgrade). One command per way, and the three the issue names.
 */
const ONE_PER_WAY_IN = ["sync", "download", "status", "auth", "search", "backup"];

/** The commands that do not open the database, and why. */
const NO_DATABASE: Record<string, string> = {
  migrate: "the one command that creates a database (and applies the migrations)",
  restore: "restores a backup into a database that does not exist yet, which it creates: its documented purpose",
  demo: "makes its own database (dvault_demo) on purpose, never the configured one",
  simulator: "a fake of the service; no database",
  storage: "copies blobs between the folder and a bucket; no database",
  jobs: "reads the queues in Redis; only retrying a failed download opens the database, through the same check",
  config: "prints the settings in effect and where each came from; no database",
  init: "asks whether a server answers (at its postgres database) and writes a settings file; opens no dvault database",
  db: "shows or stops the embedded server (DATABASE_URL=embedded); opens no dvault database",
};

const line = (database: string, problem: string) =>
  `dvault: the database "${database}" on ${TEST_PG_ADDRESS} ${problem}: run dvault migrate${problem === "does not exist" ? " to create it, or correct DATABASE_URL" : ""}\n`;

async function admin<T>(run: (client: Awaited<ReturnType<typeof connectPg>>) => Promise<T>): Promise<T> {
  const client = await connectPg(TEST_PG_URL);
  try {
    return await run(client);
  } finally {
    await client.end();
  }
}

const databaseExists = (name: string) => admin(async (c) => ((await c.query("SELECT 1 FROM pg_database WHERE datname = $1", [name])).rowCount ?? 0) > 0);

async function publicTables(name: string): Promise<number> {
  const client = await connectPg(withDatabase(TEST_PG_URL, name));
  try {
    return (await client.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'public'")).rows[0]?.n ?? 0;
  } finally {
    await client.end();
  }
}

/**
 * The command as a person runs it, in a child process with piped stdio; stopped (SIGTERM) if it still runs after
 * 40 s, so a worker that did not exit fails the test instead of outliving it.
 */
function spawnDvault(args: readonly string[], database: string, logLevel = "warn") {
  const child = spawn(process.execPath, [path.resolve("bin/dvault.js"), ...args], {
    env: {
      PATH: process.env.PATH ?? "",
      HOME: "/nonexistent-home",
      LOG_LEVEL: logLevel,
      REDIS_URL: redis.url,
      DVAULT_ENGINE: TEST_ENGINE,
      ...env,
      DATABASE_URL: withDatabase(TEST_PG_URL, database),
    },
    stdio: ["ignore", "pipe", "pipe"],
    timeout: 40_000,
  });
  return { child, run: collectRun(child, Date.now()) };
}

/** The commands, a few at a time (two cores are shared): each start costs about a second. */
async function runAll(database: string, commands: readonly string[][]): Promise<Map<string, CliRun>> {
  const runs = new Map<string, CliRun>();
  const queue = [...commands];
  const runner = async () => {
    for (let args = queue.shift(); args; args = queue.shift()) runs.set(args.join(" "), await spawnDvault(args, database).run);
  };
  await Promise.all([runner(), runner(), runner(), runner()]);
  return runs;
}

beforeAll(async () => {
  redis = await createTestRedis();
  env = {
    DVAULT_REDIS_PREFIX: redis.prefix,
    DVAULT_CLIENT_ID: "1001",
    DVAULT_CLIENT_SECRET: "sim-secret-1001",
    // Nothing may call the service: a closed port.
    DVAULT_API_BASE: "http://127.0.0.1:9",
    DVAULT_ARCHIVE_DIR: path.join(scratch, "archive"),
    DVAULT_SECRET_KEY: randomBytes(32).toString("hex"),
  };
  await admin(async (c) => {
    for (const name of [empty, forWorker]) await c.query(`CREATE DATABASE ${quoteIdent(name)}`);
  });
});

afterAll(async () => {
  await admin(async (c) => {
    for (const name of [typo, empty, forWorker]) await c.query(`DROP DATABASE IF EXISTS ${quoteIdent(name)} WITH (FORCE)`);
  });
  await redis?.cleanup();
  rmSync(scratch, { recursive: true, force: true });
});

describe("a DATABASE_URL that names no dvault database", () => {
  it("lists every command that opens the database, and why the others don't", () => {
    const classified = new Set([...Object.keys(OPENS_DATABASE), ...Object.keys(NO_DATABASE)]);
    expect(COMMANDS.map((c) => c.name).filter((name) => !classified.has(name))).toEqual([]);
  });

  it("that does not exist: every command, the worker included, exits 3 with one line, and the database is still not there", async () => {
    const commands = Object.values(OPENS_DATABASE);
    const runs = await runAll(typo, commands);
    for (const [args, run] of runs) {
      expect({ args, code: run.code, stdout: run.stdout, stderr: run.stderr }).toEqual({ args, code: 3, stdout: "", stderr: line(typo, "does not exist") });
    }
    expect(runs.size).toBe(commands.length);
    expect(await databaseExists(typo)).toBe(false);
    // Nor did backup leave an empty directory behind.
    expect(readdirSync(scratch)).not.toContain("backup");
  }, 60_000);

  it("that exists without dvault's migrations: every way in but the worker's exits 3 with one line, and the database stays empty", async () => {
    const runs = await runAll(
      empty,
      ONE_PER_WAY_IN.map((name) => OPENS_DATABASE[name] ?? []),
    );
    for (const [args, run] of runs) {
      expect({ args, code: run.code, stdout: run.stdout, stderr: run.stderr }).toEqual({
        args,
        code: 3,
        stdout: "",
        stderr: line(empty, "has no dvault schema yet"),
      });
    }
    expect(runs.size).toBe(ONE_PER_WAY_IN.length);
    expect(await publicTables(empty)).toBe(0);
  }, 60_000);

  it("that exists without dvault's migrations: the worker applies them and runs (the Docker image starts so)", async () => {
    const { child, run } = spawnDvault(["worker"], forWorker, "info");
    let stderr = "";
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
    await expect.poll(() => stderr, { timeout: 30_000, interval: 100 }).toMatch(/"msg":"worker ready"/);
    // Ctrl-C, as in a terminal (test/medium/foundation.test.ts stops it with SIGTERM): a graceful stop, exit 0.
    child.kill("SIGINT");
    const ended = await run;
    expect(ended.code, ended.stderr).toBe(0);
    expect(ended.stderr).toMatch(/"applied":\["\d+_init"/);
    const shipped = readdirSync(path.resolve("prisma/migrations"), { withFileTypes: true }).filter((e) => e.isDirectory()).length;
    const client = await connectPg(withDatabase(TEST_PG_URL, forWorker));
    try {
      const { rows } = await client.query<{ n: number }>("SELECT count(*)::int AS n FROM _prisma_migrations WHERE finished_at IS NOT NULL");
      expect(rows[0]?.n).toBe(shipped);
    } finally {
      await client.end();
    }
  }, 60_000);
});
