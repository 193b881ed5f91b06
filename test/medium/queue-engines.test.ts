// The job behaviours dvault relies on, on either engine (src/queue/backend.ts): Redis, and BullMQ's PostgreSQL
// backend. Each test has queues of its own (a Redis prefix, a PostgreSQL schema in this file's database), removed
// after it.
import { REDIS_IN_RUN } from "../helpers/needs-redis.ts";
import { randomBytes } from "node:crypto";
import { BullMQAdapter } from "@bull-board/api/bullMQAdapter";
import { PostgresQueueBackend, Queue } from "bullmq";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import pg from "pg";
import { z } from "zod";
import { freePort } from "../../src/free-port.ts";
import { ApiError, ThrottleDelayError } from "../../src/api/errors.ts";
import { QueueJobsRepository } from "../../src/db/queue-jobs.repository.ts";
import { createLogger } from "../../src/log.ts";
import { scanKeys } from "../../src/redis-scan.ts";
import { JobEventCounter } from "../../src/metrics.ts";
import { postgresQueueBackend, type QueueBackend } from "../../src/queue/backend.ts";
import { checkCatalogue, defineJob, InterruptedError, type JobContext } from "../../src/queue/job-definition.ts";
import { Producer } from "../../src/queue/producer.ts";
import { QueueAdmin } from "../../src/queue/queue-admin.ts";
import { watchRedisLoss } from "../../src/queue/redis-loss-guard.ts";
import { runNow } from "../../src/queue/run-now.ts";
import { WorkerHost } from "../../src/queue/worker-host.ts";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";
import { queueOf } from "../helpers/producer-queue.ts";
import { createTestRedis } from "../helpers/redis.ts";

const log = createLogger({ level: "silent" });
const Work = z.object({
  n: z.number(),
  mode: z.enum(["ok", "flaky", "wait", "permanent", "slow", "stubborn", "read-only", "disk-full", "outage", "redis-away"]),
  priority: z.number().optional(),
});
type W = z.infer<typeof Work>;
const Tick = z.object({});
type Jobs = { "t.work": W; "t.dedupe": { key: string }; "t.tick": Record<string, never>; "t.removed": { n: number } };

/** What the handlers saw, in order: the job's n (or "tick"/"dedupe") and the attempt it was told. */
let seen: Array<{ n: number | string; attempt: number }> = [];
const failedOnce = new Set<number>();
/** How often each job of mode "outage" has met PostgreSQL away. */
const outageHits = new Map<number, number>();
/** The runs a job of mode "outage" meets the outage before the database is back. */
const OUTAGE_RUNS = 3;
let release: () => void = () => undefined;
let permanentFails = true;

const work = defineJob(
  {
    name: "t.work",
    queue: "maintenance",
    payload: Work,
    attempts: 3,
    backoffMs: 10,
    jitter: 0,
    jobId: (p: W) => `work-${p.n}`,
    priority: (p: W) => p.priority,
  },
  async (p: W, ctx: JobContext) => {
    seen.push({ n: p.n, attempt: ctx.attempt });
    if (p.mode === "flaky" && ctx.attempt < 3) throw new Error(`flaky attempt ${ctx.attempt}`);
    if (p.mode === "wait" && !failedOnce.has(p.n)) {
      failedOnce.add(p.n);
      throw new ThrottleDelayError({ operation: "gallery.all", status: 429, waitMs: 30, retryAt: 0, pacerKey: "1:u1" });
    }
    if ((p.mode === "read-only" || p.mode === "disk-full") && !failedOnce.has(p.n)) {
      failedOnce.add(p.n);
      await refusedWrite(p.mode);
    }
    if (p.mode === "outage" && (outageHits.get(p.n) ?? 0) < OUTAGE_RUNS) {
      outageHits.set(p.n, (outageHits.get(p.n) ?? 0) + 1);
      await unreachableDatabase();
    }
    if (p.mode === "redis-away" && (outageHits.get(p.n) ?? 0) < OUTAGE_RUNS) {
      outageHits.set(p.n, (outageHits.get(p.n) ?? 0) + 1);
      // What ioredis answers a command while its connection is down.
      throw new Error("Connection is closed.");
    }
    if (p.mode === "permanent" && permanentFails) throw new ApiError({ kind: "client", operation: "deviation.get", status: 400, errorDescription: "bad" });
    // Finishes when released, whatever the abort says (a send that cannot be taken back once begun).
    if (p.mode === "stubborn") await new Promise<void>((resolve) => (release = resolve));
    if (p.mode === "slow") {
      await new Promise<void>((resolve) => {
        release = resolve;
        ctx.signal.addEventListener("abort", () => resolve());
      });
      if (ctx.signal.aborted) throw new InterruptedError();
    }
    return { status: "done" };
  },
);
/**
 * A write PostgreSQL refuses, as a read-only database (a standby, default_transaction_read_only) or a server whose
 * disk is full answers it. No test fills a disk: the server raises the SQLSTATE a full one gives.
 */
