// Every few minutes (and soon after downloads store files): due rows to the queue, the disk guard's
// resume, the readable links when files changed.
import { downloadDepsFor } from "../../src/downloads/deps.ts";
import { regenerateLinksIfDirty } from "../../src/downloads/readable-links.ts";
import type { JobResult } from "../../src/queue/job-definition.ts";
import type { WorkerContext } from "../context.ts";
import type { EnqueueDownloadsPayload } from "./definition.ts";
import { enqueueDueDownloads } from "../../src/downloads/enqueue-due.ts";

export async function enqueueDownloadsHandler(payload: EnqueueDownloadsPayload, ctx: WorkerContext): Promise<JobResult> {
  const deps = downloadDepsFor(ctx.services);
  const queue = ctx.producer.queue("downloads");
  if (await deps.guard.tryResume()) await queue.resume();
  else if (await deps.guard.pausedState()) await queue.pause();
  const enqueued = payload.scope === "links" ? undefined : await enqueueDueDownloads(ctx.services, ctx.producer);
  const links = await regenerateLinksIfDirty(deps);
  return { status: "done", ...(enqueued ?? {}), ...(links ? { links } : {}) };
}
