// Makes the missing thumbnails of the archive's files, through the archive's one storage interface. A file
// that cannot be read is counted, never thrown: thumbnails stop nothing else.
import { downloadDepsFor } from "../../src/downloads/deps.ts";
import type { JobResult } from "../../src/queue/job-definition.ts";
import { backfillThumbnails, Thumbnails } from "../../src/storage/thumbnails.ts";
import type { WorkerContext } from "../context.ts";
import type { ThumbnailsPayload } from "./definition.ts";

export async function thumbnailsHandler(payload: ThumbnailsPayload, ctx: WorkerContext): Promise<JobResult> {
  const { archive } = downloadDepsFor(ctx.services);
  const result = await backfillThumbnails(new Thumbnails(archive.blobs), { signal: ctx.signal, force: payload.rebuild });
  if (result.failed > 0) ctx.log.warn({ failed: result.failed, failures: result.failures }, "some thumbnails could not be made; the next run tries again");
  return { status: result.generated + result.placeholders > 0 ? "done" : "skipped", ...result };
}