async function refusedWrite(mode: "read-only" | "disk-full"): Promise<void> {
  const client = await db.pool.connect();
  try {
    if (mode === "read-only") {
      await client.query("BEGIN READ ONLY");
      await client.query("CREATE TEMP TABLE refused (n int)");
    } else {
      await client.query(`DO $$ BEGIN RAISE EXCEPTION 'could not extend file: No space left on device' USING ERRCODE = 'disk_full'; END $$`);
    }
  } finally {
    await client.query("ROLLBACK").catch(() => undefined);
    client.release();
  }
}
/** What a job meets while PostgreSQL is away: the driver's own error for a server that refuses the connection. */
async function unreachableDatabase(): Promise<void> {
  const client = new pg.Client({ connectionString: `postgres://root@127.0.0.1:${closedPort}/dvault`, connectionTimeoutMillis: 2000 });
  client.on("error", () => undefined);
  try {
    await client.connect();
  } finally {
    await client.end().catch(() => undefined);
  }
  throw new Error("a server was listening on the closed port");
}
const dedupe = defineJob(
  { name: "t.dedupe", queue: "maintenance", payload: z.object({ key: z.string() }), attempts: 1, backoffMs: 10, dedupeKey: (p: { key: string }) => p.key },
  async (p: { key: string }, ctx: JobContext) => {
    seen.push({ n: `dedupe-${p.key}`, attempt: ctx.attempt });
    return { status: "done" };
  },
);
const tick = defineJob({ name: "t.tick", queue: "maintenance", payload: Tick, attempts: 1, backoffMs: 10 }, async (_p: object, ctx: JobContext) => {
  seen.push({ n: "tick", attempt: ctx.attempt });
  return { status: "done" };
});
/** Removed from its queue as it completes, as download.file is. */
const removed = defineJob(
  {
    name: "t.removed",
    queue: "maintenance",
    payload: z.object({ n: z.number() }),
    attempts: 1,
    backoffMs: 10,
    jobId: (p: { n: number }) => `removed-${p.n}`,
    removeOnComplete: true,
  },
  async (p: { n: number }, ctx: JobContext) => {
    seen.push({ n: `removed-${p.n}`, attempt: ctx.attempt });
    return { status: "done" };
  },
);
const entries = checkCatalogue<JobContext>([work, dedupe, tick, removed]);
const definitions = [work.definition, dedupe.definition, tick.definition, removed.definition];

let db: TestDatabase;
let closedPort: number;
beforeAll(async () => {
  db = await createTestDatabase();
  closedPort = await freePort();
});
afterAll(async () => {
  await db.drop();
});

