// The README's first command, as a newcomer runs it (issue #28, "the demo shows grey boxes"): `dvault demo` archives
// the simulator's account, makes the grid's thumbnails from the pictures the simulator drew, and prints a command
// that opens the dashboard over what it archived. That command, run as printed, serves an archive page whose
// tiles are real pictures (WebP thumbnails), not placeholders. The real CLI in child processes.
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import sharp from "sharp";
import { afterAll, beforeAll, expect, it } from "vitest";
import { connectPg, quoteIdent } from "../../src/db/connect.ts";
import { pgFields, withDatabase } from "../../src/db/pg-fields.ts";
import { freePort } from "../../src/free-port.ts";
import { DEFAULT_HTTP_PORT } from "../../src/http/server.ts";
import { deleteKeysByPrefix } from "../../src/queue/redis.ts";
import { collectRun, type CliRun } from "../helpers/dvault-cli.ts";
import { TEST_ENGINE, TEST_PG_URL } from "../helpers/env.ts";
import { createTestRedis, type TestRedis } from "../helpers/redis.ts";
import { DVAULT_COMMAND } from "../../src/cli/demo.ts";

const BIN = path.resolve("bin/dvault.js");
const tag = randomBytes(4).toString("hex");
const database = `dvault_t_demo_${tag}`;
const dir = mkdtempSync(path.join(os.tmpdir(), "dvault-demo-"));
let redis: TestRedis;
let demo: CliRun;
/** The demo's process, stopped after the tests if it is still running (a timed-out start-up). */
let child: ChildProcess | undefined;
/** The dashboard's port as the newcomer's shell sets it (DVAULT_HTTP_PORT): the printed address must follow it. */
let port: number;

function files(root: string, ext: string): string[] {
  return (readdirSync(root, { recursive: true }) as string[]).filter((f) => f.endsWith(ext));
}

