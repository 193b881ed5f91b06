// Every few minutes (and soon after downloads store files): due rows to the queue, the disk guard's
// resume, old text pages made inert once (src/downloads/inert-texts.ts), the readable links when files changed.
import { downloadDepsFor } from "../../src/downloads/deps.ts";
import { regenerateLinksIfDirty } from "../../src/downloads/readable-links.ts";
import type { JobResult } from "../../src/queue/job-definition.ts";
import type { WorkerContext } from "../context.ts";
import type { EnqueueDownloadsPayload } from "./definition.ts";
import { enqueueDueDownloads } from "../../src/downloads/enqueue-due.ts";
import { inertTextsStep } from "../../src/downloads/inert-texts.ts";

/** The once-only rewrite of old text pages holds the maintenance slot for at most this long a run. */
const INERT_TEXTS_BUDGET_MS = 10_000;

export async function enqueueDownloadsHandler(payload: EnqueueDownloadsPayload, ctx: WorkerContext): Promise<JobResult> {
  const deps = downloadDepsFor(ctx.services);
  const resumed = await deps.guard.tryResume();
  const paused = !resumed && (await deps.guard.pausedState()) !== undefined;
  if (resumed) await ctx.producer.resume("downloads");
  else if (paused) await ctx.producer.pause("downloads");
  const enqueued = payload.scope === "links" ? undefined : await enqueueDueDownloads(ctx.services, ctx.producer);
  // Pages stored before they were inert, a slice a run until each was rewritten once; before the links, which follow them.
  const texts = payload.scope === "links" ? undefined : await inertTextsStep(deps, { budgetMs: INERT_TEXTS_BUDGET_MS, signal: ctx.signal });
  // While downloads are paused (the disk guard, a link out of the archive) the tree waits with them, its marker kept.
  const links = paused ? undefined : await regenerateLinksIfDirty(deps);
  return { status: "done", ...(enqueued ?? {}), ...(texts ? { texts: { ...texts, skipped: texts.skipped.length } } : {}), ...(links ? { links } : {}) };
}
