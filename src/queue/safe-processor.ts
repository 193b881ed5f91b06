// Wraps a BullMQ processor so a failure reason stored in Redis (message and stack) never carries a secret.
import type { Job } from "bullmq";
import { scrubError } from "../redact.ts";

export function safeProcessor<T, R>(processor: (job: Job<T, R>, token?: string) => Promise<R>) {
  return async (job: Job<T, R>, token?: string): Promise<R> => {
    try {
      return await processor(job, token);
    } catch (err) {
      throw err instanceof Error ? scrubError(err) : new Error("job failed with a non-Error value");
    }
  };
}
