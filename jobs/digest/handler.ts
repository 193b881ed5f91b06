// Collects, renders and delivers one channel's digest (src/digest/run-digest.ts); a failed delivery throws
// so the queue retries it with backoff, and the window stays where it was until one succeeds.
import { runDigest } from "../../src/digest/run-digest.ts";
import type { JobResult } from "../../src/queue/job-definition.ts";
import type { WorkerContext } from "../context.ts";
import { digestDefinition, type DigestJobPayload } from "./definition.ts";

export async function digestHandler(payload: DigestJobPayload, ctx: WorkerContext): Promise<JobResult> {
  const result = await runDigest(payload, {
    services: ctx.services,
    log: ctx.log,
    attempt: ctx.attempt,
    maxAttempts: digestDefinition.attempts,
  });
  switch (result.status) {
    case "skipped":
      return { status: "skipped", reason: result.reason };
    case "empty":
      return { status: "skipped", reason: "nothing new and nothing to fix in this window", key: result.key };
    case "sent":
      return { status: "done", key: result.key, subject: result.subject, counts: result.counts, retried: result.retried, refused: result.refused ?? [] };
    default: {
      const never: never = result;
      throw new Error(`unexpected digest result ${JSON.stringify(never)}`);
    }
  }
}
