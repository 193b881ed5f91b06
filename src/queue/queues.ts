// The queues dvault runs and the job options every job shares (retention keeps Redis from growing for months).
import type { JobsOptions } from "bullmq";

export const QUEUE_NAMES = ["sync", "downloads", "maintenance", "digest"] as const;
export type QueueName = (typeof QUEUE_NAMES)[number];

const DAY_S = 24 * 3600;

/** Completed jobs kept 3 days (at most 1 000); failed ones 30 days (at most 5 000), for `dvault jobs failed`. */
export const RETENTION = {
  removeOnComplete: { age: 3 * DAY_S, count: 1000 },
  removeOnFail: { age: 30 * DAY_S, count: 5000 },
} satisfies JobsOptions;
