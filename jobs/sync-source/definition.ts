// sync.source: one source of one account (a folder walk, the messages feed, a tracked user ...).
import { z } from "zod";
import type { JobDefinition } from "../../src/queue/job-definition.ts";
import { syncJobId } from "../../src/sync/schedules.ts";
import { SOURCE_NAMES } from "../../src/sync/source.ts";

export const SyncSourcePayload = z.object({
  accountId: z.number().int().positive(),
  source: z.enum(SOURCE_NAMES),
  key: z.string().default(""),
  full: z.boolean().optional(),
});
export type SyncSourcePayload = z.infer<typeof SyncSourcePayload>;

export const syncSourceDefinition = {
  name: "sync.source",
  queue: "sync",
  payload: SyncSourcePayload,
  attempts: 5,
  backoffMs: 30_000,
  // A full sweep asked for while an incremental run waits is a different request, so it keeps its own key.
  dedupeKey: (p) => syncJobId(p, p.full ? "sync-full" : "sync-now"),
} satisfies JobDefinition<"sync.source", SyncSourcePayload>;
