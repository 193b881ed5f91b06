// Job schedulers for every (account, source), rebuilt from Postgres: at worker start and every few
// minutes, so a Redis that comes back empty loses nothing and `dvault track add` needs no restart.
import { type Producer, SOURCE_SCHEDULER_PREFIX as SCHEDULER_PREFIX, syncJobId } from "../queue/producer.ts";
import type { Services } from "../services.ts";
import { SyncStateRepository } from "../db/sync-state.repository.ts";
import { TrackedUserRepository } from "../db/tracked-user.repository.ts";
import { type Schedule, type Schedules, scheduleOf } from "../config/schedules.ts";
import type { SourceDefinition, SourceName } from "./source.ts";

export { syncJobId };

export type ReconcileSummary = { scheduled: number; removed: number; changed: number };

/** A source's schedule for one account: a test's interval (`everyMs`), else the settings' (DVAULT_SCHEDULE_*). */
export function sourceSchedule(
  { schedules, everyMs = {} }: { schedules: Schedules; everyMs?: Partial<Record<SourceName, number>> | undefined },
  source: SourceName,
  username: string | null | undefined,
): Schedule {
  const every = everyMs[source];
  return every === undefined ? scheduleOf(schedules, source, username) : { every };
}

/**
 * Installs the schedulers of every (account, source), each on its schedule; only those whose schedule or payload
 * changed are re-installed (src/queue/producer.ts), so the others keep their next run. A source that never ran
 * and has a cron schedule is also queued now (BullMQ runs a new `every` scheduler at once, a `pattern` one only at
 * its next time): a new account or tracked user starts syncing at once whatever its schedule (README, step 3).
 */
export async function reconcileSchedules({
  services,
  producer,
  sources,
  everyMs = {},
  schedules = services.config.schedules,
}: {
  services: Services;
  producer: Producer;
  sources: ReadonlyMap<SourceName, SourceDefinition>;
  everyMs?: Partial<Record<SourceName, number>>;
  /** The settings' schedules: the config's, or those the worker re-read on SIGHUP. */
  schedules?: Schedules;
}): Promise<ReconcileSummary> {
  const tracked = new TrackedUserRepository(services.pool);
  const state = new SyncStateRepository(services.pool);
  type Payload = { accountId: number; source: SourceName; key: string };
  const wanted = new Map<string, { repeat: Schedule; payload: Payload }>();
  const firstRuns: Payload[] = [];
  for (const row of await services.accounts.list()) {
    if (row.kind !== "user" || row.state === "needs_reauth" || row.state === "revoked") continue;
    const ran = new Set((await state.listSourceStates(row.id)).filter((s) => s.lastRunAt).map((s) => `${s.source}:${s.key}`));
    for (const source of sources.values()) {
      const repeat = sourceSchedule({ schedules, everyMs }, source.name, row.name);
      const keys = source.name === "tracked" ? (await tracked.listTrackedUsers(row.id)).map((t) => t.username) : [""];
      for (const key of keys) {
        const payload = { accountId: row.id, source: source.name, key };
        wanted.set(syncJobId(payload, SCHEDULER_PREFIX), { repeat, payload });
        if ("pattern" in repeat && !ran.has(`${source.name}:${key}`)) firstRuns.push(payload);
      }
    }
  }
  // The job's options (attempts, backoff with jitter, retention) come from its definition, through the producer.
  const summary = await producer.reconcileSchedules("sync.source", SCHEDULER_PREFIX, wanted);
  // The definition's dedupe key folds a first run already waiting (the next reconcile asks again until it ran).
  for (const payload of firstRuns) await producer.enqueue("sync.source", payload);
  return summary;
}
