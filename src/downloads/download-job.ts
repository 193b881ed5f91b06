// The download.file job's payload and id, shared by its definition (jobs/download/definition.ts) and the code
// that queues it (enqueue-due.ts), which src/ may not import from jobs/.
import type { Queue } from "bullmq";
import { z } from "zod";
import type { EnqueueOptions } from "../queue/producer.ts";

export const DownloadFilePayload = z.object({
  deviationid: z.string().min(1).max(64),
  kind: z.enum(["original", "text"]),
});
export type DownloadFilePayload = z.infer<typeof DownloadFilePayload>;

/** Names the deviation and the kind of fetch: a second enqueue is a no-op while the first is pending. */
export function downloadJobId(p: DownloadFilePayload): string {
  return `dl-${p.deviationid}-${p.kind}`;
}

/** What queueing downloads needs of the producer (the worker's Producer over the whole catalogue fits). */
export type DownloadsProducer = {
  queue(name: "downloads"): Queue;
  enqueue(name: "download.file", payload: DownloadFilePayload, extra?: EnqueueOptions): Promise<unknown>;
};
