// Job schedulers for every (account, source), rebuilt from Postgres: at worker start and every few
// minutes, so a Redis that comes back empty loses nothing and `dvault track add` needs no restart.
import type { JobsOptions } from "bullmq";
import type { Producer } from "../queue/producer.ts";
import { RETENTION } from "../queue/queues.ts";
import type { Services } from "../services.ts";
import { TrackedUserRepository } from "../db/tracked-user.repository.ts";
import { DEFAULT_EVERY_MS, type SourceDefinition, type SourceName } from "./source.ts";

export const SYNC_JOB = "sync.source";
const SCHEDULER_PREFIX = "sched";

/** Deterministic job and scheduler ids; BullMQ refuses ':' in custom ids. */
export function syncJobId(p: { accountId: number; source: string; key?: string }, prefix = "sync"): string {
  return `${prefix}-${p.accountId}-${p.source}-${encodeURIComponent(p.key ?? "").replace(/%/g, "_")}`;
}

/** The sync job options of a scheduled run: one attempt budget, retention, exponential backoff. */
const SCHEDULED_OPTS: Omit<JobsOptions, "jobId" | "repeat" | "delay"> = {
  ...RETENTION,
  attempts: 5,
  backoff: { type: "exponential", delay: 30_000, jitter: 0.5 },
};

export type ReconcileSummary = { scheduled: number; removed: number };

export async function reconcileSchedules({
  services,
  producer,
  sources,
  everyMs = {},
}: {
  services: Services;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- only the queue accessor is used
  producer: Producer<any>;
  sources: ReadonlyMap<SourceName, SourceDefinition>;
  everyMs?: Partial<Record<SourceName, number>>;
}): Promise<ReconcileSummary> {
  const queue = producer.queue("sync");
  const tracked = new TrackedUserRepository(services.pool);
  const wanted = new Map<string, { every: number; data: { accountId: number; source: SourceName; key: string } }>();
  for (const row of await services.accounts.list()) {
    if (row.kind !== "user" || row.state === "needs_reauth" || row.state === "revoked") continue;
    for (const source of sources.values()) {
      const every = everyMs[source.name] ?? DEFAULT_EVERY_MS[source.name];
      const keys = source.name === "tracked" ? (await tracked.listTrackedUsers(row.id)).map((t) => t.username) : [""];
      for (const key of keys) {
        const data = { accountId: row.id, source: source.name, key };
        wanted.set(syncJobId(data, SCHEDULER_PREFIX), { every, data });
      }
    }
  }
  let removed = 0;
  for (const scheduler of await queue.getJobSchedulers(0, -1)) {
    const id = scheduler.key;
    if (id.startsWith(`${SCHEDULER_PREFIX}-`) && !wanted.has(id)) {
      if (await queue.removeJobScheduler(id)) removed++;
    }
  }
  for (const [id, { every, data }] of wanted) {
    await queue.upsertJobScheduler(id, { every }, { name: SYNC_JOB, data, opts: SCHEDULED_OPTS });
  }
  return { scheduled: wanted.size, removed };
}
