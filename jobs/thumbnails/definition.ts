// thumbnails.backfill: thumbnails for every stored file that has none (src/storage/thumbnails.ts). Queued a
// few seconds after downloads store files, every half hour in case something was missed, and by
// `dvault thumbnails --once` in its own process.
import { z } from "zod";
import type { JobDefinition } from "../../src/queue/job-definition.ts";

export const ThumbnailsPayload = z.object({
  /** Make them again even where they exist (`dvault thumbnails --once --rebuild`). */
  rebuild: z.boolean().default(false),
  /**
   * Run until every file is done (`dvault thumbnails --once`, in its own process). Without it a run stops after
   * THUMBNAILS_BUDGET_MS and queues its continuation, so the worker's one maintenance slot (token refresh,
   * alerts) is never held for long by a first backfill of thousands of files.
   */
  untilDone: z.boolean().default(false),
  /** A continuation: the key of the last file its predecessor looked at (later keys only). */
  after: z.string().optional(),
});
export type ThumbnailsPayload = z.infer<typeof ThumbnailsPayload>;

export const THUMBNAILS_JOB = "thumbnails.backfill";
export const THUMBNAILS_BUDGET_MS = 20_000;

export const thumbnailsDefinition = {
  name: THUMBNAILS_JOB,
  queue: "maintenance",
  payload: ThumbnailsPayload,
  // A file that fails is counted in the result and tried again by the next run: nothing to retry here.
  attempts: 1,
  backoffMs: 60_000,
  every: 30 * 60_000,
  // Asked for after every stored file: one pending at a time, one more if asked while it runs.
  dedupeKey: (p) => (p.rebuild ? "thumbnails-rebuild" : p.untilDone ? undefined : "thumbnails-backfill"),
} satisfies JobDefinition<typeof THUMBNAILS_JOB, ThumbnailsPayload>;

declare module "../../src/queue/contract.ts" {
  interface JobPayloads {
    "thumbnails.backfill": ThumbnailsPayload;
  }
}
