// digest.send: the digest of one channel for the window ending at one tick. Its id is (channel, tick), so
// the same tick enqueued by two workers (or by a catch-up) is one job.
import type { DigestChannel } from "../../src/config/digest.ts";
import { DigestJobPayload } from "../../src/digest/run-digest.ts";
import type { JobDefinition } from "../../src/queue/job-definition.ts";

export { DigestJobPayload };

export const DIGEST_JOB = "digest.send";

/** (channel, tick): a second worker's tick at the same time enqueues nothing new. */
export function digestJobId(p: { channel: DigestChannel; tick: string }): string {
  return `digest-${p.channel}-${Date.parse(p.tick)}`;
}

export const digestDefinition = {
  name: DIGEST_JOB,
  queue: "digest",
  payload: DigestJobPayload,
  /** A failed delivery is retried with exponential backoff: about 1, 2, 4, 8 and 16 minutes. */
  attempts: 6,
  backoffMs: 60_000,
  jobId: (p) => digestJobId(p),
} satisfies JobDefinition<typeof DIGEST_JOB, DigestJobPayload>;

declare module "../../src/queue/contract.ts" {
  interface JobPayloads {
    "digest.send": DigestJobPayload;
  }
}
