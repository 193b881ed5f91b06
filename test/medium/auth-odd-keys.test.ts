// Odd cases a person meets with the key file and the database behind the `auth` commands, through the real CLI:
// a key file that holds no key or is a folder (one line and an exit, never a command that hangs), a key file
// mounted read-only with a loose mode (a Docker or Kubernetes secret: the key is fine, the account is ok), and a
// database that refuses writes (a standby, default_transaction_read_only): no refresh token or code is spent
// that could not be stored.
import { execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectPg, quoteIdent } from "../../src/db/connect.ts";
import type { Config } from "../../src/config.ts";
import { createFeedAdverts } from "../../src/http/feeds/feed-adverts.ts";
import { createLogger } from "../../src/log.ts";
import { startSimulator, type Simulator } from "../../src/simulator/server.ts";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";
import { TEST_ENGINE, TEST_PG_URL, TEST_REDIS_URL } from "../helpers/env.ts";
import { createTestRedis, type TestRedis } from "../helpers/redis.ts";
import { canMount } from "../helpers/tmpfs.ts";
import { CLIENT_ID, CLIENT_SECRET } from "./tokens-fixture.ts";

const BIN = path.resolve("bin/dvault.js");

type Run = { code: number | null; stdout: string; stderr: string; killed: boolean };

const mountable = canMount();

