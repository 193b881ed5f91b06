// The demo's syncs as sync.source jobs through the worker's handler and WorkerHost, on a private queue in this
// process (src/queue/run-now.ts), the way `dvault sync --once` runs them: the demo shows the path the worker takes.
import { JOBS, JOB_DEFINITIONS } from "../../jobs/index.ts";
import type { WorkerContext } from "../../jobs/context.ts";
import type { Logger } from "../log.ts";
import { checkCatalogue } from "../queue/job-definition.ts";
import { Producer } from "../queue/producer.ts";
import { createRedis } from "../queue/redis.ts";
import { runNow } from "../queue/run-now.ts";
import type { Services } from "../services.ts";
import type { SourceName } from "../sync/source.ts";
import { SOURCES } from "../sync/sources/index.ts";

/** One source's run as the sync.source job reports it (jobs/sync-source/handler.ts). */
export type DemoSyncRow = { source: SourceName; status: string; new: number; apiCalls: number; reason?: string };

type SyncJobValue = { status: "done" | "skipped"; result?: string; reason?: string; new?: number; apiCalls?: number };

/** Runs the sources one after another (the sync queue runs one job at a time here) and says how each went. */
export async function syncHere(services: Services, log: Logger, accountId: number, sources: readonly SourceName[], full: boolean): Promise<DemoSyncRow[]> {
  // The downloads a run wants go to the demo's worker queue, as they do from the worker; the demo's download
  // step takes those rows over (src/downloads/run-once.ts).
  const producer = new Producer([...JOB_DEFINITIONS], services.redis, services.config.redisPrefix);
  try {
    const outcomes = await runNow<WorkerContext>(
      {
        entries: checkCatalogue<WorkerContext>(JOBS),
        definitions: JOB_DEFINITIONS,
        redis: services.redis,
        connection: () => createRedis(services.config.redisUrl, "worker"),
        prefix: services.config.redisPrefix,
        log,
        queues: ["sync"],
        makeContext: (base) => ({ ...base, services, sources: new Map(SOURCES.map((s) => [s.name, s])), producer, everyMs: {} }),
      },
      sources.map((source) => ({ name: "sync.source", payload: { accountId, source, key: "", ...(full ? { full: true } : {}) }, options: { attempts: 1 } })),
    );
    return outcomes.map((o, i): DemoSyncRow => {
      const source = sources[i]!;
      if (o.state !== "completed") return { source, status: "failed", new: 0, apiCalls: 0, reason: o.reason };
      const v = (o.value ?? { status: "skipped" }) as SyncJobValue;
      return { source, status: v.result ?? v.status, new: v.new ?? 0, apiCalls: v.apiCalls ?? 0, ...(v.reason ? { reason: v.reason } : {}) };
    });
  } finally {
    await producer.close();
  }
}
