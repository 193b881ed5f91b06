// When dvault runs its own PostgreSQL server and when it refuses to: only DATABASE_URL=embedded chooses it (a
// configured server that does not answer stays an error), a data folder of another PostgreSQL major is refused
// with one line, and `dvault init` writes the embedded choice only when no server answers. No initdb here.
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { freePort } from "../../src/free-port.ts";
import { redisAnswers } from "../../src/queue/redis.ts";
import { itNeedingRedis } from "../helpers/needs-redis.ts";
import { TEST_PG_URL, TEST_REDIS_URL } from "../helpers/env.ts";
import { dvault, embeddedDataDir } from "../helpers/embedded-fixture.ts";

const data = embeddedDataDir();
afterAll(() => data.remove());

/** A port nothing listens on: taken from the kernel and closed again. */
const closedPort = () => freePort();

/** The settings a file sets (NAME=value lines, comments left out). */
const setLines = (file: string) =>
  readFileSync(file, "utf8")
    .split("\n")
    .filter((l) => l && !l.startsWith("#"));

describe("choosing the embedded server", () => {
  it("never starts it for a configured server that does not answer: the one line of today, and no data folder made", async () => {
    const port = await closedPort();
    // A data folder of its own: the other tests of this file make theirs.
    const dataDir = path.join(path.dirname(data.dataDir), "never-made");
    const env = { DATABASE_URL: `postgresql://postgres@127.0.0.1:${port}/dvault`, DVAULT_DATA_DIR: dataDir, REDIS_URL: TEST_REDIS_URL };
    const run = await dvault(env, ["migrate"]);
    expect(run.code).toBe(3);
    expect(run.stderr).toContain(`cannot reach PostgreSQL at postgresql://postgres@127.0.0.1:${port}/dvault (ECONNREFUSED)`);
    expect(existsSync(dataDir)).toBe(false);
  });

  it("db status and db stop on an install that never ran it say so and leave no data folder behind", async () => {
    const dataDir = path.join(path.dirname(data.dataDir), "never-ran");
    const env = { DATABASE_URL: TEST_PG_URL, DVAULT_DATA_DIR: dataDir };
    const status = await dvault(env, ["db", "status"]);
    expect(status.stdout).toContain(`data folder: ${path.join(dataDir, "postgres")} (not made yet`);
    const stop = await dvault(env, ["db", "stop"]);
    expect(stop.code, stop.stderr).toBe(0);
    expect(stop.stdout.trim()).toBe(`the embedded server in ${path.join(dataDir, "postgres")} is not running: nothing to stop`);
    expect(existsSync(dataDir)).toBe(false);
  });

  it("refuses a data folder of another PostgreSQL major with one line saying what to do", async () => {
    const folder = path.join(data.dataDir, "postgres");
    mkdirSync(folder, { recursive: true });
    writeFileSync(path.join(folder, "PG_VERSION"), "17\n");
    const run = await dvault({ DATABASE_URL: "embedded", DVAULT_DATA_DIR: data.dataDir }, ["migrate"]);
    expect(run.code).toBe(1);
    expect(run.stderr.trim().split("\n")).toEqual([
      `dvault: the embedded server's data folder ${folder} holds PostgreSQL 17 data, which this dvault's PostgreSQL 18 cannot open (no pg_upgrade ships): back it up with the dvault version that made it (dvault backup), move the folder aside, and restore into a new one (dvault restore)`,
    ]);
    // Nothing was started on it, and the folder is as it was.
    expect(existsSync(path.join(folder, "postmaster.pid"))).toBe(false);
    const status = await dvault({ DATABASE_URL: "embedded", DVAULT_DATA_DIR: data.dataDir }, ["db", "status"]);
    expect(status.stdout).toContain(`data folder: ${folder} (PostgreSQL 17 (another major: refused))`);
  });
});

