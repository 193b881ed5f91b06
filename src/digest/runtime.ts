// Digests and alerts inside a running worker: the digest cron with its one-time catch-up, and a graceful stop
// that tells other processes this worker left on purpose (the alerts job's scheduler is the worker's, src/worker.ts).
import type { Logger } from "../log.ts";
import type { Services } from "../services.ts";
import { forgetWorker } from "./alerts.ts";
import { DigestRepository } from "../db/digest.repository.ts";
import type { DigestJobPayload } from "./run-digest.ts";
import { DigestScheduler } from "./schedule.ts";

export type DigestRuntime = { scheduler: DigestScheduler; stop(): Promise<void> };

export async function startDigestRuntime({
  services,
  log,
  workerId,
  enqueueDigest,
  now,
}: {
  services: Services;
  log: Logger;
  /** The worker's heartbeat id (`<host>:<pid>`). */
  workerId: string;
  /** Adds a digest job through the producer (so its id and options come from the catalogue). */
  enqueueDigest: (payload: DigestJobPayload) => Promise<unknown>;
  now?: () => number;
}): Promise<DigestRuntime> {
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
  log.info(
    { channels, cron: channels.length ? cron : undefined, timezone: channels.length ? timezone : undefined },
    channels.length ? "digests scheduled" : "digests: no channel configured (dvault digest --preview still works)",
  );
  return {
    scheduler,
    async stop() {
      await scheduler.stop();
      await forgetWorker(services.coord, services.config.redisPrefix, workerId).catch(() => undefined);
    },
  };
}
