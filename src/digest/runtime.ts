// Digests and alerts inside a running worker: the alerts job's scheduler (every minute), the digest cron
// with its one-time catch-up, and a graceful stop that tells other processes this worker left on purpose.
import type { Queue } from "bullmq";
import type { Logger } from "../log.ts";
import type { Services } from "../services.ts";
import { forgetWorker } from "./alerts.ts";
import { DigestRepository } from "../db/digest.repository.ts";
import { ALERTS_JOB, type DigestJobPayload } from "./run-digest.ts";
import { DigestScheduler } from "./schedule.ts";

export const ALERTS_EVERY_MS = 60_000;
export const ALERTS_SCHEDULER_ID = "maint-alerts-evaluate";

export type DigestRuntime = { scheduler: DigestScheduler; stop(): Promise<void> };

export async function startDigestRuntime({
  services,
  log,
  workerId,
  maintenance,
  enqueueDigest,
  now,
}: {
  services: Services;
  log: Logger;
  /** The worker's heartbeat id (`<host>:<pid>`). */
  workerId: string;
  /** The maintenance queue, where the alerts job runs. */
  maintenance: Queue;
  /** Adds a digest job through the producer (so its id and options come from the catalogue). */
  enqueueDigest: (payload: DigestJobPayload) => Promise<unknown>;
  now?: () => number;
}): Promise<DigestRuntime> {
  await maintenance.upsertJobScheduler(ALERTS_SCHEDULER_ID, { every: ALERTS_EVERY_MS }, { name: ALERTS_JOB, data: {} });
  const repo = new DigestRepository(services.pool);
  const scheduler = new DigestScheduler({
    config: services.config.digest,
    enqueue: enqueueDigest,
    lastWindowEnd: (channel) => repo.lastWindowEnd(channel),
    log: log.child({ component: "digest" }),
    ...(now ? { now } : {}),
  });
  scheduler.start();
  await scheduler.catchUp().catch((err: unknown) => log.error({ err }, "digest catch-up failed; the next tick covers the gap"));
  const { channels, cron, timezone } = services.config.digest;
  log.info({ channels, cron: channels.length ? cron : undefined, timezone: channels.length ? timezone : undefined }, channels.length ? "digests scheduled" : "digests: no channel configured (dvault digest --preview still works)");
  return {
    scheduler,
    async stop() {
      await scheduler.stop();
      await forgetWorker(services.redis, services.config.redisPrefix, workerId).catch(() => undefined);
    },
  };
}
