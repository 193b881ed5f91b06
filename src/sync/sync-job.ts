// The sync.source job's payload, in the job contract (src/queue/contract.ts): the sources' schedules, "Sync now"
// and `dvault sync` queue it from here; its definition and handler are the catalogue's (jobs/sync-source).
import { z } from "zod";
import { SOURCE_NAMES } from "../config-defaults.ts";

export const SyncSourcePayload = z.object({
  accountId: z.number().int().positive(),
  source: z.enum(SOURCE_NAMES),
  key: z.string().default(""),
  full: z.boolean().optional(),
});
export type SyncSourcePayload = z.infer<typeof SyncSourcePayload>;

declare module "../queue/contract.ts" {
  interface JobPayloads {
    "sync.source": SyncSourcePayload;
  }
}