describe("a data folder dvault cannot use", () => {
  it("that holds no server (DVAULT_DATA_DIR typed wrong) is refused by every command but migrate, and nothing is made there", async () => {
    // Before, each command made a new server and a migrated, empty database there without a word: status said
    // "none yet: log in", the worker started on it, and logging in archived everything again, spending the week's
    // originals on files the archive already held.
    const dataDir = path.join(path.dirname(data.dataDir), "typo");
    const env = { DATABASE_URL: "embedded", DVAULT_ENGINE: "postgres", DVAULT_DATA_DIR: dataDir };
    const line = `dvault: no embedded PostgreSQL server in ${dataDir} (DVAULT_DATA_DIR, else ~/.local/share/dvault): if your install is elsewhere, set DVAULT_DATA_DIR to its folder; to make a new one here, run dvault migrate`;
    for (const args of [["status"], ["sync", "--once"], ["download", "--once"], ["worker"], ["engine", "status"]]) {
      const run = await dvault(env, args);
      expect(run.code, args.join(" ")).toBe(3);
      expect(run.stderr.trim().split("\n"), args.join(" ")).toEqual([line]);
    }
    expect(existsSync(dataDir)).toBe(false);
    const status = await dvault(env, ["db", "status"]);
    expect(status.stdout).toContain(`data folder: ${path.join(dataDir, "postgres")} (not made yet: dvault migrate makes it)`);
  });

  it("is said in one line when its PG_VERSION names no major (empty or garbled), not as data of PostgreSQL 0", async () => {
    const dataDir = path.join(path.dirname(data.dataDir), "garbled");
    const folder = path.join(dataDir, "postgres");
    mkdirSync(folder, { recursive: true });
    writeFileSync(path.join(folder, "PG_VERSION"), "");
    const run = await dvault({ DATABASE_URL: "embedded", DVAULT_ENGINE: "postgres", DVAULT_DATA_DIR: dataDir }, ["status"]);
    expect(run.code).toBe(1);
    expect(run.stderr.trim().split("\n")).toEqual([
      `dvault: ${folder} exists but holds no PostgreSQL data (no readable PG_VERSION): move it aside, and dvault makes the embedded server's folder anew`,
    ]);
  });

  const immutable = (dir: string, on: boolean) => spawnSync("chattr", [on ? "+i" : "-i", dir]).status === 0;

  it("is said in one line, by every command, when a file stands in its place", async () => {
    const file = path.join(path.dirname(data.dataDir), "a-file");
    writeFileSync(file, "");
    const env = { DATABASE_URL: "embedded", DVAULT_ENGINE: "postgres", DVAULT_DATA_DIR: file };
    const line = `dvault: a file stands where dvault's data folder ${file} must be (ENOTDIR): move it away, or set DVAULT_DATA_DIR to a folder`;
    for (const args of [["status"], ["db", "status"], ["db", "stop"]]) {
      const run = await dvault(env, args);
      expect(run.code, args.join(" ")).toBe(1);
      expect(run.stderr.trim().split("\n"), args.join(" ")).toEqual([line]);
    }
  });

  it.runIf(process.getuid?.() === 0)("is said in one line when it refuses writes (chattr +i, which binds root too)", async (ctx) => {
    const dir = path.join(path.dirname(data.dataDir), "immutable");
    mkdirSync(dir);
    if (!immutable(dir, true)) return ctx.skip();
    try {
      // migrate, the command that makes the server (any other finds none there and says so, writing nothing).
      const run = await dvault({ DATABASE_URL: "embedded", DVAULT_ENGINE: "postgres", DVAULT_DATA_DIR: dir }, ["migrate"]);
      expect(run.code).toBe(1);
      expect(run.stderr.trim().split("\n")).toEqual([
        `dvault: dvault may not write to its data folder ${dir} (EPERM): give the user dvault runs as write access to it (an immutable folder: chattr -i), or set DVAULT_DATA_DIR to another folder`,
      ]);
    } finally {
      immutable(dir, false);
    }
  });
});

