// download.file: one file of the downloads table (an original, or a journal's text); the table, not
// the queue, is the source of truth, so a finished job is removed and the same id can be queued again.
// Defined here, next to its body (file-job.ts), so that `download --once` (run-once.ts) queues it too;
// the catalogue takes it from jobs/download/definition.ts.
import type { JobDefinition } from "../queue/job-definition.ts";
import { DownloadFilePayload, type DownloadRanking, downloadJobId } from "./download-job.ts";
import { downloadJobPriority } from "./quota.ts";

export const downloadFileDefinition = {
  name: "download.file",
  queue: "downloads",
  payload: DownloadFilePayload,
  attempts: 5,
  backoffMs: 30_000,
  jobId: downloadJobId,
  // Finished jobs go, so the same id can be queued again (an upgrade next week); the table remembers.
  removeOnComplete: true,
  // The configured class order, then newest first: what the weekly allowance is spent on first.
  priority: (_payload, ranking) => ranking && downloadJobPriority(ranking.rank, ranking.publishedAt, ranking.now),
} satisfies JobDefinition<"download.file", DownloadFilePayload, DownloadRanking>;