describe("dvault auth with odd keys and a read-only database", () => {
  let db: TestDatabase;
  let redis: TestRedis;
  let sim: Simulator;
  let baseEnv: Record<string, string>;
  const key = randomBytes(32).toString("hex");
  const dirs: string[] = [];

  /** The CLI in a child; killed after `limitMs` (a command that hangs is a failure, not a stuck test). */
  function dvault(args: string[], env: Record<string, string> = {}, limitMs = 20_000): Promise<Run> {
    const child = spawn(process.execPath, [BIN, ...args], { env: { ...baseEnv, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    let killed = false;
    const timer = setTimeout(() => {
      killed = true;
      child.kill("SIGKILL");
    }, limitMs);
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
    return new Promise<Run>((resolve) =>
      child.on("close", (code) => {
        clearTimeout(timer);
        resolve({ code, stdout, stderr, killed });
      }),
    );
  }

  /** A config folder of the test's own, holding `content` as secret.key (a string, or "dir" for a folder). */
  function configWith(content: string | "dir", mode = 0o600): string {
    const dir = mkdtempSync(path.join(os.tmpdir(), "dvault-odd-key-"));
    dirs.push(dir);
    const file = path.join(dir, "secret.key");
    if (content === "dir") mkdirSync(file);
    else writeFileSync(file, content, { mode });
    return dir;
  }

  async function setReadOnly(on: boolean): Promise<void> {
    const admin = await connectPg(TEST_PG_URL);
    try {
      await admin.query(`ALTER DATABASE ${quoteIdent(db.name)} ${on ? "SET default_transaction_read_only = on" : "RESET default_transaction_read_only"}`);
    } finally {
      await admin.end();
    }
  }

  const tokenRequests = () => sim.log().filter((e) => e.route === "/oauth2/token").length;

  beforeAll(async () => {
    db = await createTestDatabase();
    redis = await createTestRedis();
    sim = await startSimulator({});
    baseEnv = {
      PATH: process.env.PATH ?? "",
      HOME: mkdtempSync(path.join(os.tmpdir(), "dvault-odd-home-")),
      LOG_LEVEL: "warn",
      DATABASE_URL: db.url,
      REDIS_URL: TEST_REDIS_URL,
      DVAULT_ENGINE: TEST_ENGINE,
      DVAULT_REDIS_PREFIX: redis.prefix,
      DVAULT_API_BASE: sim.url,
      DVAULT_CLIENT_ID: CLIENT_ID,
      DVAULT_CLIENT_SECRET: CLIENT_SECRET,
      DVAULT_SECRET_KEY: key,
    };
    const imported = await dvault(["auth", "import", "--refresh-token", sim.issueUserToken().refresh_token, "--account", "me"]);
    expect(imported.code, imported.stderr).toBe(0);
  });
  afterAll(async () => {
    await setReadOnly(false).catch(() => undefined);
    await sim.close();
    await redis.cleanup();
    await db.drop();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  it("a key file that holds no key: every auth command says so in one line and exits", async () => {
    const configDir = configWith("not a key\n");
    const file = path.join(configDir, "secret.key");
    for (const args of [
      ["auth", "status", "--no-check"],
      ["auth", "logout", "--account", "me"],
      ["auth", "client"],
    ]) {
      const run = await dvault(args, { DVAULT_SECRET_KEY: "", DVAULT_CONFIG_DIR: configDir });
      expect(run.killed, `${args.join(" ")} did not exit`).toBe(false);
      expect(run.code, args.join(" ")).toBe(1);
      expect(run.stderr.trim().split("\n")).toEqual([`dvault: the key file ${file} does not hold a 32-byte key (64 hex digits). Restore it from your backup.`]);
    }
  }, 90_000);

  it("a key file that is a folder: one line that says so (not 'fix its permissions'), and the command exits", async () => {
    const configDir = configWith("dir");
    const file = path.join(configDir, "secret.key");
    const run = await dvault(["auth", "status", "--no-check"], { DVAULT_SECRET_KEY: "", DVAULT_CONFIG_DIR: configDir });
    expect(run.killed, "auth status did not exit").toBe(false);
    expect(run.code).toBe(1);
    const lines = run.stderr.trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(`the key file ${file} is a folder`);
    expect(lines[0]).not.toContain("permissions");

    const status = await dvault(["status"], { DVAULT_SECRET_KEY: "", DVAULT_CONFIG_DIR: configDir });
    expect(status.stdout).toContain(`the key file ${file} is a folder`);
  }, 60_000);

  it.skipIf(!mountable)(
    "a key file readable by others on a read-only mount (a Docker or Kubernetes secret) is the tokens' own key: the account is ok",
    async () => {
      const mountPoint = mkdtempSync(path.join(os.tmpdir(), "dvault-ro-key-"));
      dirs.push(mountPoint);
      execFileSync("mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", mountPoint], { stdio: "ignore" });
      try {
        writeFileSync(path.join(mountPoint, "secret.key"), `${key}\n`);
        chmodSync(path.join(mountPoint, "secret.key"), 0o644);
        execFileSync("mount", ["-o", "remount,ro", mountPoint], { stdio: "ignore" });
        const env = { DVAULT_SECRET_KEY: "", DVAULT_CONFIG_DIR: mountPoint };
        const auth = await dvault(["auth", "status", "--json"], env);
        expect(auth.killed).toBe(false);
        expect(auth.stderr).toBe("");
        expect(auth.code).toBe(0);
        expect((JSON.parse(auth.stdout) as Array<{ name: string }>).find((a) => a.name === "me")).toMatchObject({ state: "ok", placebo: "ok" });
        const status = await dvault(["status"], env);
        expect(status.stdout.split("\n").filter((l) => l.startsWith("  me "))).toEqual([expect.stringMatching(/^ {2}me \(SimArtist\) \[user\] OK: /)]);
      } finally {
        execFileSync("umount", ["-l", mountPoint], { stdio: "ignore" });
      }
    },
    60_000,
  );

  it("dvault backup with the key file lost makes no key in its place, and says the backup holds none", async () => {
    const configDir = mkdtempSync(path.join(os.tmpdir(), "dvault-lost-key-backup-"));
    dirs.push(configDir);
    const out = path.join(mkdtempSync(path.join(os.tmpdir(), "dvault-lost-key-out-")), "backup");
    dirs.push(path.dirname(out));
    const run = await dvault(["backup", "--out", out, "--no-archive"], { DVAULT_SECRET_KEY: "", DVAULT_CONFIG_DIR: configDir });
    expect(run.code, run.stderr).toBe(0);
    expect(existsSync(path.join(configDir, "secret.key")), "no key file made in place of the lost one").toBe(false);
    expect(existsSync(path.join(out, "secret.key"))).toBe(false);
    expect(JSON.parse(readFileSync(path.join(out, "manifest.json"), "utf8")).secretKey).toMatchObject({ included: false });
    expect(run.stdout).toContain(`  key:      none found (no DVAULT_SECRET_KEY, no key file ${path.join(configDir, "secret.key")}): the backup holds no key`);

    // A key file that holds no key: refused in one line before anything is written.
    const bad = configWith("not a key\n");
    const out2 = path.join(path.dirname(out), "backup2");
    const refused = await dvault(["backup", "--out", out2, "--no-archive"], { DVAULT_SECRET_KEY: "", DVAULT_CONFIG_DIR: bad });
    expect(refused.code).toBe(1);
    expect(refused.stderr.trim().split("\n")).toEqual([
      `dvault: the key file ${path.join(bad, "secret.key")} does not hold a 32-byte key (64 hex digits). Restore it from your backup.`,
    ]);
    expect(existsSync(out2)).toBe(false);
  }, 60_000);

  it("feeds with the key file lost beside tokens sealed under it: create is refused, list and the dashboard make no key", async () => {
    const configDir = mkdtempSync(path.join(os.tmpdir(), "dvault-lost-key-feeds-"));
    dirs.push(configDir);
    const file = path.join(configDir, "secret.key");
    const lost = { DVAULT_SECRET_KEY: "", DVAULT_CONFIG_DIR: configDir };
    const refused = await dvault(["feeds", "create", "phone"], lost);
    expect(refused.code).toBe(1);
    expect(refused.stderr.trim().split("\n")).toEqual([
      `dvault: no key was found in DVAULT_SECRET_KEY or the key file ${file}, but this install holds tokens made under one: ` +
        "restore secret.key from your backup (or point DVAULT_CONFIG_DIR at its folder, or set DVAULT_SECRET_KEY) and run this again; " +
        "if it is lost for good, dvault auth login makes a new one (each account logs in again)",
    ]);
    expect(existsSync(file), "no key file made in place of the lost one").toBe(false);
    expect((await db.pool.query("SELECT count(*)::int AS n FROM feed_tokens")).rows[0].n).toBe(0);

    // A token made under the install's key, then listed and shown by the dashboard without it.
    const made = await dvault(["feeds", "create", "reader"]);
    expect(made.code, made.stderr).toBe(0);
    try {
      const listed = await dvault(["feeds", "list"], lost);
      expect(listed.code, listed.stderr).toBe(0);
      expect(listed.stdout).toContain(`their URLs cannot be shown: no key was found in DVAULT_SECRET_KEY or the key file ${file}`);
      expect(existsSync(file)).toBe(false);
      const warnings: string[] = [];
      const log = createLogger({ level: "warn", destination: { write: (line: string) => void warnings.push(line) } });
      const adverts = createFeedAdverts({ pool: db.pool, config: { configDir } as Config, log });
      await expect(adverts.live()).rejects.toThrow(`the feed tokens' URLs cannot be shown: no key was found in DVAULT_SECRET_KEY or the key file ${file}`);
      expect(existsSync(file)).toBe(false);
      // Every page a browser loads leaves the links out; the lost key is warned of once.
      for (let page = 0; page < 3; page++) expect(await adverts.links("http://archive.test", [{ title: "new", feed: { kind: "arrivals" } }])).toEqual([]);
      expect(warnings).toHaveLength(1);
      expect(existsSync(file)).toBe(false);
    } finally {
      await db.pool.query("DELETE FROM feed_tokens");
    }
  }, 60_000);

  it("auth import into a database that refuses writes: refused before the token is spent; the same token imports afterwards", async () => {
    const issued = sim.issueUserToken({ userId: [...sim.truth.users.keys()].find((id) => id !== sim.truth.ownerId)! });
    const before = tokenRequests();
    await setReadOnly(true);
    let run: Run;
    try {
      run = await dvault(["auth", "import", "--refresh-token", issued.refresh_token, "--account", "other"]);
    } finally {
      await setReadOnly(false);
    }
    expect(tokenRequests()).toBe(before);
    expect(run.code).toBe(3);
    const lines = run.stderr.trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^dvault: the database refuses writes \(cannot execute UPDATE in a read-only transaction\), so nothing was spent: /);
    expect(run.stderr).not.toContain(issued.refresh_token);

    const retry = await dvault(["auth", "import", "--refresh-token", issued.refresh_token, "--account", "other"]);
    expect(retry.stderr).toBe("");
    expect(retry.code).toBe(0);
  }, 60_000);

  it("auth logout while the database refuses writes revokes nothing: one line, exit 3, and the logout works afterwards", async () => {
    const users = [...sim.truth.users.keys()].filter((id) => id !== sim.truth.ownerId);
    const issued = sim.issueUserToken({ userId: users[users.length - 1]! });
    const imported = await dvault(["auth", "import", "--refresh-token", issued.refresh_token, "--account", "leaving"]);
    expect(imported.code, imported.stderr).toBe(0);
    const revokes = () => sim.log().filter((e) => e.route === "/oauth2/revoke").length;
    const before = revokes();
    await setReadOnly(true);
    let during: Run;
    try {
      during = await dvault(["auth", "logout", "--account", "leaving"]);
    } finally {
      await setReadOnly(false);
    }
    // Revoked, the stored row could not have said so: the account would keep a dead grant, shown as ok.
    expect(revokes()).toBe(before);
    expect(during.code).toBe(3);
    expect(during.stderr.trim().split("\n")).toEqual([expect.stringMatching(/^dvault: (the database refuses writes|PostgreSQL refused a write)/)]);

    const after = await dvault(["auth", "logout", "--account", "leaving"]);
    expect(after.code, after.stderr).toBe(0);
    expect(revokes()).toBe(before + 1);
    // A logged-out account makes auth status exit 4: the other tests see the install as it was.
    await db.pool.query("DELETE FROM accounts WHERE name = 'leaving'");
  }, 60_000);

  it("a refresh answered while the database refuses the row's write: kept beside the key, stored by the next command", async () => {
    const configDir = mkdtempSync(path.join(os.tmpdir(), "dvault-kept-grant-"));
    dirs.push(configDir);
    const pending = path.join(configDir, "pending-grants");
    const presented = () => sim.log().flatMap((e) => (e.route === "/oauth2/token" && typeof e.form.refresh_token === "string" ? [e.form.refresh_token] : []));
    sim.expireAccessTokens();
    const before = presented().length;
    // The refresh's check of the database writes no row and passes; the row's own update after the answer is refused.
    await db.pool.query(
      `CREATE FUNCTION refuse_account_write() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'cannot execute UPDATE in a read-only transaction' USING ERRCODE = 'read_only_sql_transaction'; END $$;
       CREATE TRIGGER refuse_account_write BEFORE UPDATE ON accounts FOR EACH ROW EXECUTE FUNCTION refuse_account_write()`,
    );
    let during: Run;
    try {
      during = await dvault(["auth", "status", "--json"], { DVAULT_CONFIG_DIR: configDir });
    } finally {
      await db.pool.query("DROP TRIGGER refuse_account_write ON accounts; DROP FUNCTION refuse_account_write()");
    }
    expect(during.killed).toBe(false);
    // One refresh per user account (another test may have imported one more), each answer kept in a file of its own.
    const answered = presented().length - before;
    expect(answered).toBeGreaterThanOrEqual(1);
    expect(readdirSync(pending)).toHaveLength(answered);
    const me = (JSON.parse(during.stdout) as Array<{ name: string; placebo: string }>).find((a) => a.name === "me");
    // Said as any refused write is: run it again once the database takes writes; the answer waits beside the key.
    expect(me?.placebo).toMatch(/^failed: PostgreSQL refused a write: the database is read-only .* and run this again/);

    // The next command reads the accounts and stores the kept grants: no refresh of its own, the files gone.
    const after = await dvault(["auth", "status", "--json"], { DVAULT_CONFIG_DIR: configDir });
    expect(after.code, after.stderr).toBe(0);
    expect((JSON.parse(after.stdout) as Array<{ name: string }>).find((a) => a.name === "me")).toMatchObject({ state: "ok", placebo: "ok" });
    expect(presented().length).toBe(before + answered);
    expect(readdirSync(pending)).toEqual([]);
    // No refresh token was ever presented twice.
    expect(new Set(presented()).size).toBe(presented().length);
  }, 60_000);

  it("a refresh while the database refuses writes spends nothing: the grant works once the database is writable again", async () => {
    sim.expireAccessTokens();
    const before = tokenRequests();
    await setReadOnly(true);
    let during: Run;
    try {
      during = await dvault(["auth", "status", "--json"]);
    } finally {
      await setReadOnly(false);
    }
    expect(during.killed).toBe(false);
    // The access token is refused (401), and the refresh that would follow is not sent.
    expect(tokenRequests()).toBe(before);
    const me = (JSON.parse(during.stdout) as Array<{ name: string; state: string; placebo: string }>).find((a) => a.name === "me");
    expect(me?.state).toBe("ok");
    // Said by the refresh's check of the database, or on PostgreSQL alone by the pace's row the call meets first.
    expect(me?.placebo).toMatch(/refuses writes|refused a write: the database is read-only/);

    const after = await dvault(["auth", "status", "--json"]);
    expect(after.code, after.stderr).toBe(0);
    expect((JSON.parse(after.stdout) as Array<{ name: string }>).find((a) => a.name === "me")).toMatchObject({ state: "ok", placebo: "ok" });
  }, 60_000);
});
