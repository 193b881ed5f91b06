// Evaluates the alert conditions now and notifies through the configured channels (src/digest/alerts.ts).
// It also records digest baselines: running every minute, it notices an initial sync's end promptly.
import { evaluateAlerts, storedDownloadsPausedProbe } from "../../src/digest/alerts.ts";
import { createDeliverers, messageDomainOf } from "../../src/digest/deliver/index.ts";
import { DigestRepository } from "../../src/db/digest.repository.ts";
import type { JobResult } from "../../src/queue/job-definition.ts";
import type { WorkerContext } from "../context.ts";
import type { AlertsPayload } from "./definition.ts";

export async function alertsHandler(_payload: AlertsPayload, ctx: WorkerContext): Promise<JobResult> {
  const { config, pool, coord } = ctx.services;
  const now = new Date(ctx.services.now());
  const baselines = await new DigestRepository(pool).recordBaselines(now);
  const result = await evaluateAlerts({
    db: pool,
    coord,
    prefix: config.redisPrefix,
    now,
    ...(ctx.workerId ? { evaluator: ctx.workerId } : {}),
    downloadsPaused: storedDownloadsPausedProbe(coord, config.redisPrefix),
    installKey: ctx.services.installKey(),
    deliverers: createDeliverers(config.digest),
    timezone: config.digest.timezone,
    messageDomain: messageDomainOf(config.digest),
    log: ctx.log,
  });
  return { status: "done", ...result, baselines };
}
