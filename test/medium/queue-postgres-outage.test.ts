// A worker on the PostgreSQL engine whose database goes away while it runs a job: the job ends during the outage, its
// end cannot be recorded, and BullMQ tries again after its runRetryDelay. With BullMQ's own 15 s the worker sat idle
// for up to 15 s after PostgreSQL came back (a 45 s outage under the real worker converged 41–44 s after the return,
// 2 s on Redis); dvault's 2 s (src/queue/backend.ts#PG_RUN_RETRY_MS) records it within seconds. Its first try meets a
// pooled connection the outage broke, which BullMQ took for the job's own failure: a job of one attempt whose handler
// succeeded failed for good. It is recorded completed (src/queue/backend.ts#recordEndsThroughOutages).
import { randomBytes } from "node:crypto";
import { afterEach, expect, it } from "vitest";
import { QueueJobsRepository } from "../../src/db/queue-jobs.repository.ts";
import { postgresQueueBackend, type QueueBackend } from "../../src/queue/backend.ts";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";
import { type OutageProxy, startOutageProxy } from "../helpers/outage-proxy.ts";

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

it("records a job that succeeded while PostgreSQL was away as completed within seconds of its return", async () => {
  const db: TestDatabase = await createTestDatabase();
  cleanups.push(() => db.drop());
  const proxy: OutageProxy = await startOutageProxy(db.url);
  cleanups.push(() => proxy.close());
  const schema = `dvault_jobs_${randomBytes(5).toString("hex")}`;
  const tables = (s: string) => new QueueJobsRepository(db.pool, s);
  // The producer's side reaches the database directly; the worker's goes through the proxy that goes away.
  const direct: QueueBackend = await postgresQueueBackend({ url: db.url, schema, tables });
  cleanups.push(async () => {
    await direct.close();
    await tables(schema).dropSchema();
  });
  const proxied = await postgresQueueBackend({ url: proxy.url, schema, tables });
  cleanups.push(() => proxied.close());
  let started = false;
  let runs = 0;
  let release: () => void = () => undefined;
  const hosted = proxied.worker(
    "maintenance",
    async () => {
      started = true;
      runs++;
      await new Promise<void>((resolve) => (release = resolve));
      return "done";
    },
    { concurrency: 1 },
  );
  hosted.worker.on("error", () => undefined);
  cleanups.push(() => hosted.close());
  const queue = direct.queue("maintenance");
  cleanups.push(() => queue.close());

  // One attempt, as tokens.refresh: a failure recorded for it is for good.
  const job = await queue.add("long", {}, { attempts: 1 });
  await expect.poll(() => started, { timeout: 10_000 }).toBe(true);
  await proxy.down();
  // The job ends while the database is away: recording its end is refused, and the worker waits before it tries again.
  release();
  const endedAt = Date.now();
  await expect.poll(() => Date.now() - endedAt >= 1000, { timeout: 2000, interval: 100 }).toBe(true);
  await proxy.up();
  const backAt = Date.now();
  // Its end is recorded as it was: completed, with the handler's result, run once, no failure on record.
  await expect.poll(() => queue.getJobState(job.id ?? ""), { timeout: 6000, interval: 100 }).not.toBe("active");
  console.info(`recorded ${Date.now() - backAt} ms after PostgreSQL came back: ${await queue.getJobState(job.id ?? "")}`);
  const recorded = await queue.getJob(job.id ?? "");
  expect({ state: await queue.getJobState(job.id ?? ""), value: recorded?.returnvalue, failedReason: recorded?.failedReason ?? null, runs }).toEqual({
    state: "completed",
    value: "done",
    failedReason: null,
    runs: 1,
  });
}, 60_000);
