// The operator's view of the queues (`dvault jobs`, `dvault status`, the dashboard): counts, failed jobs
// with their reasons, selective retry, pause and resume. It never runs jobs and needs no job catalogue.
// A failed download.file job is not retried in place: its row in the downloads table says when the file is
// tried (src/downloads/retry-now.ts), so that retry goes through the hook its caller gives.
import type { Job, Queue } from "bullmq";
import type { QueueBackend } from "./backend.ts";
import { QUEUE_NAMES, type QueueName } from "./queues.ts";
import { type ActiveJobs, activeJobs } from "./requeue.ts";

export type QueueCounts = {
  name: QueueName;
  paused: boolean;
  waiting: number;
  active: number;
  delayed: number;
  failed: number;
  completed: number;
  /** Age of the oldest job waiting to start, ms; null when none waits. */
  oldestWaitingMs: number | null;
};

export type FailedJob = {
  queue: QueueName;
  id: string;
  name: string;
  /** The last error, scrubbed by the worker host before BullMQ stored it. */
  reason: string;
  attemptsMade: number;
  attempts: number;
  createdAt: string;
  processedAt: string | null;
  failedAt: string | null;
  /** The payload: ids only (job data is kept in clear text in Redis, so it never holds secrets). */
  data: Record<string, unknown>;
};

export type FailedFilter = {
  queue?: QueueName | undefined;
  /** A sync source name (matches payload.source of sync.source jobs). */
  source?: string | undefined;
  /** At most this many, newest failures first (default 100). */
  limit?: number | undefined;
};

/** What a retry did; a job found in no queue (none was named) is skipped without one. */
export type RetryOutcome = { retried: Array<{ queue: QueueName; id: string }>; skipped: Array<{ queue?: QueueName; id: string; reason: string }> };

/**
 * Tries a failed download.file job's file again through the downloads table; undefined when it did, else why
 * not. The job's data is passed as stored.
 */
export type DownloadRetry = (data: unknown) => Promise<string | undefined>;

const PAGE = 200;
const DOWNLOAD_JOB = "download.file";
const NO_DOWNLOAD_RETRY = "a download is retried through its row in the downloads table: use dvault jobs retry or the worker's dashboard";

export function isQueueName(name: string): name is QueueName {
  return (QUEUE_NAMES as readonly string[]).includes(name);
}

export class QueueAdmin {
  private readonly queues = new Map<QueueName, Queue>();

  /** `backend` is shared and stays open on close(); only its command connection is used here. */
  constructor(
    readonly backend: QueueBackend,
    private readonly retryDownload?: DownloadRetry,
  ) {}

  queue(name: QueueName): Queue {
    let q = this.queues.get(name);
    if (!q) {
      q = this.backend.queue(name);
      // Errors surface on the calls that hit them; without a listener EventEmitter would throw.
      q.on("error", () => undefined);
      this.queues.set(name, q);
    }
    return q;
  }

  async counts(now: number = Date.now()): Promise<QueueCounts[]> {
    return Promise.all(
      QUEUE_NAMES.map(async (name) => {
        const q = this.queue(name);
        const [c, paused, oldest] = await Promise.all([
          q.getJobCounts("waiting", "prioritized", "waiting-children", "active", "delayed", "failed", "completed"),
          q.isPaused(),
          this.oldestWaiting(q),
        ]);
        return {
          name,
          paused,
          waiting: (c.waiting ?? 0) + (c.prioritized ?? 0) + (c["waiting-children"] ?? 0),
          active: c.active ?? 0,
          delayed: c.delayed ?? 0,
          failed: c.failed ?? 0,
          completed: c.completed ?? 0,
          oldestWaitingMs: oldest === undefined ? null : Math.max(0, now - oldest),
        };
      }),
    );
  }

  /** Failed jobs, newest failures first, across the named queue or all of them. */
  async failed(filter: FailedFilter = {}): Promise<FailedJob[]> {
    const limit = filter.limit ?? 100;
    const names = filter.queue ? [filter.queue] : [...QUEUE_NAMES];
    const out: FailedJob[] = [];
    for (const name of names) {
      let taken = 0;
      for await (const job of this.failedJobs(name)) {
        if (filter.source !== undefined && job.data?.source !== filter.source) continue;
        out.push(describe(name, job));
        if (++taken >= limit) break;
      }
    }
    out.sort((a, b) => (b.failedAt ?? b.createdAt).localeCompare(a.failedAt ?? a.createdAt));
    return out.slice(0, limit);
  }

  /** Finds a job by id in the named queue or any queue. */
  async find(id: string, queue?: QueueName): Promise<{ queue: QueueName; job: Job } | undefined> {
    for (const name of queue ? [queue] : QUEUE_NAMES) {
      const job = await this.queue(name).getJob(id);
      if (job) return { queue: name, job };
    }
    return undefined;
  }

