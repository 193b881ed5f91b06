// Makes the missing thumbnails of the archive's files, through the archive's one storage interface, for at
// most THUMBNAILS_BUDGET_MS before handing the rest to its own continuation (unless told to run until done). A
// file that cannot be read is counted, never thrown: thumbnails stop nothing else.
import { downloadDepsFor } from "../../src/downloads/deps.ts";
import type { JobResult } from "../../src/queue/job-definition.ts";
import { backfillThumbnails, Thumbnails } from "../../src/storage/thumbnails.ts";
import type { WorkerContext } from "../context.ts";
import { THUMBNAILS_BUDGET_MS, type ThumbnailsPayload } from "./definition.ts";

export async function thumbnailsHandler(payload: ThumbnailsPayload, ctx: WorkerContext): Promise<JobResult> {
  const { archive } = downloadDepsFor(ctx.services);
  const result = await backfillThumbnails(new Thumbnails(archive.blobs), {
    signal: ctx.signal,
    force: payload.rebuild,
    // Run until done, a person waits (`thumbnails --once`): two files at a time, the dashboard's own bound on
    // decodes (src/storage/thumbnails.ts); the worker's budgeted runs in the background one at a time.
    ...(payload.untilDone ? { parallel: 2 } : { budgetMs: THUMBNAILS_BUDGET_MS }),
    ...(payload.after !== undefined ? { after: payload.after } : {}),
  });
  if (result.failed > 0) ctx.log.warn({ failed: result.failed, failures: result.failures }, "some thumbnails could not be made; the next run tries again");
  // The continuation goes on after the last file looked at; a run that looked at none made no progress and
  // leaves the rest to the next one.
  if (result.more && result.lastKey !== undefined)
    await ctx.producer.enqueue("thumbnails.backfill", { rebuild: payload.rebuild, untilDone: false, after: result.lastKey }, { delayMs: 1000 });
  return { status: result.generated + result.placeholders > 0 ? "done" : "skipped", ...result };
}