beforeAll(async () => {
  redis = await createTestRedis();
  port = await freePort();
  const started = Date.now();
  const spawned = spawn(process.execPath, [BIN, "demo", "--deviations", "40", "--dir", dir], {
    env: {
      PATH: process.env.PATH ?? "",
      HOME: "/nonexistent-home",
      DATABASE_URL: withDatabase(TEST_PG_URL, database),
      REDIS_URL: redis.url,
      // The run's engine: Redis, or PostgreSQL alone (test:postgres, or a run with no Redis).
      DVAULT_ENGINE: TEST_ENGINE,
      DVAULT_REDIS_PREFIX: redis.prefix,
      DVAULT_HTTP_PORT: String(port),
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  child = spawned;
  demo = await collectRun(spawned, started);
  // Minutes, not seconds, on a loaded machine: at load 11 it took over 120 s (a migration, a sync, 40 downloads and
  // their thumbnails, in child processes).
}, 300_000);

afterAll(async () => {
  // A demo still running (its start-up timed out) is stopped before its folder is removed: it may be writing there.
  if (child && child.exitCode === null && child.signalCode === null) {
    const exited = once(child, "exit");
    child.kill("SIGKILL");
    await exited;
  }
  if (TEST_ENGINE === "redis") await deleteKeysByPrefix(redis.redis, `${redis.prefix}-demo`);
  await redis.cleanup();
  const admin = await connectPg(TEST_PG_URL);
  await admin.query(`DROP DATABASE IF EXISTS ${quoteIdent(`${database}_demo`)} WITH (FORCE)`);
  await admin.end();
  rmSync(dir, { recursive: true, force: true, maxRetries: 5 });
});

it("makes the grid's thumbnails from the simulator's pictures, as many as it says", () => {
  expect(demo.code, demo.stderr).toBe(0);
  const line = /^5\/7 pictures (\d+) thumbnails made, (\d+) placeholder tile\(s\) for files that are not pictures, (\d+) failed$/m.exec(demo.stdout);
  expect(line, demo.stdout).not.toBeNull();
  const [made, placeholders, failed] = [Number(line?.[1]), Number(line?.[2]), Number(line?.[3])];
  expect(failed).toBe(0);
  // Both sizes of every picture (src/storage/thumbnails.ts), and a placeholder SVG for each file that is not one.
  const thumbs = path.join(dir, "archive", "thumbnails");
  expect(made).toBeGreaterThan(0);
  expect(files(thumbs, ".webp")).toHaveLength(made * 2);
  expect(files(thumbs, ".svg")).toHaveLength(placeholders);
  // Pictures outnumber the rest: the simulator draws one for every work that is not a video or a text.
  expect(made).toBeGreaterThan(placeholders);
});

/**
 * The printed command names no password (secrets are never printed): on a test server that asks for one (the embedded
 * server of a run with no PostgreSQL answering, test/helpers/test-servers.ts) it names the demo's password file too
 * (PGPASSFILE, src/demo/pass-file.ts), and still runs as printed.
 */
const passwordServer = pgFields(TEST_PG_URL).password !== undefined;

it("prints a dashboard command that, run as printed, shows real pictures in the grid", async () => {
  const lines = demo.stdout.split("\n");
  const at = lines.findIndex((l) => l.endsWith(`DVAULT_WORKER_ROLES=http ${DVAULT_COMMAND} worker`));
  expect(at, demo.stdout).toBeGreaterThan(0);
  // Not the default port: the one this shell's DVAULT_HTTP_PORT gives the worker the command starts.
  expect(port).not.toBe(DEFAULT_HTTP_PORT);
  expect(lines[at + 1]).toContain(`then open http://127.0.0.1:${port}/archive (only the dashboard runs`);
  const env = Object.fromEntries([...(lines[at] ?? "").matchAll(/([A-Z_]+)=(\S+)/g)].map((m) => [m[1], m[2]]));
  // On PostgreSQL alone the command names the engine too (src/cli/demo.ts).
  const named = [
    "DATABASE_URL",
    "DVAULT_ARCHIVE_DIR",
    ...(TEST_ENGINE === "postgres" ? ["DVAULT_ENGINE"] : []),
    "DVAULT_REDIS_PREFIX",
    "DVAULT_WORKER_ROLES",
    ...(passwordServer ? ["PGPASSFILE"] : []),
  ];
  expect(Object.keys(env).sort()).toEqual(named);
  // Run as printed, in the same shell (its DVAULT_HTTP_PORT included).
  const worker = spawn(process.execPath, [BIN, "worker"], {
    env: { PATH: process.env.PATH ?? "", HOME: "/nonexistent-home", REDIS_URL: redis.url, ...env, DVAULT_HTTP_PORT: String(port) },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  worker.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
  try {
    const base = `http://127.0.0.1:${port}`;
    await expect
      .poll(async () => (await fetch(`${base}/healthz`).catch(() => undefined))?.status ?? stderr, { timeout: 30_000, interval: 200 })
      .toBeTypeOf("number");
    const page = await fetch(`${base}/archive`);
    expect(page.status).toBe(200);
    const srcs = [...(await page.text()).matchAll(/<img[^>]* src="(\/thumb\/s\/[^"]+)"/g)].map((m) => m[1] ?? "");
    expect(srcs.length).toBeGreaterThan(10);
    let pictures = 0;
    for (const src of srcs) {
      const res = await fetch(`${base}${src}`);
      expect(res.status).toBe(200);
      if (res.headers.get("content-type") !== "image/webp") continue;
      const meta = await sharp(Buffer.from(await res.arrayBuffer())).metadata();
      expect(meta.width).toBeGreaterThan(0);
      pictures++;
    }
    // Most of the first page's tiles are pictures, not placeholder tiles.
    expect(pictures).toBeGreaterThan(srcs.length / 2);
    // Nothing waits in the demo's queues: its download step did the work the sync queued for a worker.
    const metrics = await (await fetch(`${base}/metrics?format=text`)).text();
    expect(metrics).toMatch(/^dvault_queue_jobs\{queue="downloads",state="waiting"\} 0$/m);
    // The /queues board, in the process as a person runs it: from dist/, its bull-board holds a bullmq of its own
    // beside dvault's bundled one (scripts/vendor.js), and must still read dvault's queues.
    const board = await fetch(`${base}/queues/api/queues?activeQueue=downloads&status=completed&page=1&jobsPerPage=5`);
    expect(board.status).toBe(200);
    const { queues } = (await board.json()) as { queues: Array<{ name: string; counts: Record<string, number> }> };
    expect(queues.map((q) => q.name).sort()).toEqual(["digest", "downloads", "maintenance", "sync"]);
    expect(queues.find((q) => q.name === "downloads")?.counts).toMatchObject({ waiting: 0 });
  } finally {
    worker.kill("SIGTERM");
    await new Promise((r) => worker.once("close", r));
  }
}, 60_000);
