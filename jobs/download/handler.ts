// Runs one download through the download.file job (src/downloads/file-job.ts, shared with `dvault download
// --once`) with the worker's answers: disk full pauses the downloads queue, and the readable links are rebuilt a
// few seconds after a file lands, and its thumbnails made.
import { downloadDepsFor } from "../../src/downloads/deps.ts";
import { runFileJob } from "../../src/downloads/file-job.ts";
import type { JobResult } from "../../src/queue/job-definition.ts";
import type { WorkerContext } from "../context.ts";
import { downloadFileDefinition, type DownloadFilePayload } from "./definition.ts";

const LINKS_SOON_MS = 3000;

export async function downloadFileHandler(payload: DownloadFilePayload, ctx: WorkerContext): Promise<JobResult> {
  return runFileJob(payload, {
    deps: downloadDepsFor(ctx.services),
    log: ctx.log,
    signal: ctx.signal,
    attempt: ctx.attempt,
    attempts: ctx.attempts ?? downloadFileDefinition.attempts,
    paused: async () => {
      await ctx.producer.pause("downloads");
    },
    // One pending links job at a time (downloads.enqueue's job id).
    stored: async () => {
      await ctx.producer.enqueue("downloads.enqueue", { scope: "links" }, { delayMs: LINKS_SOON_MS });
      // A thumbnail is never a reason for a download to fail.
      await ctx.producer
        .enqueue("thumbnails.backfill", { rebuild: false, untilDone: false }, { delayMs: LINKS_SOON_MS })
        .catch((err: unknown) => ctx.log.warn({ err }, "could not queue the thumbnails of a stored file; the half-hourly run makes them"));
    },
  });
}