  /** Moves one failed job back to waiting with its attempts reset, so it gets its full retry budget again. */
  async retry(id: string, queue?: QueueName): Promise<RetryOutcome> {
    const found = await this.find(id, queue);
    if (!found) {
      const where = queue ? `in the ${queue} queue` : "in any queue";
      return { retried: [], skipped: [{ ...(queue ? { queue } : {}), id, reason: `no such job ${where} (it may have been retried already or expired)` }] };
    }
    const state = await found.job.getState();
    if (state !== "failed") return { retried: [], skipped: [{ queue: found.queue, id, reason: `it is ${state}, not failed` }] };
    const skipped = await this.retryJob(found.job);
    if (skipped !== undefined) return { retried: [], skipped: [{ queue: found.queue, id, reason: skipped }] };
    return { retried: [{ queue: found.queue, id }], skipped: [] };
  }

  /** Retries every failed job of the named queue (or all), optionally only those of one sync source. */
  async retryAll(filter: Omit<FailedFilter, "limit"> = {}): Promise<RetryOutcome> {
    const outcome: RetryOutcome = { retried: [], skipped: [] };
    for (const name of filter.queue ? [filter.queue] : QUEUE_NAMES) {
      // Collect first: retrying moves jobs out of the list being walked.
      const jobs: Job[] = [];
      for await (const job of this.failedJobs(name)) {
        if (filter.source === undefined || job.data?.source === filter.source) jobs.push(job);
      }
      for (const job of jobs) {
        try {
          const skipped = await this.retryJob(job);
          if (skipped === undefined) outcome.retried.push({ queue: name, id: job.id ?? "" });
          else outcome.skipped.push({ queue: name, id: job.id ?? "", reason: skipped });
        } catch (err) {
          outcome.skipped.push({ queue: name, id: job.id ?? "", reason: err instanceof Error ? err.message : String(err) });
        }
      }
    }
    return outcome;
  }

  /** Retries one failed job: a download through the table, any other with a fresh attempt budget. Undefined, or why not. */
  private async retryJob(job: Job): Promise<string | undefined> {
    if (job.name === DOWNLOAD_JOB) return this.retryDownload ? this.retryDownload(job.data) : NO_DOWNLOAD_RETRY;
    await job.retry("failed", { resetAttemptsMade: true, resetAttemptsStarted: true });
    return undefined;
  }

  /** The queue's active jobs and who runs them, for taking back those of a dead process (src/downloads/reclaim.ts). */
  async active(name: QueueName): Promise<ActiveJobs> {
    return activeJobs(this.backend, this.queue(name));
  }

  /** How many BullMQ workers, of any process, take jobs from the queue now. */
  async workerCount(name: QueueName): Promise<number> {
    return this.queue(name).getWorkersCount();
  }

  /** Stops workers everywhere from taking new jobs of this queue; active jobs finish. */
  async pause(name: QueueName): Promise<void> {
    await this.queue(name).pause();
  }

  async resume(name: QueueName): Promise<void> {
    await this.queue(name).resume();
  }

  /** Removes the jobs of this queue that wait or are delayed (not the active, failed or completed ones). */
  async drainWaiting(name: QueueName): Promise<void> {
    await this.queue(name).drain(true);
  }

  /** How many job schedulers the queues hold (the sources' schedules and the maintenance jobs). */
  async schedulerCount(): Promise<number> {
    const counts = await Promise.all(QUEUE_NAMES.map((name) => this.queue(name).getJobSchedulersCount()));
    return counts.reduce((a, b) => a + b, 0);
  }

  /**
   * Removes every job and job scheduler of every queue, whatever its state (`dvault engine migrate` empties the
   * engine it leaves, so that nothing runs twice if a worker is pointed back at it); how many jobs there were.
   */
  async obliterateAll(): Promise<number> {
    let jobs = 0;
    for (const name of QUEUE_NAMES) {
      const q = this.queue(name);
      jobs += Object.values(await q.getJobCounts()).reduce((a, b) => a + b, 0);
      await q.obliterate({ force: true });
    }
    return jobs;
  }

  async close(): Promise<void> {
    await Promise.all([...this.queues.values()].map((q) => q.close().catch(() => undefined)));
    this.queues.clear();
  }

  private async *failedJobs(name: QueueName): AsyncGenerator<Job> {
    const q = this.queue(name);
    for (let start = 0; ; start += PAGE) {
      const page = await q.getFailed(start, start + PAGE - 1);
      for (const job of page) if (job) yield job as Job;
      if (page.length < PAGE) return;
    }
  }

  /** Enqueue time of the oldest job waiting to start (plain or prioritized). */
  private async oldestWaiting(q: Queue): Promise<number | undefined> {
    const [plain, prioritized] = await Promise.all([q.getJobs("wait", 0, 0, true), q.getJobs("prioritized", 0, 0, true)]);
    const times = [...plain, ...prioritized].filter(Boolean).map((j) => j.timestamp);
    return times.length ? Math.min(...times) : undefined;
  }
}

function iso(ms: number | undefined): string | null {
  return ms ? new Date(ms).toISOString() : null;
}

function describe(queue: QueueName, job: Job): FailedJob {
  return {
    queue,
    id: job.id ?? "",
    name: job.name,
    reason: job.failedReason ?? "",
    attemptsMade: job.attemptsMade,
    attempts: job.opts.attempts ?? 1,
    createdAt: new Date(job.timestamp).toISOString(),
    processedAt: iso(job.processedOn),
    failedAt: iso(job.finishedOn),
    data: job.data && typeof job.data === "object" ? (job.data as Record<string, unknown>) : {},
  };
}
