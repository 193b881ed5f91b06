// Runs BullMQ workers over the job catalogue and maps every outcome to one queue behaviour:
//   result            → completed ("done" or "skipped" with a reason)
//   throttled          → moved to delayed until the pacer allows it (no attempt spent, no slot held)
//   PostgreSQL/Redis away, or a deadlock victim → moved to delayed for a few seconds (no attempt spent: not the job's fault)
//   shutdown           → moved back to delayed, resumes after restart
//   needs re-auth etc. → completed as "skipped" (never a failure loop)
//   permanent          → UnrecoverableError (failed once, kept for `dvault jobs failed`)
//   anything else      → thrown (scrubbed): BullMQ retries with exponential backoff and jitter
import { DelayedError, UnrecoverableError, Worker, type Job } from "bullmq";
import type { Redis } from "ioredis";
import { isPermanent, isThrottleDelay } from "../api/errors.ts";
import type { Logger } from "../log.ts";
import { scrubError, scrubString } from "../redact.ts";
import {
  InterruptedError,
  isSkippable,
  type JobContext,
  type JobEntry,
  type JobResult,
} from "./job-definition.ts";
import { outageOf } from "./outage.ts";
import type { QueueName } from "./queues.ts";

export type WorkerHostOptions<Ctx extends JobContext> = {
  entries: ReadonlyMap<string, JobEntry<Ctx>>;
  /** A fresh connection per worker (BullMQ blocks on it); must have maxRetriesPerRequest: null. */
  connection: () => Redis;
  prefix: string;
  log: Logger;
  queues: readonly QueueName[];
  concurrency?: Partial<Record<QueueName, number>>;
  makeContext: (base: JobContext, job: Job) => Ctx | Promise<Ctx>;
  /** Epoch ms now; injectable for tests that check delays. */
  now?: () => number;
  /** How long a job that met a PostgreSQL or Redis outage waits before it runs again (default 5 s). */
  outageRetryMs?: number;
};

export const DEFAULT_OUTAGE_RETRY_MS = 5000;

export class WorkerHost<Ctx extends JobContext> {
  private readonly workers: Worker[] = [];
  /** BullMQ never closes a connection it was given: the host owns these and quits them after the workers. */
  private readonly connections: Redis[] = [];
  /** The duplicates BullMQ made of them for its blocking waits. */
  private readonly blocking: Redis[] = [];
  private readonly abort = new AbortController();

  constructor(private readonly options: WorkerHostOptions<Ctx>) {}

  start(): void {
    const { queues, concurrency = {}, prefix, log } = this.options;
    for (const queue of queues) {
      const connection = this.options.connection();
      this.connections.push(connection);
      // BullMQ blocks on a duplicate of the connection; the host keeps a hand on it for close() (below).
      const duplicate = connection.duplicate.bind(connection);
      connection.duplicate = (...args: Parameters<Redis["duplicate"]>) => {
        const copy = duplicate(...args);
        this.blocking.push(copy);
        return copy;
      };
      const worker = new Worker(queue, (job, token) => this.process(queue, job, token), {
        connection,
        prefix,
        concurrency: concurrency[queue] ?? 1,
        autorun: true,
      });
      worker.on("error", (err) => log.error({ err, queue }, "queue worker error"));
      this.workers.push(worker);
    }
  }

  /** Graceful: handlers see the abort, finish their current page, and active jobs complete or re-queue. */
  async close(): Promise<void> {
    this.abort.abort();
    // BullMQ closes a worker by disconnecting its blocking connection and waiting for "end". An ioredis
    // client caught between reconnect attempts (Redis restarted or down) never emits it: disconnect() only
    // cancels the next attempt. Without this the worker would hang on SIGTERM while Redis is away.
    const unstick = setInterval(() => {
      for (const c of this.blocking) {
        const client = c as unknown as { status: string; manuallyClosing?: boolean; reconnectTimeout?: unknown; setStatus(status: string): void };
        if (client.status === "reconnecting" && client.manuallyClosing && !client.reconnectTimeout) client.setStatus("end");
      }
    }, 100);
    try {
      await Promise.all(this.workers.map((w) => w.close()));
    } finally {
      clearInterval(unstick);
    }
    this.blocking.length = 0;
    this.workers.length = 0;
    await Promise.all(this.connections.map((c) => c.quit().catch(() => c.disconnect())));
    this.connections.length = 0;
  }

  private async process(queue: QueueName, job: Job, token: string | undefined): Promise<JobResult> {
    const now = this.options.now ?? Date.now;
    const entry = this.options.entries.get(job.name);
    if (!entry) throw new UnrecoverableError(`no handler for job "${job.name}" in queue ${queue}`);
    const parsed = entry.definition.payload.safeParse(job.data);
    if (!parsed.success) throw new UnrecoverableError(`invalid payload for "${job.name}": ${parsed.error.issues[0]?.message}`);
    const log = this.options.log.child({ queue, job: job.name, jobId: job.id });
    const base: JobContext = { log, jobId: job.id ?? "", attempt: job.attemptsMade + 1, signal: this.abort.signal };
    try {
      return await entry.handler(parsed.data, await this.options.makeContext(base, job));
    } catch (err) {
      if (isThrottleDelay(err)) {
        log.info({ waitMs: err.waitMs, pacerKey: err.pacerKey }, "throttled: job delayed");
        await job.moveToDelayed(now() + err.waitMs, token);
        throw new DelayedError();
      }
      if (err instanceof InterruptedError) {
        await job.moveToDelayed(now(), token);
        throw new DelayedError();
      }
      if (isSkippable(err)) {
        log.warn({ reason: scrubString(err.message) }, "job skipped");
        return { status: "skipped", reason: scrubString(err.message) };
      }
      const outage = outageOf(err);
      if (outage) {
        // Jittered, so that two deadlock victims don't meet again.
        const waitMs = Math.round((this.options.outageRetryMs ?? DEFAULT_OUTAGE_RETRY_MS) * (0.5 + Math.random()));
        const what = outage.kind === "outage" ? "service unavailable" : "transaction rolled back by a deadlock or serialization conflict";
        log.warn({ service: outage.service, reason: scrubString(outage.reason), waitMs }, `${what}: job delayed, no attempt spent`);
        // Against a Redis that is away this waits for the reconnect (worker connections retry forever).
        await job.moveToDelayed(now() + waitMs, token);
        throw new DelayedError();
      }
      if (isPermanent(err)) throw new UnrecoverableError(scrubString((err as Error).message));
      const failure = err instanceof Error ? scrubError(err) : new Error(`job failed: ${scrubString(String(err))}`);
      log.warn({ err: failure, attempt: base.attempt, attempts: job.opts.attempts ?? 1 }, "job failed");
      throw failure;
    }
  }
}
