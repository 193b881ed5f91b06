import { spawn } from "node:child_process";
import { postgresCoordinator } from "../../src/coord/postgres.ts";
import { describeNeedingRedis } from "../helpers/needs-redis.ts";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import net from "node:net";
import tls from "node:tls";
import os from "node:os";
import path from "node:path";
import { Queue, QueueEvents } from "bullmq";
import { z } from "zod";
import { freePort } from "../../src/free-port.ts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectPg } from "../../src/db/connect.ts";
import { migrate, migrationsUpToDate } from "../../src/db/migrate.ts";
import { withDatabase } from "../../src/db/pg-fields.ts";
import { checkCatalogue, defineJob, type JobContext } from "../../src/queue/job-definition.ts";
import { WorkerHost } from "../../src/queue/worker-host.ts";
import { createLogger } from "../../src/log.ts";
import { loadSecretKey } from "../../src/secret-key.ts";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";
import { TEST_ENGINE, TEST_PG_URL, TEST_REDIS_URL } from "../helpers/env.ts";
import { createTestRedis, type TestRedis } from "../helpers/redis.ts";
import { testConfig } from "../helpers/config.ts";
import { makeServiceCertificate } from "../helpers/service-name-tunnel.ts";

const BIN = path.resolve("bin/dvault.js");

type Run = { code: number | null; stdout: string; stderr: string };

