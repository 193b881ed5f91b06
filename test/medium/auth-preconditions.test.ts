// `dvault auth import` and `auth login` check what storing a grant needs (the schema migrated, the key)
// before the request that spends a single-use refresh token or code: a failure there leaves the token
// unspent, usable by the next, fixed, attempt.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectPg, quoteIdent } from "../../src/db/connect.ts";
import { pgFields, withDatabase } from "../../src/db/pg-fields.ts";
import { startSimulator, type Simulator } from "../../src/simulator/server.ts";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";
import { TEST_ENGINE, TEST_PG_ADDRESS, TEST_PG_URL, TEST_REDIS_URL } from "../helpers/env.ts";
import { createTestRedis, type TestRedis } from "../helpers/redis.ts";
import { CLIENT_ID, CLIENT_SECRET } from "./tokens-fixture.ts";

const BIN = path.resolve("bin/dvault.js");

type Run = { code: number | null; stdout: string; stderr: string };

describe("dvault auth preconditions", () => {
  let db: TestDatabase;
  let redis: TestRedis;
  let sim: Simulator;
  let baseEnv: Record<string, string>;
  const extraDatabases: string[] = [];

  function dvault(args: string[], env: Record<string, string> = {}): Promise<Run> {
    const child = spawn(process.execPath, [BIN, ...args], { env: { ...baseEnv, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
    return new Promise<Run>((resolve) => child.on("close", (code) => resolve({ code, stdout, stderr })));
  }

  /** An empty database, as `createdb` leaves it: never migrated. */
  async function emptyDatabase(): Promise<string> {
    const name = `dvault_t_bare_${randomBytes(4).toString("hex")}`;
    const admin = await connectPg(TEST_PG_URL);
    await admin.query(`CREATE DATABASE ${quoteIdent(name)}`);
    await admin.end();
    extraDatabases.push(name);
    return withDatabase(TEST_PG_URL, name);
  }

  const tokenRequests = () => sim.log().filter((e) => e.route === "/oauth2/token").length;

  beforeAll(async () => {
    db = await createTestDatabase();
    redis = await createTestRedis();
    sim = await startSimulator({});
    baseEnv = {
      PATH: process.env.PATH ?? "",
      HOME: mkdtempSync(path.join(os.tmpdir(), "dvault-pre-")),
      LOG_LEVEL: "info",
      DATABASE_URL: db.url,
      REDIS_URL: TEST_REDIS_URL,
      DVAULT_ENGINE: TEST_ENGINE,
      DVAULT_REDIS_PREFIX: redis.prefix,
      DVAULT_API_BASE: sim.url,
      DVAULT_CLIENT_ID: CLIENT_ID,
      DVAULT_CLIENT_SECRET: CLIENT_SECRET,
      DVAULT_SECRET_KEY: randomBytes(32).toString("hex"),
    };
  });
  afterAll(async () => {
    await sim.close();
    await redis.cleanup();
    await db.drop();
    const admin = await connectPg(TEST_PG_URL);
    for (const name of extraDatabases) await admin.query(`DROP DATABASE IF EXISTS ${quoteIdent(name)} WITH (FORCE)`);
    await admin.end();
  });

  it("import into a database never migrated: one line, no token request, and the token still works afterwards", async () => {
    const issued = sim.issueUserToken();
    const before = tokenRequests();
    const empty = await emptyDatabase();
    const run = await dvault(["auth", "import", "--refresh-token", issued.refresh_token], { DATABASE_URL: empty });
    expect(tokenRequests()).toBe(before);
    expect(run.code).toBe(3);
    expect(run.stderr.trim().split("\n")).toEqual([
      `dvault: the database "${pgFields(empty).database}" on ${TEST_PG_ADDRESS} has no dvault schema yet: run dvault migrate`,
    ]);

    const retry = await dvault(["auth", "import", "--refresh-token", issued.refresh_token]);
    expect(retry.stderr).toBe("");
    expect(retry.code).toBe(0);
    expect(retry.stdout).toMatch(/^imported \S+ as account/);
  });

  it("import into a database one migration behind: one line naming it, no token request", async () => {
    const behind = await createTestDatabase();
    try {
      const pg = await connectPg(behind.url);
      const { rows } = await pg.query<{ migration_name: string }>(
        "DELETE FROM _prisma_migrations WHERE migration_name = (SELECT max(migration_name) FROM _prisma_migrations) RETURNING migration_name",
      );
      await pg.end();
      const issued = sim.issueUserToken();
      const before = tokenRequests();
      const run = await dvault(["auth", "import", "--refresh-token", issued.refresh_token], { DATABASE_URL: behind.url });
      expect(tokenRequests()).toBe(before);
      expect(run.code).toBe(3);
      expect(run.stderr.trim().split("\n")).toEqual([
        `dvault: the database "${behind.name}" on ${TEST_PG_ADDRESS} is older than this dvault (1 migration(s) not applied, the newest ${rows[0]?.migration_name}): run dvault migrate`,
      ]);
    } finally {
      await behind.drop();
    }
  });

  it("login checks the same before it shows the authorization URL", async () => {
    const empty = await emptyDatabase();
    const run = await dvault(["auth", "login", "--paste", "--no-browser", "--timeout", "10"], { DATABASE_URL: empty });
    expect(run.code).toBe(3);
    expect(run.stderr.trim().split("\n")).toEqual([
      `dvault: the database "${pgFields(empty).database}" on ${TEST_PG_ADDRESS} has no dvault schema yet: run dvault migrate`,
    ]);
  });

  it("the first grant stored without DVAULT_SECRET_KEY creates the key file (0600) and prints its path", async () => {
    // A new install: no account stored yet, no key set, an empty config directory (README: "Back up the key").
    const fresh = await createTestDatabase();
    try {
      const configDir = mkdtempSync(path.join(os.tmpdir(), "dvault-cfg-"));
      const keyFile = path.join(configDir, "secret.key");
      const run = await dvault(["auth", "import", "--refresh-token", sim.issueUserToken().refresh_token], {
        DATABASE_URL: fresh.url,
        DVAULT_SECRET_KEY: "",
        DVAULT_CONFIG_DIR: configDir,
      });
      expect(run.code, run.stderr).toBe(0);
      expect(run.stderr).toBe(`dvault: created the secret key file ${keyFile}: back it up with the database (without it the stored tokens cannot be read)\n`);
      expect(statSync(keyFile).mode & 0o777).toBe(0o600);
    } finally {
      await fresh.drop();
    }
  });

  it("a key file created just now beside tokens sealed under another key: refused before the token is spent", async () => {
    // An account sealed under baseEnv's DVAULT_SECRET_KEY (imported here, not relying on another test); this run finds no key at all.
    const sealed = await dvault(["auth", "import", "--refresh-token", sim.issueUserToken().refresh_token]);
    expect(sealed.code, sealed.stderr).toBe(0);
    const configDir = mkdtempSync(path.join(os.tmpdir(), "dvault-cfg-"));
    const otherUser = [...sim.truth.users.keys()].find((id) => id !== sim.truth.ownerId)!;
    const issued = sim.issueUserToken({ userId: otherUser });
    const before = tokenRequests();
    const run = await dvault(["auth", "import", "--refresh-token", issued.refresh_token, "--account", "other"], {
      DVAULT_SECRET_KEY: "",
      DVAULT_CONFIG_DIR: configDir,
    });
    expect(tokenRequests()).toBe(before);
    expect(run.code).toBe(1);
    const lines = run.stderr.trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^dvault: no key file was found, so a new one was created at .*secret\.key, but the stored tokens were encrypted with another key: point DVAULT_CONFIG_DIR/,
    );

    // As the line says: when that key is lost for good, running again goes on with the new one.
    const again = await dvault(["auth", "import", "--refresh-token", issued.refresh_token, "--account", "other"], {
      DVAULT_SECRET_KEY: "",
      DVAULT_CONFIG_DIR: configDir,
    });
    expect(again.stderr).toBe("");
    expect(again.code).toBe(0);
  });
});
