import { type Job, Queue, QueueEvents } from "bullmq";
import { describeNeedingRedis } from "../helpers/needs-redis.ts";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { ApiError, ThrottleDelayError } from "../../src/api/errors.ts";
import { createLogger } from "../../src/log.ts";
import { CatalogueError, checkCatalogue, defineJob, InterruptedError, type JobContext } from "../../src/queue/job-definition.ts";
import { acquireLock } from "../../src/coord/lock.ts";
import { Producer } from "../../src/queue/producer.ts";
import { runNow, type RunNowOptions } from "../../src/queue/run-now.ts";
import { WorkerHost } from "../../src/queue/worker-host.ts";
import { TEST_REDIS_URL } from "../helpers/env.ts";
import { createTestRedis, type TestRedis } from "../helpers/redis.ts";
import { queueOf } from "../helpers/producer-queue.ts";

const log = createLogger({ level: "silent" });
const Payload = z.object({ accountId: z.number(), mode: z.string() });
type P = z.infer<typeof Payload>;
/** The probe's payload map: its Producer and runs are typed by it, as the worker's are by the job contract. */
type ProbeJobs = { "test.probe": P };

let calls: P[] = [];
/** The attempt and the attempts each call of the probe was told. */
let tries: { attempt: number; attempts: number | undefined }[] = [];
let releaseSlowJob: () => void = () => undefined;

const probe = defineJob(
  { name: "test.probe", queue: "maintenance", payload: Payload, attempts: 3, backoffMs: 10, jobId: (p: P) => `probe-${p.accountId}-${p.mode}` },
  async (payload: P, ctx: JobContext) => {
    calls.push(payload);
    tries.push({ attempt: ctx.attempt, attempts: ctx.attempts });
    switch (payload.mode) {
      case "ok":
        return { status: "done" };
      case "throttled":
        throw new ThrottleDelayError({ operation: "gallery.all", status: 429, waitMs: 60_000, retryAt: 0, pacerKey: "1001:u1" });
      case "permanent":
        throw new ApiError({ kind: "client", operation: "deviation.get", status: 400, errorDescription: "Request field validation failed." });
      case "transient":
        throw new Error(`socket hang up (access_token=at-should-not-persist-123456)`);
      case "reauth":
        throw Object.assign(new Error("account alice needs re-authorization: run dvault auth login --account alice"), { jobOutcome: "skip" as const });
      case "slow":
        await new Promise<void>((resolve) => {
          releaseSlowJob = resolve;
          ctx.signal.addEventListener("abort", () => resolve());
        });
        if (ctx.signal.aborted) throw new InterruptedError();
        return { status: "done" };
      default:
        throw new Error(`unknown mode ${payload.mode}`);
    }
  },
);

describe(checkCatalogue.name, () => {
  it("fails boot when a job is defined twice or has no handler", () => {
    expect(() => checkCatalogue([probe, probe])).toThrow(CatalogueError);
    expect(() => checkCatalogue([{ definition: probe.definition, handler: undefined as never }])).toThrow(/no handler/);
    expect(checkCatalogue([probe]).get("test.probe")).toBe(probe);
  });
});

