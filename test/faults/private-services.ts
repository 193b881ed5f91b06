// Private Redis and PostgreSQL servers for the restart scenarios: each on its own free port and temporary
// data directory, so stopping, killing or wiping one never touches the shared servers other tests use.
// Also a fault harness (the shape test/faults/check.ts reads) whose database and/or Redis live on them.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, readdirSync } from "node:fs";
import fs from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { Writable } from "node:stream";
import { setTimeout as pause } from "node:timers/promises";
import { setDownloadTuning } from "../../src/downloads/deps.ts";
import { migrate } from "../../src/db/migrate.ts";
import { withDatabase } from "../../src/db/pg-fields.ts";
import { createPgPool } from "../../src/db/connect.ts";
import { createLogger } from "../../src/log.ts";
import { createRedis, deleteKeysByPrefix } from "../../src/queue/redis.ts";
import { redisCoordinator } from "../../src/coord/redis.ts";
import { createServices, type Services } from "../../src/services.ts";
import { startSimulator, type SimulatorOptions } from "../../src/simulator/server.ts";
import { startWorker, type RunningWorker, type WorkerIntervals } from "../../src/worker.ts";
import { runSource } from "../../src/sync/run-source.ts";
import { testConfig } from "../helpers/config.ts";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";
import { TEST_REDIS_URL } from "../helpers/env.ts";
import { storeOwnerGrant } from "../helpers/owner-grant.ts";
import { FAST_OVERRIDES, FAULT_LOCK_TTL_MS, FAULT_SOURCES, SMALL_DATASET, faultEnv, type FaultHarness } from "./harness.ts";
import { freePort } from "../../src/free-port.ts";

/** Sends one inline command and returns the first reply line (or the connection error's code). */
function redisReply(port: number, command: string): Promise<string> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: "127.0.0.1", port });
    let data = "";
    const done = (reply: string) => {
      socket.destroy();
      resolve(reply);
    };
    socket.setTimeout(1000, () => done("timeout"));
    socket.once("error", (err: NodeJS.ErrnoException) => done(err.code ?? err.message));
    socket.once("connect", () => socket.write(`${command}\r\n`));
    socket.on("data", (chunk: Buffer) => {
      data += chunk.toString();
      if (data.includes("\r\n")) done(data.split("\r\n")[0]!);
    });
  });
}

async function waitUntil(what: string, timeoutMs: number, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await pause(25);
  }
}

export type PrivateRedis = {
  url: string;
  port: number;
  dir: string;
  /** "shutdown": SIGTERM, Redis writes and fsyncs its AOF and exits; "kill": SIGKILL, a crash. */
  stop(mode: "shutdown" | "kill"): Promise<void>;
  /** Starts again on the same port; `empty` wipes the data directory first (a Redis that lost everything). */
  start(opts?: { empty?: boolean }): Promise<void>;
  close(): Promise<void>;
};

/** A redis-server with AOF on (no RDB snapshots) in a temporary directory, on a free port. */
export async function startPrivateRedis(): Promise<PrivateRedis> {
  const binary = findBinary("redis-server", []);
  if (!binary) throw new Error("redis-server not found on PATH: the restart fault tests need it (apt-get install redis-server)");
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), "dvault-redis-"));
  const port = await freePort();
  let child: ChildProcess | undefined;
  let output = "";
  const args = [
    "--port",
    String(port),
    "--bind",
    "127.0.0.1",
    "--dir",
    dir,
    "--appendonly",
    "yes",
    "--appendfsync",
    "everysec",
    "--save",
    "",
    "--daemonize",
    "no",
    "--maxmemory-policy",
    "noeviction",
  ];

  const start = async ({ empty = false } = {}) => {
    if (child) throw new Error("private Redis is already running");
    if (empty) for (const entry of await fs.readdir(dir)) await fs.rm(path.join(dir, entry), { recursive: true, force: true });
    output = "";
    const proc = spawn(binary, args, { stdio: ["ignore", "pipe", "pipe"] });
    proc.stdout!.on("data", (c: Buffer) => (output = (output + c.toString()).slice(-4000)));
    proc.stderr!.on("data", (c: Buffer) => (output = (output + c.toString()).slice(-4000)));
    child = proc;
    proc.once("exit", () => {
      if (child === proc) child = undefined;
    });
    try {
      // -LOADING while the AOF is replayed; +PONG once it serves commands.
      await waitUntil(`redis-server on port ${port}`, 10_000, async () => {
        if (proc.exitCode !== null) throw new Error(`redis-server exited with ${proc.exitCode}: ${output.slice(-1000)}`);
        return (await redisReply(port, "PING")) === "+PONG";
      });
    } catch (err) {
      proc.kill("SIGKILL");
      throw err;
    }
  };

  const stop = async (mode: "shutdown" | "kill") => {
    const proc = child;
    if (!proc) return;
    const exited = new Promise<void>((resolve) => proc.once("exit", () => resolve()));
    proc.kill(mode === "kill" ? "SIGKILL" : "SIGTERM");
    await exited;
    child = undefined;
  };

  const onExit = () => child?.kill("SIGKILL");
  process.once("exit", onExit);
  await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    dir,
    start,
    stop,
    async close() {
      await stop("kill");
      process.off("exit", onExit);
      await fs.rm(dir, { recursive: true, force: true });
    },
  };
}

