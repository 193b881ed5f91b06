// Runs BullMQ workers over the job catalogue and maps every outcome to one queue behaviour:
//   result            → completed ("done" or "skipped" with a reason)
//   a wait             → moved to delayed for as long as it says (no attempt spent, no slot held), logged with
//                        its own word: throttled, paced, deferred (quota), busy, paused, retry (job-definition.ts#DelayReason)
//   PostgreSQL/Redis away, PostgreSQL refusing writes (read-only, disk full), or a deadlock victim
//                      → moved to delayed for a few seconds (no attempt spent: not the job's fault)
//   shutdown           → moved back to delayed, resumes after restart
//   needs re-auth etc. → completed as "skipped" (never a failure loop)
//   permanent          → UnrecoverableError (failed once, kept for `dvault jobs failed`)
//   anything else      → thrown (scrubbed): BullMQ retries with exponential backoff and jitter
import { DelayedError, UnrecoverableError, type Job, type Queue } from "bullmq";
import type { QueueBackend, QueueWorker } from "./backend.ts";
import type { Logger } from "../log.ts";
import { scrubError, scrubString } from "../redact.ts";
import { DELAY_WORDS, delayOf, InterruptedError, isSkippable, isStop, type JobContext, type JobEntry, type JobResult } from "./job-definition.ts";
import { EveryMinuteLog } from "./log-every-minute.ts";
import { failureKind, type Outage, outageOf } from "./outage.ts";
import type { QueueName } from "./queues.ts";
import { requeueActiveJob } from "./requeue.ts";

export type WorkerHostOptions<Ctx extends JobContext> = {
  entries: ReadonlyMap<string, JobEntry<Ctx>>;
  /** Where the queues live; each worker gets connections of its own from it, closed with the host. */
  backend: QueueBackend;
  log: Logger;
  queues: readonly QueueName[];
  concurrency?: Partial<Record<QueueName, number>>;
  makeContext: (base: JobContext, job: Job) => Ctx | Promise<Ctx>;
  /** Epoch ms now; injectable for tests that check delays. */
  now?: () => number;
  /** How long a job that met a PostgreSQL or Redis outage (or refused writes) waits before it runs again (default 5 s). */
  outageRetryMs?: number;
  /** Recorded by BullMQ on every job it takes (`processedBy`): this process's holder id (src/queue/holder.ts). */
  name?: string;
  /**
   * The level of a job's "skipped" and "failed" lines: warn in the worker, whose log is where a person finds them;
   * info in a command run here (src/queue/run-now.ts), whose summary already lists each job's outcome and reason and
   * whose exit code says it, so that a cron run's stderr holds the one line that says what to do (-v shows them).
   */
  outcomeLevel?: "warn" | "info";
  /**
   * What a job that met a write PostgreSQL refuses (read-only, disk full: src/queue/outage.ts) does: "wait" (the
   * worker) delays it as for an outage, however long the refusal lasts; "stop" (a run a person waits for,
   * src/queue/run-now.ts) moves it back, no attempt spent, and tells onRefusal's listeners, so that the run ends
   * with one line saying what to do instead of waiting for good.
   */
  refusedWrites?: "wait" | "stop";
};

export const DEFAULT_OUTAGE_RETRY_MS = 5000;

/**
 * How one activation of a job of this host ended, once its queue has it recorded: completed, with the result as the
 * queue keeps it (JSON, as `getJob` reads it back); failed (BullMQ's `failed`: an attempt that may be retried); or
 * moved back to delayed by the host (a wait, an outage, a stop), which BullMQ raises no event for.
 */
export type JobEnd = { queue: QueueName; jobId: string; state: "completed"; value: unknown } | { queue: QueueName; jobId: string; state: "failed" | "delayed" };

export class WorkerHost<Ctx extends JobContext> {
  private readonly workers: QueueWorker[] = [];
  private readonly abort = new AbortController();
  /**
   * Every activation BullMQ handed to this host (`<queue>:<job id>@<processedOn>` → when its handler ended,
   * 0 while it runs), kept 10 minutes after: an active job naming this process that is not here was
   * activated by a command whose reply was lost (ioredis sends it again after a reconnect, and the second
   * run takes another job), so nobody holds it.
   */
  private readonly handed = new Map<string, number>();
  /** Activations naming this host, not handed to it, seen by the last requeueLostActivations(). */
  private lost = new Set<string>();
  private readonly endListeners: ((end: JobEnd) => void)[] = [];
  private readonly refusalListeners: ((err: unknown) => void)[] = [];
  /** The lines that repeat while a store is away (a kind of lasting outage, a queue's worker errors): one a minute each. */
  private readonly minuteLog: EveryMinuteLog;
  constructor(private readonly options: WorkerHostOptions<Ctx>) {
    this.minuteLog = new EveryMinuteLog(options.log);
  }

