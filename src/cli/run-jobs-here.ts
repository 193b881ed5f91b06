// Jobs of one queue run to an end in this process with the worker's catalogue (src/queue/run-now.ts), for the
// commands that do a worker's job while a person waits (`digest --send`, `digest --alerts`, `thumbnails --once`);
// follow-ups they queue go to the worker through `producer`.
import type { WorkerContext } from "../../jobs/context.ts";
import { JOB_DEFINITIONS, JOBS } from "../../jobs/index.ts";
import type { Logger } from "../log.ts";
import { checkCatalogue } from "../queue/job-definition.ts";
import type { Producer } from "../queue/producer.ts";
import { createRedis } from "../queue/redis.ts";
import { type RunNowJob, type RunNowOutcome, runNow } from "../queue/run-now.ts";
import type { Services } from "../services.ts";
import { SOURCES } from "../sync/sources/index.ts";

export function runJobsHere(
  services: Services,
  log: Logger,
  producer: Producer,
  queue: "digest" | "maintenance",
  jobs: RunNowJob[],
  options: { handOver?: (job: RunNowJob) => Promise<unknown>; signal?: AbortSignal } = {},
): Promise<RunNowOutcome[]> {
  const { config } = services;
  return runNow<WorkerContext>(
    {
      entries: checkCatalogue<WorkerContext>(JOBS),
      definitions: JOB_DEFINITIONS,
      redis: services.redis,
      connection: () => createRedis(config.redisUrl, "worker"),
      prefix: config.redisPrefix,
      log,
      queues: [queue],
      makeContext: (base) => ({ ...base, services, sources: new Map(SOURCES.map((s) => [s.name, s])), producer, everyMs: {} }),
      ...(options.handOver ? { handOver: options.handOver } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    },
    jobs,
  );
}