export type PrivatePostgres = {
  /** The server's URL for `database` (default "postgres"). */
  url(database?: string): string;
  port: number;
  dir: string;
  /** "fast": the usual restart (sessions terminated, a clean checkpoint); "immediate": a crash, WAL recovery on start. */
  stop(mode: "fast" | "immediate"): Promise<void>;
  start(): Promise<void>;
  close(): Promise<void>;
};

/** The newest PostgreSQL server binaries: Debian's /usr/lib/postgresql/<version>/bin, else PATH. */
function postgresBinDir(): string {
  const root = "/usr/lib/postgresql";
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((v) => existsSync(path.join(root, v, "bin", "initdb")))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (versions[0]) return path.join(root, versions[0], "bin");
  const initdb = findBinary("initdb", []);
  if (initdb) return path.dirname(initdb);
  throw new Error(
    "initdb not found (looked under /usr/lib/postgresql/*/bin and on PATH): the restart fault tests start a private PostgreSQL. Install the server package (apt-get install postgresql-15).",
  );
}

function findBinary(name: string, extraDirs: string[]): string | undefined {
  for (const dir of [...extraDirs, ...(process.env.PATH ?? "").split(path.delimiter)]) {
    if (dir && existsSync(path.join(dir, name))) return path.join(dir, name);
  }
  return undefined;
}

/**
 * Runs a PostgreSQL tool; as root, as the `postgres` OS user (the server refuses to run as root).
 * Asynchronous: a worker in this process must keep running while a server stops and starts.
 */
