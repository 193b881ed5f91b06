// download.file: one file of the downloads table (an original, or a journal's text); the table, not
// the queue, is the source of truth, so a finished job is removed and the same id can be queued again.
import { z } from "zod";
import type { JobDefinition } from "../../src/queue/job-definition.ts";

export const DownloadFilePayload = z.object({
  deviationid: z.string().min(1).max(64),
  kind: z.enum(["original", "text"]),
});
export type DownloadFilePayload = z.infer<typeof DownloadFilePayload>;

/** Names the deviation and the kind of fetch: a second enqueue is a no-op while the first is pending. */
export function downloadJobId(p: DownloadFilePayload): string {
  return `dl-${p.deviationid}-${p.kind}`;
}

export const downloadFileDefinition = {
  name: "download.file",
  queue: "downloads",
  payload: DownloadFilePayload,
  attempts: 5,
  backoffMs: 30_000,
  jobId: downloadJobId,
} satisfies JobDefinition<"download.file", DownloadFilePayload>;
