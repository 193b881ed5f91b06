// "Retry" on a failed download.file job (dvault jobs retry, the dashboard) means "try this file now": the
// downloads table, not the queue, decides when a file is tried (src/downloads/retry.ts), so the row is made
// due at once with a fresh failure count and the due rows go to the queue the usual way (enqueue-due.ts),
// which replaces the failed job. Re-running the failed job in place would ignore the row's schedule.
import type { Services } from "../services.ts";
import { downloadDepsFor } from "./deps.ts";
import type { Producer } from "../queue/producer.ts";
import { DownloadFilePayload } from "./download-job.ts";
import { enqueueDueDownloads } from "./enqueue-due.ts";

/** Undefined when the file was handed to the queue again, otherwise why not. */
export async function retryDownloadNow(services: Services, producer: Producer, data: unknown): Promise<string | undefined> {
  const parsed = DownloadFilePayload.safeParse(data);
  if (!parsed.success) return "its payload names no download";
  const { repo } = downloadDepsFor(services);
  const due = await repo.retryDownloadNow({ ...parsed.data, at: new Date(services.now()) });
  if (!due) return "its download is no longer failed (it is queued, stored or gone)";
  await enqueueDueDownloads(services, producer);
  return undefined;
}