  start(): void {
    const { queues, concurrency = {}, backend } = this.options;
    for (const queue of queues) {
      const hosted = backend.worker(queue, (job, token) => this.handle(queue, job, token), {
        concurrency: concurrency[queue] ?? 1,
        ...(this.options.name ? { name: this.options.name } : {}),
      });
      hosted.worker.on("error", (err) => this.logWorkerError(queue, err));
      // BullMQ raises both once the queue has recorded the end (moveToCompleted, moveToFailed).
      hosted.worker.on("completed", (job: Job, result: unknown) =>
        this.ended({ queue, jobId: job.id ?? "", state: "completed", value: result === undefined ? undefined : JSON.parse(JSON.stringify(result)) }),
      );
      hosted.worker.on("failed", (job: Job | undefined) => this.ended({ queue, jobId: job?.id ?? "", state: "failed" }));
      this.workers.push(hosted);
    }
  }

  /** Calls `listener` whenever an activation of a job of this host ends, once its queue has recorded how (JobEnd). */
  onJobEnd(listener: (end: JobEnd) => void): void {
    this.endListeners.push(listener);
  }

  /** Calls `listener` with the error of each job that met a refused write, when refusedWrites is "stop". */
  onRefusal(listener: (err: unknown) => void): void {
    this.refusalListeners.push(listener);
  }

  private ended(end: JobEnd): void {
    for (const listener of this.endListeners) listener(end);
  }

  /** A job delayed by `outage`: a warning, unless it lasts (LASTING_KINDS) and one of its kind and store went out less than a minute ago. */
  private logOutage(log: Logger, outage: Outage, waitMs: number): void {
    const fields = { service: outage.service, reason: scrubString(outage.reason), waitMs };
    const message = `${OUTAGE_WORDS[outage.kind]}: job delayed, no attempt spent`;
    if (!LASTING_KINDS.has(outage.kind)) log.warn(fields, message);
    else this.minuteLog.line({ key: `outage:${outage.kind}:${outage.service}`, level: "warn", fields, message, log, countedAs: "delayedMeanwhile" });
  }

  /**
   * A queue's worker error. While a store is away BullMQ raises one on each failed reconnect of each connection (about
   * five a second, in two wordings: a refused connect and a closed one): those go once a minute per queue. Any other
   * error is its own line at once, only the same error repeated waiting its minute: a job whose end could not be
   * recorded ("Missing lock for job …") is said even in the minute an outage's line holds.
   */
  private logWorkerError(queue: string, err: Error): void {
    this.minuteLog.line({ key: `worker-error:${queue}:${failureKind(err)}`, level: "error", fields: { err, queue }, message: "queue worker error" });
  }

  /** Graceful: handlers see the abort, finish their current page, and active jobs complete or re-queue. */
  async close(): Promise<void> {
    this.abort.abort();
    // Each worker closes with the connections it was given (src/queue/backend.ts).
    await Promise.all(this.workers.map((w) => w.close()));
    this.workers.length = 0;
  }

  /** Whether BullMQ handed this activation of the job (its `processedOn`) to this host. */
  private wasHanded(queue: QueueName, jobId: string, processedOn: number | undefined): boolean {
    return this.handed.has(`${queue}:${jobId}@${processedOn}`);
  }

  /**
   * Moves back to the queue the active jobs that name this host (its `name`) but were never handed to it,
   * once two calls apart have seen the same activation so (the first sighting may be one on its way here).
   * Nobody holds such a job: without this it waits for BullMQ's stalled check, 30–60 s
   * (docs/RELIABILITY.md#work-held-by-a-dead-process).
   */
  async requeueLostActivations(queueOf: (name: QueueName) => Queue): Promise<number> {
    const { name, log, queues } = this.options;
    if (!name) return 0;
    const now = Date.now();
    for (const [key, ended] of this.handed) if (ended > 0 && now - ended > 10 * 60_000) this.handed.delete(key);
    const seen = new Set<string>();
    let moved = 0;
    for (const queueName of queues) {
      const queue = queueOf(queueName);
      for (const job of await queue.getActive()) {
        if (job.processedBy !== name || this.wasHanded(queueName, job.id ?? "", job.processedOn)) continue;
        const key = `${queueName}:${job.id}@${job.processedOn}`;
        if (!this.lost.has(key)) seen.add(key);
        else if (await requeueActiveJob(this.options.backend, queue, job, name)) {
          moved++;
          log.warn(
            { queue: queueName, jobId: job.id },
            "a job activated for this worker never reached it (a reply lost to a Redis restart): moved back to the queue",
          );
        }
      }
    }
    this.lost = seen;
    return moved;
  }

  private async handle(queue: QueueName, job: Job, token: string | undefined): Promise<JobResult> {
    const activation = `${queue}:${job.id}@${job.processedOn}`;
    this.handed.set(activation, 0);
    try {
      return await this.process(queue, job, token);
    } catch (err) {
      // process() moved the job to delayed before throwing this.
      if (err instanceof DelayedError) this.ended({ queue, jobId: job.id ?? "", state: "delayed" });
      throw err;
    } finally {
      this.handed.set(activation, Date.now());
    }
  }

