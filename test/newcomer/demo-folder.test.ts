// `dvault demo --dir`, the odd cases a person meets (src/demo/demo-dir.ts, src/cli/demo.ts): the demo empties its
// folder on every run, so a folder of someone else's is refused in one line before anything starts in it; a bad
// --deviations is refused before the folder is touched; Ctrl-C says what is left. The real CLI in child processes.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { connectPg, quoteIdent } from "../../src/db/connect.ts";
import { withDatabase } from "../../src/db/pg-fields.ts";
import { DEMO_MARK } from "../../src/demo/demo-dir.ts";
import { EXIT_INTERRUPTED } from "../../src/errors.ts";
import { deleteKeysByPrefix } from "../../src/queue/redis.ts";
import { collectRun } from "../helpers/dvault-cli.ts";
import { TEST_ENGINE, TEST_PG_URL } from "../helpers/env.ts";
import { createTestRedis, type TestRedis } from "../helpers/redis.ts";

const BIN = path.resolve("bin/dvault.js");
const tag = randomBytes(4).toString("hex");
/** Each test's database of its own (the demo's is this name plus _demo), so none sees another's, in any order. */
const databases = { person: `dvault_t_demodir_p_${tag}`, count: `dvault_t_demodir_c_${tag}`, stop: `dvault_t_demodir_s_${tag}` };
let root: string;
let redis: TestRedis;

function demo(database: string, args: string[]) {
  const child = spawn(process.execPath, [BIN, "demo", ...args], {
    env: {
      PATH: process.env.PATH ?? "",
      HOME: "/nonexistent-home",
      DATABASE_URL: withDatabase(TEST_PG_URL, database),
      REDIS_URL: redis.url,
      DVAULT_ENGINE: TEST_ENGINE,
      DVAULT_REDIS_PREFIX: redis.prefix,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  return { child, run: collectRun(child, Date.now()) };
}

async function demoDatabaseExists(database: string): Promise<boolean> {
  const admin = await connectPg(TEST_PG_URL);
  try {
    return (await admin.query("SELECT 1 FROM pg_database WHERE datname = $1", [`${database}_demo`])).rowCount === 1;
  } finally {
    await admin.end();
  }
}

beforeAll(async () => {
  root = mkdtempSync(path.join(os.tmpdir(), "dvault-demo-folder-"));
  redis = await createTestRedis();
});

afterAll(async () => {
  if (TEST_ENGINE === "redis") await deleteKeysByPrefix(redis.redis, `${redis.prefix}-demo`);
  await redis.cleanup();
  const admin = await connectPg(TEST_PG_URL);
  for (const database of Object.values(databases)) await admin.query(`DROP DATABASE IF EXISTS ${quoteIdent(`${database}_demo`)} WITH (FORCE)`);
  await admin.end();
  rmSync(root, { recursive: true, force: true });
});

it("refuses a folder holding a person's files in one line, before it starts or makes anything", async () => {
  const mine = path.join(root, "mine");
  mkdirSync(path.join(mine, "photos"), { recursive: true });
  writeFileSync(path.join(mine, "thesis.txt"), "precious");
  const { run } = demo(databases.person, ["--dir", mine, "--deviations", "20"]);
  const r = await run;
  expect(r.code, r.stdout + r.stderr).toBe(1);
  expect(r.stderr.trim().split("\n")).toEqual([
    `dvault: the demo's folder ${mine} already holds files the demo did not make (photos, thesis.txt); the demo empties its folder on every run, so name a new or empty folder with --dir`,
  ]);
  expect(readdirSync(mine).sort()).toEqual(["photos", "thesis.txt"]);
  expect(readFileSync(path.join(mine, "thesis.txt"), "utf8")).toBe("precious");
  expect(await demoDatabaseExists(databases.person)).toBe(false);
}, 60_000);

it("refuses a --deviations that is not a whole number in range, and leaves an earlier demo's folder as it was", async () => {
  const earlier = path.join(root, "earlier");
  mkdirSync(path.join(earlier, "archive"), { recursive: true });
  writeFileSync(path.join(earlier, DEMO_MARK), "");
  writeFileSync(path.join(earlier, "archive", "kept.png"), "an earlier demo's file");
  for (const bad of ["abc", "-5", "0", "10001"]) {
    const r = await demo(databases.count, ["--dir", earlier, "--deviations", bad]).run;
    expect(r.code, bad).toBe(1);
    expect(r.stderr.trim().split("\n"), bad).toEqual([`dvault: --deviations expects a whole number from 1 to 10000, not "${bad}"`]);
  }
  expect(existsSync(path.join(earlier, "archive", "kept.png"))).toBe(true);
  expect(await demoDatabaseExists(databases.count)).toBe(false);
}, 60_000);

it("says in one line what Ctrl-C leaves, and exits 130", async () => {
  const dir = path.join(root, "stopped");
  const { child, run } = demo(databases.stop, ["--dir", dir, "--deviations", "20"]);
  let out = "";
  child.stdout.on("data", (c: Buffer) => (out += c.toString()));
  // Stopped once the simulator is up (its line printed): the database is being made then, or the login runs.
  await expect.poll(() => out, { timeout: 60_000, interval: 100 }).toMatch(/^1\/7 /m);
  child.kill("SIGINT");
  const r = await run;
  expect(r.code, r.stdout + r.stderr).toBe(EXIT_INTERRUPTED);
  expect(r.stderr.trim().split("\n").at(-1)).toBe("dvault demo: stopped; its folder and database are half made: run dvault demo again, which starts over");
}, 90_000);