// The job system on BullMQ's Redis backend (the PostgreSQL backend's queues: queue-engines.test.ts; locks on both
// drivers: coord-compliance.test.ts): on a run without Redis, skipped.
describeNeedingRedis(WorkerHost.name, () => {
  let redis: TestRedis;
  let producer: Producer<ProbeJobs>;
  let host: WorkerHost<JobContext> | undefined;
  let events: QueueEvents;

  beforeAll(async () => {
    redis = await createTestRedis();
    producer = new Producer<ProbeJobs>([probe.definition], redis.queues);
    events = new QueueEvents("maintenance", { connection: { url: TEST_REDIS_URL }, prefix: redis.prefix });
    await events.waitUntilReady();
  });
  afterEach(async () => {
    await host?.close();
    host = undefined;
    calls = [];
    tries = [];
    await queueOf(producer, "maintenance").obliterate({ force: true });
  });
  afterAll(async () => {
    await events.close();
    await producer.close();
    await redis.cleanup();
  });

  function startHost() {
    host = new WorkerHost({
      entries: checkCatalogue([probe]),
      backend: redis.queues,
      log,
      queues: ["maintenance"],
      makeContext: (base) => base,
    });
    host.start();
  }

  async function settle(job: Job) {
    await job.waitUntilFinished(events, 10_000).catch(() => undefined);
    return (await queueOf(producer, "maintenance").getJob(job.id!))!;
  }

  it("dedupes by the definition's job id and applies retention", async () => {
    const a = await producer.enqueue("test.probe", { accountId: 1, mode: "ok" });
    const b = await producer.enqueue("test.probe", { accountId: 1, mode: "ok" });
    expect(a.id).toBe("probe-1-ok");
    expect(b.id).toBe(a.id);
    expect(await queueOf(producer, "maintenance").getJobCounts("waiting")).toEqual({ waiting: 1 });
    expect(a.opts.removeOnComplete).toEqual({ age: 3 * 24 * 3600, count: 1000 });
    expect(a.opts.attempts).toBe(3);
    startHost();
    const done = await settle(a);
    expect(done.returnvalue).toEqual({ status: "done" });
  });

  it("moves a throttled job to delayed without spending an attempt", async () => {
    startHost();
    const job = await producer.enqueue("test.probe", { accountId: 2, mode: "throttled" });
    await new Promise<void>((resolve) => events.once("delayed", () => resolve()));
    const state = await queueOf(producer, "maintenance").getJob(job.id!);
    expect(await state!.getState()).toBe("delayed");
    expect(state!.attemptsMade).toBe(0);
    expect(state!.delay).toBeGreaterThan(50_000);
    expect(calls).toHaveLength(1);
  });

  it("fails a permanent error once, without retries", async () => {
    startHost();
    const job = await settle(await producer.enqueue("test.probe", { accountId: 3, mode: "permanent" }));
    expect(await job.getState()).toBe("failed");
    expect(calls).toHaveLength(1);
    expect(job.failedReason).toMatch(/validation failed/);
  });

  it("retries a transient error with backoff and stores a scrubbed reason", async () => {
    startHost();
    const job = await settle(await producer.enqueue("test.probe", { accountId: 4, mode: "transient" }));
    expect(await job.getState()).toBe("failed");
    expect(calls).toHaveLength(3);
    expect(job.failedReason).toContain("access_token=[redacted]");
    expect(JSON.stringify(job.stacktrace)).not.toContain("at-should-not-persist");
    expect(tries).toEqual([1, 2, 3].map((attempt) => ({ attempt, attempts: 3 })));
  });

  it("tells the handler the attempts the job was queued with, not its definition's", async () => {
    startHost();
    const job = await settle(await producer.enqueue("test.probe", { accountId: 5, mode: "transient" }, { attempts: 2 }));
    expect(await job.getState()).toBe("failed");
    expect(tries).toEqual([1, 2].map((attempt) => ({ attempt, attempts: 2 })));
  });

  it("completes a needs-re-authorization outcome as skipped instead of failing in a loop", async () => {
    startHost();
    const job = await settle(await producer.enqueue("test.probe", { accountId: 5, mode: "reauth" }));
    expect(await job.getState()).toBe("completed");
    expect(job.returnvalue).toMatchObject({ status: "skipped", reason: expect.stringContaining("dvault auth login") });
    expect(calls).toHaveLength(1);
  });

  it("re-queues a job interrupted by shutdown, and a new host finishes it", async () => {
    startHost();
    const job = await producer.enqueue("test.probe", { accountId: 6, mode: "slow" });
    await expect.poll(() => calls.length, { timeout: 5000 }).toBe(1);
    await host!.close();
    host = undefined;
    const after = await queueOf(producer, "maintenance").getJob(job.id!);
    expect(["delayed", "waiting"]).toContain(await after!.getState());
    expect(after!.attemptsMade).toBe(0);
    startHost();
    await expect.poll(() => calls.length, { timeout: 5000 }).toBe(2);
    releaseSlowJob();
    const finished = await settle(job);
    expect(finished.returnvalue).toEqual({ status: "done" });
  });
});

