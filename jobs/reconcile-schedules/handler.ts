import { openBlobStore } from "../../src/storage/store.ts";
import { sweepStaleUploads } from "../../src/storage/upload-sweep.ts";
import type { JobResult } from "../../src/queue/job-definition.ts";
import { reconcileSchedules } from "../../src/sync/schedules.ts";
import type { WorkerContext } from "../context.ts";
import type { ReconcilePayload } from "./definition.ts";

export async function reconcileSchedulesHandler(_payload: ReconcilePayload, ctx: WorkerContext): Promise<JobResult> {
  const summary = await reconcileSchedules({
    services: ctx.services,
    producer: ctx.producer,
    sources: ctx.sources,
    everyMs: ctx.everyMs,
    ...(ctx.schedules ? { schedules: ctx.schedules() } : {}),
  });
  // The maintenance host's periodic duty for a bucket: uploads a killed process left unfinished. A bucket that
  // cannot be reached now is said in the log; the schedules above are what this job is for.
  // Date.now(), not services.now(): the cut-off is compared with the S3 server's clock.
  const abortedUploads = await sweepStaleUploads(openBlobStore(ctx.services.config), Date.now(), ctx.log).catch((err: unknown) => {
    ctx.log.warn({ err }, "could not sweep the bucket's unfinished uploads; trying again at the next reconcile");
    return 0;
  });
  return { status: "done", ...summary, ...(abortedUploads > 0 ? { abortedUploads } : {}) };
}
