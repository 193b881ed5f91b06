// sync.source: one source of one account (a folder walk, the messages feed, a tracked user ...).
import type { JobDefinition } from "../../src/queue/job-definition.ts";
import { syncJobId } from "../../src/sync/schedules.ts";
import { SyncSourcePayload } from "../../src/sync/sync-job.ts";

export { SyncSourcePayload };

export const syncSourceDefinition = {
  name: "sync.source",
  queue: "sync",
  payload: SyncSourcePayload,
  attempts: 5,
  backoffMs: 30_000,
  // A full sweep asked for while an incremental run waits is a different request, so it keeps its own key.
  dedupeKey: (p) => syncJobId(p, p.full ? "sync-full" : "sync-now"),
} satisfies JobDefinition<"sync.source", SyncSourcePayload>;