describeNeedingRedis(runNow.name, () => {
  // A Redis prefix per test: a job one test leaves delayed (the throttled one) must not hold another's queue.
  let redis: TestRedis;
  beforeEach(async () => {
    redis = await createTestRedis();
  });
  afterEach(async () => {
    calls = [];
    tries = [];
    await redis.cleanup();
  });

  const options = (extra: Partial<RunNowOptions<JobContext, ProbeJobs>>): RunNowOptions<JobContext, ProbeJobs> => ({
    entries: checkCatalogue([probe]),
    definitions: [probe.definition],
    backend: redis.queues,
    log,
    queues: ["maintenance"],
    makeContext: (base) => base,
    pollMs: 20,
    ...extra,
  });

  it("hands a failed attempt over by default, and retries it in this process with a retry policy of here", async () => {
    const handedOver: unknown[] = [];
    const job = { name: "test.probe" as const, payload: { accountId: 10, mode: "transient" } };
    // A backoff long enough that the attempt cannot run again before the hand-over is seen.
    const slowRetry = [{ ...probe.definition, backoffMs: 60_000 }];
    const [handed] = await runNow<JobContext, ProbeJobs>(options({ definitions: slowRetry, handOver: async (j) => handedOver.push(j.payload) }), [job]);
    expect(handed).toMatchObject({ state: "retrying" });
    expect(handedOver).toEqual([job.payload]);
    expect(tries).toEqual([{ attempt: 1, attempts: 3 }]);
    tries = [];
    const [here] = await runNow<JobContext, ProbeJobs>(options({ retry: { in: "here" } }), [job]);
    expect(here).toMatchObject({ state: "failed", reason: expect.stringContaining("socket hang up") });
    expect(tries).toEqual([1, 2, 3].map((attempt) => ({ attempt, attempts: 3 })));
  });

  it("counts a delayed job as finished for this run when settled says so, and waits for it otherwise", async () => {
    const asked: number[] = [];
    const jobs = [
      { name: "test.probe" as const, payload: { accountId: 11, mode: "throttled" } },
      { name: "test.probe" as const, payload: { accountId: 12, mode: "ok" } },
    ];
    const outcomes = await runNow(
      options({
        settled: (_job, i) => {
          asked.push(i);
          return true;
        },
      }),
      jobs,
    );
    expect(outcomes.map((o) => o.state)).toEqual(["delayed", "completed"]);
    expect(asked).toContain(0);
    expect(asked).not.toContain(1);
    // Not settled: still waiting when the run is stopped.
    const stop = new AbortController();
    setTimeout(() => stop.abort(), 500);
    const [waited] = await runNow<JobContext, ProbeJobs>(options({ settled: () => false, signal: stop.signal }), [jobs[0]!]);
    expect(waited).toMatchObject({ state: "interrupted" });
  });

  it("asks Redis about the running jobs and the head of the backlog, not every waiting job every round", async () => {
    const reads = vi.spyOn(Queue.prototype, "getJobState");
    try {
      const backlog = Array.from({ length: 40 }, (_, i) => ({ name: "test.probe" as const, payload: { accountId: 100 + i, mode: "ok" } }));
      // The slow job holds the one worker slot for a while, so the whole backlog waits behind it.
      const release = setTimeout(() => releaseSlowJob?.(), 600);
      const outcomes = await runNow<JobContext, ProbeJobs>(options({}), [
        { name: "test.probe" as const, payload: { accountId: 99, mode: "slow" } },
        ...backlog,
      ]);
      clearTimeout(release);
      expect(outcomes.map((o) => o.state)).toEqual(Array(41).fill("completed"));
      // Asking about all 41 every 20 ms round would take hundreds of reads while the slow job runs.
      expect(reads.mock.calls.length).toBeLessThan(130);
    } finally {
      reads.mockRestore();
    }
  });
});

describeNeedingRedis(acquireLock.name, () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await createTestRedis();
  });
  afterAll(async () => {
    await redis.cleanup();
  });

  it("admits one holder, frees on release, and expires when the holder dies", async () => {
    const key = `${redis.prefix}:lock:source`;
    const first = await acquireLock(redis.coord, key, 300);
    expect(first).toBeDefined();
    expect(await acquireLock(redis.coord, key, 300)).toBeUndefined();
    await first!.release();
    const second = await acquireLock(redis.coord, key, 300);
    expect(second).toBeDefined();
    expect(await second!.release()).toBe(true);
    // A holder that never releases (killed): a plain SET with the same TTL, no renewal.
    await redis.redis.set(key, "dead-holder", "PX", 200, "NX");
    await expect.poll(async () => (await acquireLock(redis.coord, key, 300)) !== undefined, { timeout: 3000, interval: 50 }).toBe(true);
  });
});