/** `scratches`: how many run-now scratch namespaces (src/queue/backend.ts#scratch) exist beside the backend's. */
type Opened = { backend: QueueBackend; scratches(): Promise<number>; cleanup(): Promise<void> };
const ENGINES: Array<{ engine: string; open(): Promise<Opened> }> = [
  {
    engine: "redis",
    async open() {
      const r = await createTestRedis();
      return { backend: r.queues, scratches: async () => (await scanKeys(r.redis, `${r.prefix}:once-*`)).length, cleanup: () => r.cleanup() };
    },
  },
  {
    engine: "postgres",
    async open() {
      const schema = `dvault_jobs_${randomBytes(5).toString("hex")}`;
      const tables = (s: string) => new QueueJobsRepository(db.pool, s);
      const backend = await postgresQueueBackend({ url: db.url, schema, tables });
      return {
        backend,
        async scratches() {
          const { rows } = await db.pool.query("SELECT count(*)::int AS n FROM pg_namespace WHERE nspname LIKE $1", [`${schema}_once_%`]);
          return rows[0].n as number;
        },
        async cleanup() {
          await backend.close();
          await tables(schema).dropSchema();
        },
      };
    },
  },
];

// On a run with no Redis (test/helpers/test-servers.ts, which says so in its first line) only PostgreSQL's backend.
describe.each(ENGINES.filter((e) => REDIS_IN_RUN || e.engine !== "redis"))("queues on $engine", ({ engine, open }) => {
  let opened: Opened;
  let backend: QueueBackend;
  let producer: Producer<Jobs>;
  let admin: QueueAdmin;
  const hosts: WorkerHost<JobContext>[] = [];

  const startHost = (name?: string, hostLog = log) => {
    const host = new WorkerHost<JobContext>({
      entries,
      backend,
      log: hostLog,
      queues: ["maintenance"],
      makeContext: (base) => base,
      outageRetryMs: 20,
      ...(name ? { name } : {}),
    });
    host.start();
    hosts.push(host);
    return host;
  };
  const stateOf = (id: string) => queueOf(producer, "maintenance").getJobState(id);

  beforeEach(async () => {
    seen = [];
    failedOnce.clear();
    outageHits.clear();
    permanentFails = true;
    opened = await open();
    backend = opened.backend;
    producer = new Producer<Jobs>(definitions, backend);
    admin = new QueueAdmin(backend);
  });
  afterEach(async () => {
    release();
    await Promise.all(hosts.splice(0).map((h) => h.close()));
    await producer.close();
    await admin.close();
    await opened.cleanup();
  });

  it("adds through the producer: one job per job id, one per dedupe key while it waits, the highest priority first", async () => {
    const a = await producer.enqueue("t.work", { n: 1, mode: "ok", priority: 3 });
    const again = await producer.enqueue("t.work", { n: 1, mode: "ok", priority: 3 });
    expect(again.id).toBe(a.id);
    await producer.enqueue("t.work", { n: 2, mode: "ok", priority: 1 });
    await producer.enqueue("t.work", { n: 3, mode: "ok", priority: 2 });
    const d1 = await producer.enqueue("t.dedupe", { key: "k" });
    const d2 = await producer.enqueue("t.dedupe", { key: "k" });
    expect(d2.id).toBe(d1.id);
    const [counts] = (await admin.counts()).filter((c) => c.name === "maintenance");
    expect(counts).toMatchObject({ waiting: 4, active: 0, failed: 0 });
    expect(counts?.oldestWaitingMs).not.toBeNull();
    startHost();
    await expect.poll(() => seen.length, { timeout: 10_000 }).toBe(4);
    // Plain jobs (dedupe) wait behind none; prioritized ones run 1, 2, 3.
    expect(seen.filter((s) => typeof s.n === "number").map((s) => s.n)).toEqual([2, 3, 1]);
  });

  it("retries a failing job with backoff, and a job that waits (DelayedError) runs again without spending an attempt", async () => {
    startHost();
    await producer.enqueue("t.work", { n: 10, mode: "flaky" });
    await producer.enqueue("t.work", { n: 11, mode: "wait" });
    await expect.poll(() => Promise.all([stateOf("work-10"), stateOf("work-11")]), { timeout: 10_000 }).toEqual(["completed", "completed"]);
    expect(seen.filter((s) => s.n === 10).map((s) => s.attempt)).toEqual([1, 2, 3]);
    expect(seen.filter((s) => s.n === 11).map((s) => s.attempt)).toEqual([1, 1]);
  });

  it("runs a job PostgreSQL refused a write (read-only, disk full) again without spending an attempt, with one warning a minute", async () => {
    const lines: { level: number; msg: string; delayedMeanwhile?: number }[] = [];
    startHost(undefined, createLogger({ level: "debug", destination: { write: (line: string) => void lines.push(JSON.parse(line)) } }));
    // More jobs than the one warning: a refusal that lasts meets every queued job again and again.
    const ns = [12, 13, 14, 15, 16];
    for (const n of ns) await producer.enqueue("t.work", { n, mode: n === 13 ? "disk-full" : "read-only" });
    await expect.poll(() => Promise.all(ns.map((n) => stateOf(`work-${n}`))), { timeout: 10_000 }).toEqual(ns.map(() => "completed"));
    for (const n of ns) expect(seen.filter((s) => s.n === n).map((s) => s.attempt)).toEqual([1, 1]);
    const refused = lines.filter((l) => l.msg.startsWith("PostgreSQL refuses writes"));
    expect(refused.map((l) => l.level)).toEqual([40, 20, 20, 20, 20]);
  });

  it("runs a job that met PostgreSQL away again without spending an attempt, with one warning a minute however many jobs meet it", async () => {
    const lines: { level: number; msg: string }[] = [];
    startHost(undefined, createLogger({ level: "debug", destination: { write: (line: string) => void lines.push(JSON.parse(line)) } }));
    // An outage of an hour meets every queued job again every few seconds: here five jobs, three times each.
    const ns = [20, 21, 22, 23, 24];
    for (const n of ns) await producer.enqueue("t.work", { n, mode: "outage" });
    await expect.poll(() => Promise.all(ns.map((n) => stateOf(`work-${n}`))), { timeout: 10_000 }).toEqual(ns.map(() => "completed"));
    for (const n of ns) expect(seen.filter((s) => s.n === n).map((s) => s.attempt)).toEqual(Array(OUTAGE_RUNS + 1).fill(1));
    const delayed = lines.filter((l) => l.msg.startsWith("service unavailable: job delayed"));
    expect(delayed.map((l) => l.level)).toEqual([40, ...Array(ns.length * OUTAGE_RUNS - 1).fill(20)]);
  });

  it("warns of Redis away too while the warning of PostgreSQL away holds its minute", async () => {
    const lines: { level: number; msg: string; service?: string }[] = [];
    startHost(undefined, createLogger({ level: "debug", destination: { write: (line: string) => void lines.push(JSON.parse(line)) } }));
    await producer.enqueue("t.work", { n: 30, mode: "outage" });
    await expect.poll(() => stateOf("work-30"), { timeout: 10_000 }).toBe("completed");
    await producer.enqueue("t.work", { n: 31, mode: "redis-away" });
    await expect.poll(() => stateOf("work-31"), { timeout: 10_000 }).toBe("completed");
    const warned = lines.filter((l) => l.msg.startsWith("service unavailable: job delayed") && l.level === 40);
    expect(warned.map((l) => l.service)).toEqual(["PostgreSQL or Redis", "Redis"]);
  });

  it("installs a job scheduler once, however often it is installed, and it fires", async () => {
    await producer.schedule("t.tick", {}, { everyMs: 150 });
    await producer.schedule("t.tick", {}, { everyMs: 150 });
    expect(await queueOf(producer, "maintenance").getJobSchedulers(0, -1)).toHaveLength(1);
    expect(await producer.hasScheduler("maintenance", "maint-t-tick")).toBe(true);
    startHost();
    await expect.poll(() => seen.filter((s) => s.n === "tick").length, { timeout: 10_000 }).toBeGreaterThanOrEqual(2);
    const removed = await producer.reconcileSchedules("t.tick", "maint", new Map());
    expect(removed.removed).toBe(1);
    expect(await producer.hasScheduler("maintenance", "maint-t-tick")).toBe(false);
  });

  it("QueueAdmin counts and lists a failed job, retries it with fresh attempts, pauses, and drains what waits", async () => {
    startHost();
    await producer.enqueue("t.work", { n: 20, mode: "permanent" });
    await expect.poll(() => stateOf("work-20"), { timeout: 10_000 }).toBe("failed");
    const [failed] = await admin.failed({ queue: "maintenance" });
    expect(failed).toMatchObject({ id: "work-20", name: "t.work", attemptsMade: 1, reason: expect.stringContaining("bad") });
    expect((await admin.counts()).find((c) => c.name === "maintenance")).toMatchObject({ failed: 1 });
    permanentFails = false;
    expect(await admin.retry("work-20")).toEqual({ retried: [{ queue: "maintenance", id: "work-20" }], skipped: [] });
    await expect.poll(() => stateOf("work-20"), { timeout: 10_000 }).toBe("completed");
    expect(await admin.workerCount("maintenance")).toBeGreaterThanOrEqual(1);

    await admin.pause("maintenance");
    expect((await admin.counts()).find((c) => c.name === "maintenance")?.paused).toBe(true);
    await producer.enqueue("t.work", { n: 21, mode: "ok" });
    await producer.enqueue("t.work", { n: 22, mode: "ok" }, { delayMs: 60_000 });
    await admin.drainWaiting("maintenance");
    expect(await Promise.all([stateOf("work-21"), stateOf("work-22")])).toEqual(["unknown", "unknown"]);
    await admin.resume("maintenance");
    expect((await admin.counts()).find((c) => c.name === "maintenance")?.paused).toBe(false);
  });

  it("run-now runs jobs to an end in this process, on queues of their own that it removes", async () => {
    const outcomes = await runNow<JobContext, Jobs>(
      { entries, definitions, backend, log, queues: ["maintenance"], makeContext: (base) => base, pollMs: 20, retry: { in: "here" } },
      [
        { name: "t.work", payload: { n: 30, mode: "ok" } },
        { name: "t.work", payload: { n: 31, mode: "flaky" } },
      ],
    );
    expect(outcomes.map((o) => o.state)).toEqual(["completed", "completed"]);
    expect(await opened.scratches()).toBe(0);
    // Nothing reached the backend's own queues.
    expect((await admin.counts()).find((c) => c.name === "maintenance")).toMatchObject({ waiting: 0, completed: 0, failed: 0 });
  });

  it("run-now adds its jobs with one round trip a queue, before its workers start", async () => {
    const one = vi.spyOn(Queue.prototype, "add");
    const bulk = vi.spyOn(Queue.prototype, "addBulk");
    try {
      const jobs = Array.from({ length: 5 }, (_, i) => ({ name: "t.work" as const, payload: { n: 80 + i, mode: "ok" as const } }));
      const outcomes = await runNow<JobContext, Jobs>(
        { entries, definitions, backend, log, queues: ["maintenance"], makeContext: (base) => base, pollMs: 5 },
        jobs,
      );
      expect(outcomes.map((o) => o.state)).toEqual(jobs.map(() => "completed"));
      expect(one).not.toHaveBeenCalled();
      expect(bulk).toHaveBeenCalledTimes(1);
      // In the order given, with the definition's job ids.
      expect(bulk.mock.calls[0]?.[0].map((j) => j.opts?.jobId)).toEqual(jobs.map((j) => `work-${j.payload.n}`));
    } finally {
      one.mockRestore();
      bulk.mockRestore();
    }
  });

  it("run-now settles a job its own worker completed from the worker's word, without reading the job's state", async () => {
    // Every state read that found a job completed: a read the worker's event made unnecessary (two round trips a job).
    let foundCompleted = 0;
    const read = Queue.prototype.getJobState;
    const spy = vi.spyOn(Queue.prototype, "getJobState").mockImplementation(async function (this: Queue, id: string) {
      const state = await read.call(this, id);
      if (state === "completed") foundCompleted++;
      return state;
    });
    try {
      const jobs = Array.from({ length: 12 }, (_, i) => ({ name: "t.work" as const, payload: { n: 60 + i, mode: "ok" as const } }));
      const outcomes = await runNow<JobContext, Jobs>(
        // The safety net's rounds 50 ms apart: at 5 ms a loaded machine's rounds (each found completion brings the next
        // one back at once) raced the worker's word and read half the jobs first (6 of 12 in a CI run).
        { entries, definitions, backend, log, queues: ["maintenance"], concurrency: { maintenance: 3 }, makeContext: (base) => base, pollMs: 50 },
        jobs,
      );
      // The value is the result as the queue keeps it.
      expect(outcomes).toEqual(jobs.map((job) => ({ job, state: "completed", value: { status: "done" } })));
      // Without the worker's word, each of the 12 is read once as completed (and its job read again for the result).
      expect(foundCompleted).toBeLessThan(jobs.length / 2);
    } finally {
      spy.mockRestore();
    }
  });

  it("run-now settles a job given twice at both places from its one completion, without waiting for a round", async () => {
    const job = { name: "t.work" as const, payload: { n: 90, mode: "ok" as const } };
    // Rounds a minute apart: the run ends well inside the test's time only if the completion settles both places.
    const outcomes = await runNow<JobContext, Jobs>(
      { entries, definitions, backend, log, queues: ["maintenance"], makeContext: (base) => base, pollMs: 60_000 },
      [job, job],
    );
    expect(outcomes).toEqual([job, job].map((j) => ({ job: j, state: "completed", value: { status: "done" } })));
    expect(seen.filter((s) => s.n === 90)).toHaveLength(1);
  }, 20_000);

  it("run-now reports a job that completes while the run is stopped as completed, and does not hand it over to run again", async () => {
    const stop = new AbortController();
    const handed: number[] = [];
    const run = runNow<JobContext, Jobs>(
      {
        entries,
        definitions,
        backend,
        log,
        queues: ["maintenance"],
        makeContext: (base) => base,
        signal: stop.signal,
        handOver: async (job) => {
          handed.push((job.payload as W).n);
        },
      },
      [{ name: "t.work", payload: { n: 95, mode: "stubborn" } }],
    );
    await expect.poll(() => seen.some((s) => s.n === 95), { timeout: 10_000 }).toBe(true);
    stop.abort();
    // The run stops while the job is under way; the job still completes (the close waits for it).
    release();
    expect((await run).map((o) => o.state)).toEqual(["completed"]);
    expect(handed).toEqual([]);
  });

  it("run-now reads a job removed on completion as completed, not as vanished, when its worker's word comes late", async (ctx) => {
    // Only the PostgreSQL engine runs a query between a completion's commit and the worker's event (its next job's
    // signal); Redis has no such moment. The query is slowed so a round reads the job gone in it.
    if (engine !== "postgres") ctx.skip();
    // A private method of bullmq's PostgreSQL engine (the query after a completion's commit).
    const proto = PostgresQueueBackend.prototype as unknown as { buildNextJobResult: (...args: unknown[]) => Promise<unknown> };
    const slowed = proto.buildNextJobResult;
    const slow = vi.spyOn(proto, "buildNextJobResult").mockImplementation(async function (this: unknown, ...args: unknown[]) {
      const result = await slowed.apply(this, args);
      await new Promise((resolve) => setTimeout(resolve, 300));
      return result;
    });
    try {
      const outcomes = await runNow<JobContext, Jobs>(
        { entries, definitions, backend, log, queues: ["maintenance"], makeContext: (base) => base, pollMs: 20 },
        [{ name: "t.removed", payload: { n: 1 } }],
      );
      expect(outcomes.map((o) => o.state)).toEqual(["completed"]);
    } finally {
      slow.mockRestore();
    }
  });

  it("takes back a job whose worker died mid-job (its holder proven dead), and another worker finishes it", async () => {
    const victim = startHost("victim-1");
    await producer.enqueue("t.work", { n: 40, mode: "slow" });
    await expect.poll(() => seen.length, { timeout: 10_000 }).toBe(1);
    // Killed: its worker stops without moving the job back (a force close leaves it active under its lock).
    const dead = victim as unknown as { workers: Array<{ worker: { close(force: boolean): Promise<void> } }> };
    await Promise.all(dead.workers.map((w) => w.worker.close(true)));
    expect(await stateOf("work-40")).toBe("active");
    const active = await admin.active("maintenance");
    expect(active.holders).toEqual(["victim-1"]);
    // Only that holder's activation is taken: another holder's name moves nothing.
    expect(await active.requeueOf("someone-else")).toBe(0);
    expect(await active.requeueOf("victim-1")).toBe(1);
    // The dead worker's handler ends (its finish is refused: the job is no longer its own); the rescuer's run ends.
    release();
    startHost("rescuer-1");
    await expect.poll(() => seen.length, { timeout: 10_000 }).toBe(2);
    release();
    await expect.poll(() => stateOf("work-40"), { timeout: 10_000 }).toBe("completed");
    expect(seen.filter((s) => s.n === 40).map((s) => s.attempt)).toEqual([1, 1]);
  });

  it("counts finished jobs by name from the queues' event log (metrics)", async () => {
    const counter = new JobEventCounter(backend);
    await counter.poll();
    startHost();
    await producer.enqueue("t.work", { n: 50, mode: "ok" });
    await producer.enqueue("t.work", { n: 51, mode: "permanent" });
    await expect.poll(() => Promise.all([stateOf("work-50"), stateOf("work-51")]), { timeout: 10_000 }).toEqual(["completed", "failed"]);
    await counter.poll();
    expect(counter.completed.get("maintenance")?.get("t.work")).toBe(1);
    expect(counter.failed.get("maintenance")?.get("t.work")).toBe(1);
  });

  it("the loss guard sees the sentinel scheduler gone and has the schedules rebuilt", async () => {
    const install = () => producer.schedule("t.tick", {}, { everyMs: 60_000 });
    await install();
    let rebuilds = 0;
    const guard = watchRedisLoss({
      redis: undefined,
      isIntact: () => producer.hasScheduler("maintenance", "maint-t-tick"),
      rebuild: async () => {
        rebuilds++;
        await install();
      },
      everyMs: 60_000,
      log,
    });
    try {
      await guard.check();
      expect(rebuilds).toBe(0);
      // What a restore into a new queue schema (or a Redis restarted empty) leaves: no scheduler.
      await queueOf(producer, "maintenance").removeJobScheduler("maint-t-tick");
      await guard.check();
      expect(rebuilds).toBe(1);
      expect(await producer.hasScheduler("maintenance", "maint-t-tick")).toBe(true);
    } finally {
      guard.stop();
    }
  });

  it("serves bull-board's read-only adapter: counts, jobs and the datastore's figures", async () => {
    await producer.enqueue("t.work", { n: 60, mode: "ok" });
    const adapter = new BullMQAdapter(admin.queue("maintenance"), { readOnlyMode: true });
    expect(await adapter.getJobCounts()).toMatchObject({ waiting: 1 });
    expect((await adapter.getJobs(["waiting"], 0, 10)).map((j) => j.id)).toEqual(["work-60"]);
    const info = backend.engine === "redis" ? await adapter.getRedisInfo() : await adapter.getDatastoreStats();
    expect(info).toBeTruthy();
  });
});