  private async process(queue: QueueName, job: Job, token: string | undefined): Promise<JobResult> {
    const now = this.options.now ?? Date.now;
    const entry = this.options.entries.get(job.name);
    if (!entry) throw new UnrecoverableError(`no handler for job "${job.name}" in queue ${queue}`);
    const parsed = entry.definition.payload.safeParse(job.data);
    if (!parsed.success) throw new UnrecoverableError(`invalid payload for "${job.name}": ${parsed.error.issues[0]?.message}`);
    const log = this.options.log.child({ queue, job: job.name, jobId: job.id });
    const base: JobContext = { log, jobId: job.id ?? "", attempt: job.attemptsMade + 1, attempts: job.opts.attempts ?? 1, signal: this.abort.signal };
    try {
      return await entry.handler(parsed.data, await this.options.makeContext(base, job));
    } catch (err) {
      const delay = delayOf(err);
      if (delay) {
        log.info({ delay: delay.reason, waitMs: delay.waitMs, key: delay.key }, DELAY_WORDS[delay.reason]);
        await job.moveToDelayed(now() + delay.waitMs, token);
        throw new DelayedError();
      }
      if (err instanceof InterruptedError) {
        await job.moveToDelayed(now(), token);
        throw new DelayedError();
      }
      if (isSkippable(err)) {
        log[this.options.outcomeLevel ?? "warn"]({ reason: scrubString(err.message) }, "job skipped");
        return { status: "skipped", reason: scrubString(err.message) };
      }
      const outage = outageOf(err);
      if (outage?.kind === "refused" && this.options.refusedWrites === "stop") {
        for (const listener of this.refusalListeners) listener(err);
        // On PostgreSQL alone the queue is in the database that refuses the move too: the run ends all the same.
        await job.moveToDelayed(now(), token).catch(() => undefined);
        throw new DelayedError();
      }
      if (outage) {
        // Jittered, so that two deadlock victims don't meet again.
        const waitMs = Math.round((this.options.outageRetryMs ?? DEFAULT_OUTAGE_RETRY_MS) * (0.5 + Math.random()));
        this.logOutage(log, outage, waitMs);
        // Against a Redis that is away this waits for the reconnect (worker connections retry forever). On PostgreSQL
        // alone the queue is in the database that is away: the move is tried again until it is back (within the
        // job's lock), else BullMQ failed the job, spending an attempt and waiting its whole backoff.
        await moveWhenBack(() => job.moveToDelayed(now() + waitMs, token));
        throw new DelayedError();
      }
      if (isStop(err)) throw new UnrecoverableError(scrubString((err as Error).message));
      const failure = err instanceof Error ? scrubError(err) : new Error(`job failed: ${scrubString(String(err))}`);
      log[this.options.outcomeLevel ?? "warn"]({ err: failure, attempt: base.attempt, attempts: job.opts.attempts ?? 1 }, "job failed");
      throw failure;
    }
  }
}

/**
 * One warning a minute at most (src/queue/log-every-minute.ts) for jobs delayed by refused writes or by PostgreSQL or
 * Redis away: a read-only database or a full disk lasts until a person acts, days maybe, a store down for maintenance
 * or a host rebooting an hour, and each of thousands of queued jobs meets it again every few seconds (a line per job
 * each time, up to hundreds a second: 105–180 in a one-second PostgreSQL restart,
 * test/faults/restart-postgres.faults.test.ts). The others go to debug, counted in the next warning
 * (`delayedMeanwhile`). A conflict (a deadlock victim) passes at once and keeps a line per job. The same for a queue's
 * worker errors while Redis is away (108 lines in 20 s, about 19 000 an hour).
 */
const LASTING_KINDS: ReadonlySet<Outage["kind"]> = new Set(["refused", "outage"]);

/** What the log says of a job that met an outage, by its kind (src/queue/outage.ts). */
const OUTAGE_WORDS: Record<Outage["kind"], string> = {
  outage: "service unavailable",
  refused: "PostgreSQL refuses writes (read-only, or its disk full)",
  conflict: "transaction rolled back by a deadlock or serialization conflict",
};

/** How long a move of a job that met an outage is tried again: well inside BullMQ's lock of the job (30 s). */
const MOVE_PATIENCE_MS = 15_000;

/** Runs `move`, again while it fails for want of the queue's store, for MOVE_PATIENCE_MS at most. */
async function moveWhenBack(move: () => Promise<void>): Promise<void> {
  const deadline = Date.now() + MOVE_PATIENCE_MS;
  for (let waitMs = 100; ; waitMs = Math.min(waitMs * 2, 2000)) {
    try {
      return await move();
    } catch (err) {
      if (!outageOf(err) || Date.now() + waitMs > deadline) throw err;
      await new Promise((resolve) => setTimeout(resolve, waitMs));
    }
  }
}