function runCli(args: string[], env: Record<string, string>, opts: { untilLine?: RegExp; signal?: NodeJS.Signals } = {}) {
  const child = spawn(process.execPath, [BIN, ...args], {
    env: { PATH: process.env.PATH ?? "", HOME: os.tmpdir(), LOG_LEVEL: "info", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  let signalled = false;
  child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
  child.stderr.on("data", (c: Buffer) => {
    stderr += c.toString();
    if (!signalled && opts.untilLine && opts.signal && opts.untilLine.test(stderr)) {
      signalled = true;
      child.kill(opts.signal);
    }
  });
  return new Promise<Run>((resolve) => child.on("close", (code) => resolve({ code, stdout, stderr })));
}

/** No "    at file:line" frames: a user sees one line, not a stack. */
function expectNoStack(text: string) {
  expect(text).not.toMatch(/^\s+at .+:\d+/m);
}

describe("dvault migrate", () => {
  const dbName = `dvault_t_migrate_${process.pid}`;
  const url = withDatabase(TEST_PG_URL, dbName);
  // A migrated database for the tests that read one (the first test makes its own from nothing).
  let migrated: TestDatabase;
  beforeAll(async () => {
    migrated = await createTestDatabase();
  });
  afterAll(async () => {
    await migrated?.drop();
    const admin = await connectPg(TEST_PG_URL);
    await admin.query(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`);
    await admin.end();
  });

  it("creates the database, applies migrations, and says there is nothing to apply the second time", async () => {
    const first = await runCli(["migrate"], { DATABASE_URL: url });
    expect(first.stderr).toBe("");
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/created database/);
    expect(first.stdout).toMatch(/applied \d+ migration\(s\).*_init/);
    const second = await runCli(["migrate"], { DATABASE_URL: url });
    expect(second.code).toBe(0);
    expect(second.stdout).toMatch(/^nothing to apply/m);
    const client = await connectPg(url);
    const tables = await client.query("SELECT tablename FROM pg_tables WHERE schemaname = 'public'");
    await client.end();
    expect(tables.rows.map((r: { tablename: string }) => r.tablename)).toContain("accounts");
  });

  it("reports the migrations it applied by name", async () => {
    const result = await migrate(migrated.url);
    expect(result).toEqual({ databaseCreated: false, applied: [] });
  });

  it("skips the Prisma CLI only when every migration is applied unchanged; anything else goes to prisma migrate deploy", async () => {
    const client = await connectPg(migrated.url);
    try {
      expect(await migrationsUpToDate(client)).toBe(true);
      const last = "(SELECT migration_name FROM _prisma_migrations ORDER BY migration_name DESC LIMIT 1)";
      // An edited, a failed and a rolled-back migration.
      const changes = [
        `UPDATE _prisma_migrations SET checksum = 'edited' WHERE migration_name = ${last}`,
        `UPDATE _prisma_migrations SET finished_at = NULL WHERE migration_name = ${last}`,
        `UPDATE _prisma_migrations SET rolled_back_at = now() WHERE migration_name = ${last}`,
      ];
      for (const change of changes) {
        await client.query("BEGIN");
        await client.query(change);
        expect(await migrationsUpToDate(client)).toBe(false);
        await client.query("ROLLBACK");
      }
      await client.query("BEGIN");
      await client.query(
        "INSERT INTO _prisma_migrations (id, checksum, finished_at, migration_name, applied_steps_count) VALUES ('x', 'x', now(), '29990101000000_unknown', 1)",
      );
      expect(await migrationsUpToDate(client)).toBe(false);
      await client.query("ROLLBACK");
      // A pending migration: the last one's row missing.
      await client.query("BEGIN");
      await client.query(`DELETE FROM _prisma_migrations WHERE migration_name = ${last}`);
      expect(await migrationsUpToDate(client)).toBe(false);
      await client.query("ROLLBACK");
      expect(await migrationsUpToDate(client)).toBe(true);
    } finally {
      await client.end();
    }
  });
});

describe("connection failures", () => {
  it("a wrong DATABASE_URL gives one clear line with the password masked and exit code 3", async () => {
    const run = await runCli(["migrate"], { DATABASE_URL: "postgresql://dv:hunter2@127.0.0.1:1/dvault" });
    expect(run.code).toBe(3);
    const lines = run.stderr.trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^dvault: cannot reach PostgreSQL at postgresql:\/\/dv:\*\*\*@127\.0\.0\.1:1\/dvault \(ECONNREFUSED\)\. Start it/);
    expect(run.stderr).not.toContain("hunter2");
    expectNoStack(run.stderr);
  });

  it("an unreachable Redis gives one clear line with the password masked and exit code 3", async () => {
    const run = await runCli(["worker"], { REDIS_URL: "redis://:hunter2@127.0.0.1:1" });
    expect(run.code).toBe(3);
    const lines = run.stderr.trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^dvault: cannot reach Redis at redis:\/\/:\*\*\*@127\.0\.0\.1:1 \(ECONNREFUSED\)\. Start it/);
    expect(run.stderr).not.toContain("hunter2");
    expectNoStack(run.stderr);
  });

  it("a DATABASE_URL asking for SSL from a server that takes none, or that shows a certificate it cannot verify: one line each, not an unexpected error", async () => {
    // A server speaking just enough of PostgreSQL's protocol: its answer to the client's SSLRequest ("N": no SSL, or
    // "S" and then TLS with a certificate of a CA the process does not know).
    const dir = mkdtempSync(path.join(os.tmpdir(), "dvault-pg-ssl-"));
    const { key, cert } = await makeServiceCertificate(dir);
    const servers = ["N", "S"].map((answer) =>
      net.createServer((socket) =>
        socket.once("data", () => {
          socket.write(answer);
          if (answer === "S") new tls.TLSSocket(socket, { isServer: true, key, cert }).on("error", () => undefined);
        }),
      ),
    );
    const ports = await Promise.all(
      servers.map((server) => new Promise<number>((resolve) => server.listen(0, "127.0.0.1", () => resolve((server.address() as net.AddressInfo).port)))),
    );
    try {
      const url = (port: number | undefined) => `postgresql://dv:hunter2@127.0.0.1:${port}/dvault?sslmode=require`;
      const [plain, untrusted] = await Promise.all([runCli(["status"], { DATABASE_URL: url(ports[0]) }), runCli(["status"], { DATABASE_URL: url(ports[1]) })]);
      expect(plain.stderr).toBe(
        `dvault: PostgreSQL at postgresql://dv:***@127.0.0.1:${ports[0]}/dvault?sslmode=require takes no SSL connections, and DATABASE_URL's sslmode=require has dvault connect with SSL only: leave sslmode out (or set it to disable), or turn ssl on in the server's postgresql.conf\n`,
      );
      expect(untrusted.stderr).toMatch(
        new RegExp(
          `^dvault: PostgreSQL at postgresql://dv:\\*\\*\\*@127\\.0\\.0\\.1:${ports[1]}/dvault\\?sslmode=require offered a certificate that cannot be verified \\([A-Z_]+\\), which DATABASE_URL's sslmode=require requires: give the server a certificate from a trusted CA, or name its CA's file in NODE_EXTRA_CA_CERTS\n$`,
        ),
      );
      expect([plain.code, untrusted.code]).toEqual([1, 1]);
    } finally {
      await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("invalid configuration names every bad variable in one line", async () => {
    const run = await runCli(["migrate"], { DATABASE_URL: "nope", LOG_LEVEL: "loud" });
    expect(run.code).toBe(1);
    expect(run.stderr.trim().split("\n")).toHaveLength(1);
    expect(run.stderr).toMatch(/DATABASE_URL .*LOG_LEVEL/);
  });
});

describe("dvault worker", () => {
  let db: TestDatabase;
  let redis: TestRedis;
  beforeAll(async () => {
    db = await createTestDatabase();
    redis = await createTestRedis();
  });
  afterAll(async () => {
    await db.drop();
    await redis.cleanup();
  });

  it("starts, publishes a heartbeat, and shuts down cleanly on SIGTERM", async () => {
    const run = await runCli(
      ["worker"],
      { DATABASE_URL: db.url, REDIS_URL: TEST_REDIS_URL, DVAULT_ENGINE: TEST_ENGINE, DVAULT_REDIS_PREFIX: redis.prefix },
      { untilLine: /worker ready/, signal: "SIGTERM" },
    );
    expect(run.code).toBe(0);
    expect(run.stderr).toMatch(/worker stopped/);
    // Removed at shutdown, from the run's engine.
    const coord = TEST_ENGINE === "redis" ? redis.coord : await postgresCoordinator(db.pool);
    try {
      expect(await coord.keysStartingWith(`${redis.prefix}:heartbeat:`)).toEqual([]);
    } finally {
      if (TEST_ENGINE !== "redis") await coord.close();
    }
  });

  it("on PostgreSQL alone starts with no Redis answering, and no password of DATABASE_URL or REDIS_URL reaches its log", async () => {
    const run = await runCli(
      ["worker"],
      {
        DVAULT_ENGINE: "postgres",
        DATABASE_URL: db.url.replace("postgres@", "postgres:not-a-secret@"),
        REDIS_URL: `redis://:also-not-a-secret@127.0.0.1:${await freePort()}`,
        LOG_LEVEL: "debug",
      },
      { untilLine: /worker ready/, signal: "SIGTERM" },
    );
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toMatch(/worker stopped/);
    expect(`${run.stdout}${run.stderr}`).not.toMatch(/not-a-secret/);
  });
});

// Its reason as stored in Redis's keys: Redis itself.
describeNeedingRedis("the worker host's failures", () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await createTestRedis();
  });
  afterAll(async () => {
    await redis.cleanup();
  });

  it("stores a failure reason in Redis without the secrets the error carried", async () => {
    const token = "at-redis-leak-check-0123456789abcdef";
    const connection = { url: TEST_REDIS_URL };
    const queue = new Queue("maintenance", { connection, prefix: redis.prefix });
    const events = new QueueEvents("maintenance", { connection, prefix: redis.prefix });
    const leak = defineJob({ name: "test.leak", queue: "maintenance", payload: z.object({ accountId: z.number() }), attempts: 1, backoffMs: 10 }, async () => {
      throw new Error(`GET https://www.deviantart.com/api/v1/oauth2/placebo?access_token=${token} failed with Authorization: Bearer ${token}`);
    });
    const worker = new WorkerHost<JobContext>({
      entries: checkCatalogue([leak]),
      backend: redis.queues,
      log: createLogger({ level: "silent" }),
      queues: ["maintenance"],
      makeContext: (base) => base,
    });
    worker.start();
    try {
      await events.waitUntilReady();
      const job = await queue.add("test.leak", { accountId: 1 }, { attempts: 1 });
      await expect(job.waitUntilFinished(events, 10_000)).rejects.toThrow(/placebo/);
      const keys = await redis.redis.keys(`${redis.prefix}:*`);
      expect(keys.length).toBeGreaterThan(0);
      for (const key of keys) {
        const type = await redis.redis.type(key);
        const dump =
          type === "hash"
            ? JSON.stringify(await redis.redis.hgetall(key))
            : type === "string"
              ? String(await redis.redis.get(key))
              : type === "list"
                ? JSON.stringify(await redis.redis.lrange(key, "0", "-1"))
                : type === "zset"
                  ? JSON.stringify(await redis.redis.zrange(key, "0", "-1"))
                  : type === "stream"
                    ? JSON.stringify(await redis.redis.xrange(key, "-", "+"))
                    : "";
        expect(dump).not.toContain(token);
      }
      const failed = await queue.getJob(job.id!);
      expect(failed?.failedReason).toContain("access_token=[redacted]");
    } finally {
      await worker.close();
      await events.close();
      await queue.close();
    }
  });
});

describe(loadSecretKey.name, () => {
  it("creates a 0600 key file on first use and reads the same key afterwards", () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "dvault-key-"));
    const config = testConfig({ DVAULT_CONFIG_DIR: dir });
    const told: string[] = [];
    const first = loadSecretKey(config, (file) => told.push(file));
    expect(first.created).toBe(true);
    expect(first.path).toBe(path.join(dir, "secret.key"));
    expect(statSync(first.path!).mode & 0o777).toBe(0o600);
    const second = loadSecretKey(config, (file) => told.push(file));
    expect(second.created).toBe(false);
    // The path is told once, when the file is created (services log it; auth login/import print it).
    expect(told).toEqual([first.path]);
    expect(second.key.equals(first.key)).toBe(true);
    expect(readFileSync(first.path!, "utf8").trim()).toHaveLength(64);
  });

  it("prefers DVAULT_SECRET_KEY", () => {
    const key = "cd".repeat(32);
    const loaded = loadSecretKey(testConfig({ DVAULT_SECRET_KEY: key, DVAULT_CONFIG_DIR: "/nonexistent" }));
    expect(loaded.source).toBe("env");
    expect(loaded.key.toString("hex")).toBe(key);
  });
});