function runPgTool(bin: string, args: string[], asPostgres: boolean): Promise<{ ok: boolean; output: string }> {
  const [cmd, argv] = asPostgres ? ["runuser", ["-u", "postgres", "--", bin, ...args]] : [bin, args];
  return new Promise((resolve) => {
    const child = spawn(cmd, argv, { stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout!.on("data", (c: Buffer) => (output += c.toString()));
    child.stderr!.on("data", (c: Buffer) => (output += c.toString()));
    child.once("error", (err) => resolve({ ok: false, output: `${output}${String(err)}` }));
    child.once("close", (code) => resolve({ ok: code === 0, output: output.trim() }));
  });
}

/** initdb into a temporary directory (trust auth, no fsync), started on a free port with its socket inside the directory. */
export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const bin = postgresBinDir();
  const asPostgres = process.getuid?.() === 0;
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), "dvault-pg-"));
  const data = path.join(dir, "data");
  const logFile = path.join(dir, "server.log");
  const port = await freePort();
  if (asPostgres) {
    const ids = spawnSync("id", ["-u", "postgres"], { encoding: "utf8" });
    const gids = spawnSync("id", ["-g", "postgres"], { encoding: "utf8" });
    if (ids.status !== 0) throw new Error("running as root but there is no `postgres` OS user to run the private PostgreSQL as (install postgresql-15)");
    await fs.chown(dir, Number(ids.stdout.trim()), Number(gids.stdout.trim()));
  }
  const init = await runPgTool(path.join(bin, "initdb"), ["-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync"], asPostgres);
  if (!init.ok) {
    await fs.rm(dir, { recursive: true, force: true });
    throw new Error(`initdb failed: ${init.output.slice(-1500)}`);
  }
  const ctl = (args: string[]) => runPgTool(path.join(bin, "pg_ctl"), ["-D", data, ...args], asPostgres);
  const serverOptions = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=60`;
  let running = false;

  const start = async () => {
    const r = await ctl(["-l", logFile, "-w", "-t", "30", "-o", serverOptions, "start"]);
    if (!r.ok) {
      const log = await fs.readFile(logFile, "utf8").catch(() => "");
      throw new Error(`pg_ctl start failed: ${r.output.slice(-500)}\n${log.slice(-1500)}`);
    }
    running = true;
  };
  const stop = async (mode: "fast" | "immediate") => {
    if (!running) return;
    const r = await ctl(["-m", mode, "-w", "-t", "30", "stop"]);
    if (!r.ok) throw new Error(`pg_ctl stop failed: ${r.output.slice(-500)}`);
    running = false;
  };

  // A test process that dies before afterAll (an uncaught error ends a vitest fork) must not leave the server running.
  const onExit = () => {
    if (running)
      spawnSync(asPostgres ? "runuser" : path.join(bin, "pg_ctl"), [
        ...(asPostgres ? ["-u", "postgres", "--", path.join(bin, "pg_ctl")] : []),
        "-D",
        data,
        "-m",
        "immediate",
        "stop",
      ]);
  };
  process.once("exit", onExit);
  try {
    await start();
  } catch (err) {
    await fs.rm(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    url: (database = "postgres") => `postgresql://postgres@127.0.0.1:${port}/${database}`,
    port,
    dir,
    start,
    stop,
    async close() {
      await stop("immediate").catch(() => undefined);
      process.off("exit", onExit);
      await fs.rm(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A fault harness (sim, mirror database, Redis prefix, stored grant, archive, download deps) like
 * createFaultHarness, with the database on a private PostgreSQL (migrated there) and/or the key prefix on a
 * private Redis; whichever is not given is the shared one (a template copy, a fresh prefix).
 */
export async function createPrivateFaultHarness(opts: { sim?: SimulatorOptions; postgres?: PrivatePostgres; redis?: PrivateRedis }): Promise<FaultHarness> {
  const cleanups: Array<() => Promise<unknown>> = [];
  const cleanup = async () => {
    for (const fn of cleanups.reverse()) await fn().catch(() => undefined);
  };
  try {
    const sim = await startSimulator({ dataset: SMALL_DATASET, downloadQuota: 1000, ...opts.sim });
    cleanups.push(() => sim.close());
    const db = opts.postgres ? await privateDatabase(opts.postgres) : await createTestDatabase();
    cleanups.push(() => db.drop());
    const redisUrl = opts.redis?.url ?? TEST_REDIS_URL;
    const prefix = `dvault-test-${randomBytes(5).toString("hex")}`;
    const redis = createRedis(redisUrl);
    await redis.connect();
    cleanups.push(async () => {
      await deleteKeysByPrefix(redis, prefix);
      await redis.quit();
    });
    const archiveDir = await fs.mkdtemp(path.join(os.tmpdir(), "dvault-faults-"));
    cleanups.push(() => fs.rm(archiveDir, { recursive: true, force: true }));
    const key = randomBytes(32);
    const secretKey = { key, source: "env", created: false } as const;
    const env = faultEnv({ databaseUrl: db.url, redisUrl, redisPrefix: prefix, simUrl: sim.url, archiveDir, key });
    const services: Services = await createServices({
      config: testConfig(env),
      log: createLogger({ level: "silent" }),
      overrides: { ...FAST_OVERRIDES, now: () => sim.clock.now().getTime(), secretKey },
    });
    cleanups.push(() => services.close());
    const account = await storeOwnerGrant(services, sim);
    const deps = setDownloadTuning(services, { lockTtlMs: FAULT_LOCK_TTL_MS });
    const startSeq = sim.log().at(-1)?.seq ?? 0;
    return {
      sim,
      db,
      pool: services.pool,
      secretKey,
      redis: { url: redisUrl, prefix, redis, coord: redisCoordinator(redis), queues: services.queues, cleanup: async () => undefined },
      services,
      account,
      runSource: (source, o = {}) =>
        runSource(
          { accountId: account.id, source, ...(o.key !== undefined ? { key: o.key } : {}), ...(o.full !== undefined ? { full: o.full } : {}) },
          { services, sources: FAULT_SOURCES, ...(o.signal ? { signal: o.signal } : {}) },
        ),
      apiCallsSince: (seq = startSeq) => sim.log().filter((e) => e.seq > seq && e.route.startsWith("/api/v1/oauth2")).length,
      lastSeq: () => sim.log().at(-1)?.seq ?? 0,
      deps,
      archiveDir,
      env,
      sourceMap: FAULT_SOURCES,
      close: cleanup,
    };
  } catch (err) {
    await cleanup();
    throw err;
  }
}

/** A database on the private server, migrated with the same `prisma migrate deploy` as `dvault migrate`. */
async function privateDatabase(server: PrivatePostgres): Promise<TestDatabase> {
  const name = `dvault_t_${randomBytes(6).toString("hex")}`;
  const url = withDatabase(server.url(), name);
  await migrate(url, { createDatabase: true });
  const pool = createPgPool(url);
  return {
    url,
    name,
    pool,
    // The whole server goes with the test file; only the client is closed here.
    drop: () => pool.end(),
  };
}

/** Intervals of the worker under test: downloads handed to the queue, Redis checked and outage retries every fraction of a second. */
export const FAULT_WORKER_INTERVALS = { downloadsEnqueueMs: 250, redisCheckMs: 500, outageRetryMs: 200 } as const;

export type FaultWorker = {
  worker: RunningWorker;
  /** The `msg` of every line the worker logged at warn or above, in order. */
  warnings: string[];
};

/**
 * The real worker (`dvault worker` without its signal handlers) on the harness's config, with the fault
 * suite's fast backoffs; its warnings are kept (and printed with DVAULT_FAULTS_LOG=<level>).
 */
export async function startFaultWorker(h: FaultHarness, intervals: Partial<WorkerIntervals> = {}): Promise<FaultWorker> {
  const warnings: string[] = [];
  const echo = process.env.DVAULT_FAULTS_LOG;
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split("\n").filter(Boolean)) {
        const entry = JSON.parse(line) as { level: number; msg?: string };
        if (entry.level >= 40) warnings.push(entry.msg ?? "");
        if (echo) process.stderr.write(`${line}\n`);
      }
      done();
    },
  });
  const worker = await startWorker({
    config: testConfig(h.env),
    log: createLogger({ level: (echo as "info" | undefined) ?? "warn", destination, pretty: false }),
    handleSignals: false,
    overrides: {
      ...FAST_OVERRIDES,
      now: () => h.sim.clock.now().getTime(),
      secretKey: { key: Buffer.from(h.env.DVAULT_SECRET_KEY!, "hex"), source: "env", created: false },
    },
    intervals: { ...FAULT_WORKER_INTERVALS, ...intervals },
  });
  setDownloadTuning(worker.services, { lockTtlMs: FAULT_LOCK_TTL_MS });
  return { worker, warnings };
}

