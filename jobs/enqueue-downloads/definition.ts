// downloads.enqueue: hands due rows of the downloads table to the downloads queue (what sync marked
// wanted, deferred rows whose quota window came, failed rows whose retry is due), rebuilds a lost queue, resumes downloads paused for
// disk space once it is back, and regenerates the readable links after new files.
import { z } from "zod";
import type { JobDefinition } from "../../src/queue/job-definition.ts";

export const EnqueueDownloadsPayload = z.object({
  /** "links": only the readable links (queued soon after downloads store files). */
  scope: z.enum(["all", "links"]).default("all"),
});
export type EnqueueDownloadsPayload = z.infer<typeof EnqueueDownloadsPayload>;

export const enqueueDownloadsDefinition = {
  name: "downloads.enqueue",
  queue: "maintenance",
  payload: EnqueueDownloadsPayload,
  attempts: 1,
  backoffMs: 60_000,
  every: 2 * 60_000,
  // The links job queued soon after downloads store files: one pending at a time, one more if asked while it runs.
  dedupeKey: (p) => (p.scope === "links" ? "downloads-links-soon" : undefined),
} satisfies JobDefinition<"downloads.enqueue", EnqueueDownloadsPayload>;

declare module "../../src/queue/contract.ts" {
  interface JobPayloads {
    "downloads.enqueue": EnqueueDownloadsPayload;
  }
}
