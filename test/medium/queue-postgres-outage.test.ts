// A worker on the PostgreSQL engine whose database goes away while it runs a job: the job ends during the outage, its
// end cannot be recorded, and BullMQ tries again after its runRetryDelay. With BullMQ's own 15 s the worker sat idle
// for up to 15 s after PostgreSQL came back (a 45 s outage under the real worker converged 41–44 s after the return,
// 2 s on Redis); dvault's 2 s (src/queue/backend.ts#PG_RUN_RETRY_MS) records it within seconds. Its first try meets a
// pooled connection the outage broke, which BullMQ took for the job's own failure: a job of one attempt whose handler
// succeeded failed for good. It is recorded completed (src/queue/backend.ts#recordEndsThroughOutages), as is one whose
// first try PostgreSQL rolled back as a deadlock's victim.
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

/** A database of its own and a queue schema in it, reached directly; both go after the test. */
async function queueDatabase(): Promise<{ db: TestDatabase; schema: string; tables: (s: string) => QueueJobsRepository; direct: QueueBackend }> {
  const db: TestDatabase = await createTestDatabase();
  cleanups.push(() => db.drop());
  const schema = `dvault_jobs_${randomBytes(5).toString("hex")}`;
  const tables = (s: string) => new QueueJobsRepository(db.pool, s);
  const direct: QueueBackend = await postgresQueueBackend({ url: db.url, schema, tables });
  cleanups.push(async () => {
    await direct.close();
    await tables(schema).dropSchema();
  });
  return { db, schema, tables, direct };
}

/**
 * A worker of the maintenance queue on `worker` running `handler`, and the queue on `producer`, closed after the test;
 * `errors`, the words of the worker's errors.
 */
function hostMaintenance(worker: QueueBackend, producer: QueueBackend, handler: () => Promise<unknown>) {
  const hosted = worker.worker("maintenance", handler, { concurrency: 1 });
  const errors: string[] = [];
  hosted.worker.on("error", (err: Error) => void errors.push(err.message));
  cleanups.push(() => hosted.close());
  const queue = producer.queue("maintenance");
  cleanups.push(() => queue.close());
  return { queue, errors };
}

/** How the queue recorded the job's end. */
async function recordedEnd(queue: ReturnType<QueueBackend["queue"]>, id: string) {
  const recorded = await queue.getJob(id);
  return { state: await queue.getJobState(id), value: recorded?.returnvalue, failedReason: recorded?.failedReason ?? null };
}

it("records a job that succeeded while PostgreSQL was away as completed within seconds of its return", async () => {
  // The producer's side reaches the database directly; the worker's goes through the proxy that goes away.
  const { db, schema, tables, direct } = await queueDatabase();
  const proxy: OutageProxy = await startOutageProxy(db.url);
  cleanups.push(() => proxy.close());
  const proxied = await postgresQueueBackend({ url: proxy.url, schema, tables });
  cleanups.push(() => proxied.close());
  let started = false;
  let runs = 0;
  let release: () => void = () => undefined;
  const { queue } = hostMaintenance(proxied, direct, async () => {
    started = true;
    runs++;
    await new Promise<void>((resolve) => (release = resolve));
    return "done";
  });

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
  expect({ ...(await recordedEnd(queue, job.id ?? "")), runs }).toEqual({ state: "completed", value: "done", failedReason: null, runs: 1 });
}, 60_000);

it("records a job that succeeded as completed when the first try to record its end was a deadlock's victim", async () => {
  const { db, schema, direct: backend } = await queueDatabase();
  // PostgreSQL picks the completed move as a deadlock's victim once (SQLSTATE 40P01, its transaction rolled back); a
  // sequence, which no rollback undoes, counts the tries.
  await db.pool.query(`CREATE SEQUENCE ${schema}.completed_tries`);
  await db.pool.query(`CREATE FUNCTION ${schema}.deadlock_once() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF NEW.state = 'completed' AND nextval('${schema}.completed_tries') = 1 THEN
        RAISE EXCEPTION 'deadlock detected' USING ERRCODE = '40P01';
      END IF;
      RETURN NEW;
    END $$`);
  await db.pool.query(`CREATE TRIGGER deadlock_once BEFORE UPDATE ON ${schema}.job FOR EACH ROW EXECUTE FUNCTION ${schema}.deadlock_once()`);
  let runs = 0;
  const { queue } = hostMaintenance(backend, backend, async () => {
    runs++;
    return "done";
  });

  // One attempt, as tokens.refresh: a failure recorded for it is for good.
  const job = await queue.add("short", {}, { attempts: 1 });
  await expect.poll(() => queue.getJobState(job.id ?? ""), { timeout: 10_000, interval: 100 }).toMatch(/completed|failed/);
  const tries = await db.pool.query(`SELECT last_value FROM ${schema}.completed_tries`);
  expect({ ...(await recordedEnd(queue, job.id ?? "")), runs, tries: Number(tries.rows[0].last_value) }).toEqual({
    state: "completed",
    value: "done",
    failedReason: null,
    runs: 1,
    tries: 2,
  });
}, 60_000);

it("leaves a job recorded completed when its end committed and the answer was lost, though the move is tried again", async () => {
  const { db, schema, direct: backend } = await queueDatabase();
  // The connection breaks (57P01, as a server shutting down) once the completed move committed, in the query that
  // follows it in BullMQ's finish (next_signal: no job to fetch next), once armed: its answer lost, the move is tried again.
  await db.pool.query(`CREATE TABLE ${schema}.armed (at int)`);
  await db.pool.query(`CREATE SEQUENCE ${schema}.broken_answers`);
  await db.pool.query(`ALTER FUNCTION ${schema}.next_signal(text, integer, bigint) RENAME TO next_signal_as_shipped`);
  await db.pool.query(`CREATE FUNCTION ${schema}.next_signal(p_queue text, p_limiter_max integer, p_now bigint)
    RETURNS TABLE (rate_limit_ttl bigint, next_delay bigint) LANGUAGE plpgsql AS $$
    BEGIN
      IF EXISTS (SELECT 1 FROM ${schema}.armed) AND nextval('${schema}.broken_answers') = 1 THEN
        RAISE EXCEPTION 'terminating connection due to administrator command' USING ERRCODE = '57P01';
      END IF;
      RETURN QUERY SELECT * FROM ${schema}.next_signal_as_shipped(p_queue, p_limiter_max, p_now);
    END $$`);
  let runs = 0;
  let release: () => void = () => undefined;
  const { queue, errors } = hostMaintenance(backend, backend, async () => {
    runs++;
    await new Promise<void>((resolve) => (release = resolve));
    return "done";
  });
  const job = await queue.add("short", {}, { attempts: 1 });
  await expect.poll(() => runs, { timeout: 10_000 }).toBe(1);
  await db.pool.query(`INSERT INTO ${schema}.armed VALUES (1)`);
  release();
  // Tried again after the worker's 2 s and refused, the job no longer active; then BullMQ's failed move, refused too.
  const refused = `Job ${job.id} is not in the active state. moveToFinished`;
  await expect.poll(() => errors, { timeout: 10_000, interval: 100 }).toEqual([refused, refused]);
  expect({ ...(await recordedEnd(queue, job.id ?? "")), runs }).toEqual({ state: "completed", value: "done", failedReason: null, runs: 1 });
}, 60_000);