export type RunProgress = {
  /** Sources whose last run finished ok or degraded with no sweep left open. */
  sourcesDone: number;
  downloadsDone: number;
  /** Downloads wanted, queued or failed. */
  downloadsLeft: number;
  /** What is not finished yet, and its last error: for a failure message. */
  pending: string[];
};

/** How far the run is, from the database alone. */
export async function progress(h: FaultHarness): Promise<RunProgress> {
  const { rows: sources } = await h.pool.query<{ source: string; last_result: string | null; last_error: string | null; open: boolean }>(
    "SELECT source, last_result::text, last_error, sweep_started_at IS NOT NULL AS open FROM sync_sources WHERE account_id = $1",
    [h.account.id],
  );
  const { rows: downloads } = await h.pool.query<{ status: string; n: number; error: string | null }>(
    "SELECT status::text, count(*)::int AS n, max(last_error) AS error FROM downloads GROUP BY status",
  );
  const done = sources.filter((s) => (s.last_result === "ok" || s.last_result === "degraded") && !s.open);
  const count = (statuses: string[]) => downloads.filter((d) => statuses.includes(d.status)).reduce((n, d) => n + d.n, 0);
  return {
    sourcesDone: done.length,
    downloadsDone: count(["done"]),
    downloadsLeft: count(["wanted", "queued", "failed"]),
    pending: [
      ...[...FAULT_SOURCES.keys()]
        .filter((name) => !done.some((s) => s.source === name))
        .map((name) => {
          const s = sources.find((r) => r.source === name);
          return `${name}: ${s ? `${s.last_result ?? "running"}${s.last_error ? ` (${s.last_error.slice(0, 120)})` : ""}` : "never ran"}`;
        }),
      ...downloads.filter((d) => d.status !== "done").map((d) => `${d.n} downloads ${d.status}${d.error ? ` (${d.error.slice(0, 120)})` : ""}`),
    ],
  };
}

/** Every source synced and every wanted file stored. */
export function converged(p: RunProgress): boolean {
  return p.sourcesDone >= FAULT_SOURCES.size && p.downloadsLeft === 0 && p.downloadsDone > 0;
}

/** Polls `probe` until `ok`; a probe that throws (the server is down) counts as not yet. */
/** The longest one probe of waitFor may take before it counts as failed. */
const PROBE_MS = 5000;

export async function waitFor<T>(what: string, timeoutMs: number, probe: () => Promise<T>, ok: (v: T) => boolean): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: T | Error | undefined;
  for (;;) {
    // A probe that hangs (a query on a connection the restart left half-open) counts as a failed one after
    // PROBE_MS and is asked again, so the wait ends with what it waited for instead of the test's timeout.
    let timer: NodeJS.Timeout | undefined;
    const hung = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`the probe hung for ${PROBE_MS} ms`)), PROBE_MS);
    });
    last = await Promise.race([probe(), hung])
      .catch((err: unknown) => (err instanceof Error ? err : new Error(String(err))))
      .finally(() => clearTimeout(timer));
    if (!(last instanceof Error) && ok(last)) return last;
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; last: ${last instanceof Error ? last.message : JSON.stringify(last)}`);
    await pause(50);
  }
}
