// Runs BullMQ workers over the job catalogue and maps every outcome to one queue behaviour:
//   result            → completed ("done" or "skipped" with a reason)
//   throttled          → moved to delayed until the pacer allows it (no attempt spent, no slot held)
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
};

export class WorkerHost<Ctx extends JobContext> {
  private readonly workers: Worker[] = [];
  /** BullMQ never closes a connection it was given: the host owns these and quits them after the workers. */
  private readonly connections: Redis[] = [];
  private readonly abort = new AbortController();

  constructor(private readonly options: WorkerHostOptions<Ctx>) {}

  start(): void {
    const { queues, concurrency = {}, prefix, log } = this.options;
    for (const queue of queues) {
      const connection = this.options.connection();
      this.connections.push(connection);
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
    await Promise.all(this.workers.map((w) => w.close()));
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
      if (isPermanent(err)) throw new UnrecoverableError(scrubString((err as Error).message));
      throw err instanceof Error ? scrubError(err) : new Error(`job failed: ${scrubString(String(err))}`);
    }
  }
}
