// The download.file job's payload, id and ranking, in the job contract (src/queue/contract.ts): shared by its
// definition (jobs/download/definition.ts) and the code that queues it (enqueue-due.ts), which src/ may not
// import from jobs/.
import { z } from "zod";

export const DownloadFilePayload = z.object({
  deviationid: z.string().min(1).max(64),
  kind: z.enum(["original", "text"]),
});
export type DownloadFilePayload = z.infer<typeof DownloadFilePayload>;

/** Names the deviation and the kind of fetch: a second enqueue is a no-op while the first is pending. */
export function downloadJobId(p: DownloadFilePayload): string {
  return `dl-${p.deviationid}-${p.kind}`;
}

/** What orders a file in the downloads queue: its class's rank in DVAULT_DOWNLOAD_PRIORITY, then newest first (quota.ts#downloadJobPriority). */
export type DownloadRanking = { rank: number; publishedAt: Date | null; now: Date };

declare module "../queue/contract.ts" {
  interface JobPayloads {
    "download.file": DownloadFilePayload;
  }
  interface JobRankings {
    "download.file": DownloadRanking;
  }
}
