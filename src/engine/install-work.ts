// What a worker installs in the queues at start, from the settings and the mirror (docs/RELIABILITY.md): the sources'
// schedules, the downloads queue rebuilt from the downloads table (the truth of what is wanted and queued), and the
// maintenance jobs' schedulers. The worker runs it at start and after a loss of the queues (src/worker.ts);
// `dvault engine migrate` runs it on the engine it moves to (src/engine/move.ts), so the two install the same.
import type { Schedules } from "../config/schedules.ts";
import { type EnqueueSummary, enqueueDueDownloads } from "../downloads/enqueue-due.ts";
import type { Producer } from "../queue/producer.ts";
import type { Services } from "../services.ts";
import { type ReconcileSummary, reconcileSchedules } from "../sync/schedules.ts";
import type { SourceDefinition, SourceName } from "../sync/source.ts";

/** How often the maintenance schedulers run: the token refresh and the reconcile, and the hand-out of due downloads. */
export type MaintenanceIntervals = { maintenanceMs: number; downloadsEnqueueMs: number };

export const MAINTENANCE_INTERVALS: MaintenanceIntervals = { maintenanceMs: 5 * 60_000, downloadsEnqueueMs: 2 * 60_000 };

/** Which of the three to install: a worker installs those of its roles. */
export type WorkParts = { sync: boolean; downloads: boolean; maintenance: boolean };

export type InstalledWork = { sync: ReconcileSummary; downloads: EnqueueSummary | undefined; maintenance: number };

export async function installWork({
  services,
  producer,
  sources,
  everyMs = {},
  schedules,
  parts,
  intervals = MAINTENANCE_INTERVALS,
}: {
  services: Services;
  producer: Producer;
  sources: ReadonlyMap<SourceName, SourceDefinition>;
  everyMs?: Partial<Record<SourceName, number>>;
  schedules: Schedules;
  parts: WorkParts;
  intervals?: MaintenanceIntervals;
}): Promise<InstalledWork> {
  const sync = parts.sync ? await reconcileSchedules({ services, producer, sources, everyMs, schedules }) : { scheduled: 0, removed: 0, changed: 0 };
  // Downloads: the table is the source of truth, so a lost queue is rebuilt from it here.
  const downloads = parts.downloads ? await enqueueDueDownloads(services, producer, { rebuild: true }) : undefined;
  if (!parts.maintenance) return { sync, downloads, maintenance: 0 };
  await producer.schedule("tokens.refresh", {}, { everyMs: intervals.maintenanceMs });
  await producer.schedule("alerts.evaluate", {});
  await producer.schedule("thumbnails.backfill", { rebuild: false, untilDone: false });
  await producer.schedule("downloads.enqueue", { scope: "all" }, { everyMs: intervals.downloadsEnqueueMs });
  await producer.schedule("schedules.reconcile", {}, { everyMs: intervals.maintenanceMs });
  return { sync, downloads, maintenance: 5 };
}