describe("dvault init", () => {
  it("chooses PostgreSQL alone on the embedded server when no PostgreSQL and no Redis answer, and keeps the file after", async () => {
    const cwd = path.dirname(data.dataDir);
    const env = {
      DATABASE_URL: `postgresql://postgres@127.0.0.1:${await closedPort()}/dvault`,
      REDIS_URL: `redis://127.0.0.1:${await closedPort()}`,
      DVAULT_DATA_DIR: data.dataDir,
    };
    const run = await dvault(env, ["init"], cwd);
    expect(run.code, run.stderr).toBe(0);
    const file = path.join(cwd, ".env");
    expect(run.stdout.split("\n")[0]).toBe(`wrote ${file}: DATABASE_URL=embedded DVAULT_ENGINE=postgres`);
    expect(run.stdout).toContain("dvault runs its own (DATABASE_URL=embedded)");
    expect(setLines(file)).toEqual(["DATABASE_URL=embedded", "DVAULT_ENGINE=postgres"]);
    const again = await dvault(env, ["init"], cwd);
    expect(again.code).toBe(1);
    expect(again.stderr.trim()).toBe(`dvault: ${file} exists: dvault init keeps existing settings; edit it, or run dvault init --force to write it anew`);
    expect(setLines(file)).toEqual(["DATABASE_URL=embedded", "DVAULT_ENGINE=postgres"]);
  });

  itNeedingRedis("keeps the servers that answer, and says so; --force writes over an existing file", async () => {
    const file = path.join(path.dirname(data.dataDir), "found.env");
    writeFileSync(file, "DVAULT_ENGINE=postgres\n");
    const env = { DATABASE_URL: TEST_PG_URL, REDIS_URL: TEST_REDIS_URL, DVAULT_DATA_DIR: data.dataDir };
    const run = await dvault(env, ["init", "--file", file, "--force"]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain("answers: dvault keeps its mirror there");
    expect(run.stdout).toContain("queues, locks and the shared pace live there (DVAULT_ENGINE=redis)");
    expect(setLines(file)).toEqual([`DATABASE_URL=${TEST_PG_URL}`, "DVAULT_ENGINE=redis", `REDIS_URL=${TEST_REDIS_URL}`]);
  });

  it("--force leaves the file readable by its owner alone, though the file it wrote over was world-readable (a URL may hold a password)", async () => {
    const file = path.join(path.dirname(data.dataDir), "shared.env");
    writeFileSync(file, "DVAULT_ENGINE=redis\n");
    chmodSync(file, 0o644);
    const withPassword = TEST_PG_URL.replace("postgres@", "postgres:not-a-secret@");
    const env = { DATABASE_URL: withPassword, REDIS_URL: TEST_REDIS_URL, DVAULT_DATA_DIR: data.dataDir };
    const run = await dvault(env, ["init", "--file", file, "--force"]);
    expect(run.code, run.stderr).toBe(0);
    expect(setLines(file)[0]).toBe(`DATABASE_URL=${withPassword}`);
    expect(run.stdout).not.toContain("not-a-secret");
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });

  // What demo asks too (src/demo/servers.ts): a refusal is an answer, so the install is never moved off Redis for it.
  itNeedingRedis("keeps a Redis that answers but refuses the database its URL names: the install is not moved to PostgreSQL alone", async () => {
    const file = path.join(path.dirname(data.dataDir), "redis-db.env");
    const refused = `${TEST_REDIS_URL.replace(/\/\d*$/, "")}/99`;
    expect(await redisAnswers(refused)).toBe(true);
    expect(await redisAnswers(`redis://127.0.0.1:${await closedPort()}`)).toBe(false);
    const run = await dvault({ DATABASE_URL: TEST_PG_URL, REDIS_URL: refused, DVAULT_DATA_DIR: data.dataDir }, ["init", "--file", file]);
    expect(run.code, run.stderr).toBe(0);
    expect(setLines(file)).toEqual([`DATABASE_URL=${TEST_PG_URL}`, "DVAULT_ENGINE=redis", `REDIS_URL=${refused}`]);
  });

  it("says in one line that --file names a folder, or a path it cannot write, not 'unexpected error: EISDIR' after advising --force", async () => {
    const folder = path.dirname(data.dataDir);
    const env = { DATABASE_URL: TEST_PG_URL, REDIS_URL: `redis://127.0.0.1:${await closedPort()}`, DVAULT_DATA_DIR: data.dataDir };
    const [plain, forced, missing] = await Promise.all([
      dvault(env, ["init", "--file", folder]),
      dvault(env, ["init", "--file", folder, "--force"]),
      dvault(env, ["init", "--file", path.join(folder, "no-such-folder", ".env")]),
    ]);
    const isFolder = `dvault: ${folder} is a folder: give --file the settings file's path (such as ${path.join(folder, ".env")})\n`;
    expect([plain.stderr, forced.stderr]).toEqual([isFolder, isFolder]);
    expect(missing.stderr).toBe(
      `dvault: cannot write ${path.join(folder, "no-such-folder", ".env")} (ENOENT): give --file a path in a folder that exists and can be written\n`,
    );
    expect([plain.code, forced.code, missing.code]).toEqual([1, 1, 1]);
  });

  it("with PostgreSQL answering and no Redis, keeps the server and chooses PostgreSQL alone", async () => {
    const file = path.join(path.dirname(data.dataDir), "pg-only.env");
    const env = { DATABASE_URL: TEST_PG_URL, REDIS_URL: `redis://127.0.0.1:${await closedPort()}`, DVAULT_DATA_DIR: data.dataDir };
    const run = await dvault(env, ["init", "--file", file]);
    expect(run.code, run.stderr).toBe(0);
    expect(setLines(file)).toEqual([`DATABASE_URL=${TEST_PG_URL}`, "DVAULT_ENGINE=postgres"]);
  });
});
