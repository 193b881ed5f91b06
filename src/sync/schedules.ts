// Job schedulers for every (account, source), rebuilt from Postgres: at worker start and every few
// minutes, so a Redis that comes back empty loses nothing and `dvault track add` needs no restart.
import type { Producer } from "../queue/producer.ts";
import type { Services } from "../services.ts";
import { TrackedUserRepository } from "../db/tracked-user.repository.ts";
import { DEFAULT_EVERY_MS, type SourceDefinition, type SourceName } from "./source.ts";

const SCHEDULER_PREFIX = "sched";

/** Deterministic job and scheduler ids; BullMQ refuses ':' in custom ids. */
export function syncJobId(p: { accountId: number; source: string; key?: string }, prefix = "sync"): string {
  return `${prefix}-${p.accountId}-${p.source}-${encodeURIComponent(p.key ?? "").replace(/%/g, "_")}`;
}

export type ReconcileSummary = { scheduled: number; removed: number };

export async function reconcileSchedules({
  services,
  producer,
  sources,
  everyMs = {},
}: {
  services: Services;
  // biome-ignore lint/suspicious/noExplicitAny: src/ may not import the catalogue (jobs/) that types it
  producer: Producer<any>;
  sources: ReadonlyMap<SourceName, SourceDefinition>;
  everyMs?: Partial<Record<SourceName, number>>;
}): Promise<ReconcileSummary> {
  const tracked = new TrackedUserRepository(services.pool);
  const wanted = new Map<string, { everyMs: number; payload: { accountId: number; source: SourceName; key: string } }>();
  for (const row of await services.accounts.list()) {
    if (row.kind !== "user" || row.state === "needs_reauth" || row.state === "revoked") continue;
    for (const source of sources.values()) {
      const every = everyMs[source.name] ?? DEFAULT_EVERY_MS[source.name];
      const keys = source.name === "tracked" ? (await tracked.listTrackedUsers(row.id)).map((t) => t.username) : [""];
      for (const key of keys) {
        const payload = { accountId: row.id, source: source.name, key };
        wanted.set(syncJobId(payload, SCHEDULER_PREFIX), { everyMs: every, payload });
      }
    }
  }
  // The job's options (attempts, backoff with jitter, retention) come from its definition, through the producer.
  return producer.reconcileSchedules("sync.source", SCHEDULER_PREFIX, wanted);
}
