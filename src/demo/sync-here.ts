// The demo's syncs as sync.source jobs through the worker's handler and WorkerHost, on a private queue in this
// process (jobs/sync-source/run-here.ts), the way `dvault sync --once` runs them: the demo shows the path the worker takes.
import { runSyncHere } from "../../jobs/sync-source/run-here.ts";
import type { Logger } from "../log.ts";
import type { Services } from "../services.ts";
import type { SourceName } from "../sync/source.ts";

/** One source's run as the sync.source job reports it (jobs/sync-source/handler.ts). */
export type DemoSyncRow = { source: SourceName; status: string; new: number; apiCalls: number; reason?: string };

/** Runs the sources one after another (the sync queue runs one job at a time here) and says how each went. */
export async function syncHere(services: Services, log: Logger, accountId: number, sources: readonly SourceName[], full: boolean): Promise<DemoSyncRow[]> {
  // The downloads a run wants go to the demo's worker queue; the demo's download step takes those rows over
  // (src/downloads/run-once.ts).
  const outcomes = await runSyncHere({ services, log, runs: sources.map((source) => ({ accountId, source, key: "" })), full });
  return outcomes.map((o, i): DemoSyncRow => {
    const source = sources[i]!;
    if ("error" in o) return { source, status: "failed", new: 0, apiCalls: 0, reason: o.error };
    const v = o.value;
    return { source, status: v.result ?? v.status, new: v.new ?? 0, apiCalls: v.apiCalls ?? 0, ...(v.reason ? { reason: v.reason } : {}) };
  });
}
