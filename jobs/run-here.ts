// The catalogue's jobs run to an end in this process, through the worker's handlers and WorkerHost on a private
// queue (src/queue/run-now.ts), for every command a person waits for: `sync --once` and the demo's syncs
// (sync-source/run-here.ts adds the run's patience), `digest --send`, `digest --alerts` and `thumbnails --once`.
// Follow-ups their handlers queue go to the worker through `producer`; what a failed attempt does is the run's
// retry policy (handed to the worker's queue by default).
import type { Logger } from "../src/log.ts";
import { checkCatalogue, type JobEntry } from "../src/queue/job-definition.ts";
import type { Producer } from "../src/queue/producer.ts";
import type { ProgressSink } from "../src/queue/progress.ts";
import type { QueueName } from "../src/queue/queues.ts";
import { type RetryPolicy, type RunNowJob, type RunNowOutcome, runNow } from "../src/queue/run-now.ts";
import type { Services } from "../src/services.ts";
import { SOURCES } from "../src/sync/sources/index.ts";
import type { WorkerContext } from "./context.ts";
import { JOB_DEFINITIONS, JOBS } from "./index.ts";

export type RunHereOptions = {
  services: Services;
  log: Logger;
  /** The worker's producer: follow-up jobs, and what is handed over. */
  producer: Producer;
  queue: QueueName;
  retry?: RetryPolicy;
  /** Adds a job that failed an attempt, or was stopped, to the worker's queue, so it finishes there. */
  handOver?: (job: RunNowJob) => Promise<unknown>;
  signal?: AbortSignal;
  /** Where a person watches the run (src/queue/progress.ts). */
  progress?: ProgressSink;
  /** A job's handler as this run wraps it (`sync --once`'s patience); default the worker's own. */
  around?: (entry: JobEntry<WorkerContext>) => JobEntry<WorkerContext>;
  /** WorkerContext.downloadsHere: this process runs the downloads the jobs want (`dvault archive --once`). */
  downloadsHere?: boolean;
};

export function runHere(options: RunHereOptions, jobs: readonly RunNowJob[]): Promise<RunNowOutcome[]> {
  const { services, log, producer } = options;
  const sources = new Map(SOURCES.map((s) => [s.name, s]));
  const entries = options.around ? JOBS.map(options.around) : JOBS;
  return runNow<WorkerContext>(
    {
      entries: checkCatalogue<WorkerContext>(entries),
      definitions: JOB_DEFINITIONS,
      backend: services.queues,
      log,
      queues: [options.queue],
      makeContext: (base) => ({
        ...base,
        services,
        sources,
        producer,
        everyMs: {},
        ...(options.progress ? { progress: options.progress } : {}),
        ...(options.downloadsHere ? { downloadsHere: true } : {}),
      }),
      ...(options.retry ? { retry: options.retry } : {}),
      ...(options.handOver ? { handOver: options.handOver } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    },
    jobs,
  );
}
