// The worker's composition root (it may import jobs/): services, the checked job catalogue, the
// schedulers rebuilt from Postgres, the processors, a heartbeat, and a graceful shutdown.
import os from "node:os";
import { JOBS, JOB_DEFINITIONS } from "../jobs/index.ts";
import type { WorkerContext } from "../jobs/context.ts";
import type { Config } from "./config.ts";
import type { Logger } from "./log.ts";
import { checkCatalogue } from "./queue/job-definition.ts";
import { Producer } from "./queue/producer.ts";
import { createRedis } from "./queue/redis.ts";
import { WorkerHost } from "./queue/worker-host.ts";
import { createServices, type ServiceOverrides, type Services } from "./services.ts";
import { reconcileSchedules } from "./sync/schedules.ts";
import { SOURCES } from "./sync/sources/index.ts";
import type { SourceName } from "./sync/source.ts";

export type RunningWorker = {
  id: string;
  services: Services;
  untilStopped(): Promise<void>;
  stop(reason: string): Promise<void>;
};

const HEARTBEAT_EVERY_MS = 15_000;
const HEARTBEAT_TTL_S = 60;
const MAINTENANCE_EVERY_MS = 5 * 60_000;

export type WorkerOptions = {
  config: Config;
  log: Logger;
  overrides?: ServiceOverrides;
  everyMs?: Partial<Record<SourceName, number>>;
  /** Install SIGTERM/SIGINT handlers (the CLI does; tests drive stop() themselves). */
  handleSignals?: boolean;
};

export async function startWorker({ config, log, overrides, everyMs = {}, handleSignals = true }: WorkerOptions): Promise<RunningWorker> {
  const id = `${os.hostname()}:${process.pid}`;
  const entries = checkCatalogue<WorkerContext>(JOBS);
  const services = await createServices({ config, log, ...(overrides ? { overrides } : {}) });
  const { redis } = services;
  const prefix = config.redisPrefix;
  const producer = new Producer([...JOB_DEFINITIONS], redis, prefix);
  const sources = new Map(SOURCES.map((s) => [s.name, s]));

  // Due work comes from Postgres, not from whatever Redis still holds.
  const summary = await reconcileSchedules({ services, producer, sources, everyMs });
  const maintenance = producer.queue("maintenance");
  await maintenance.upsertJobScheduler("maint-tokens-refresh", { every: MAINTENANCE_EVERY_MS }, { name: "tokens.refresh", data: {} });
  await maintenance.upsertJobScheduler("maint-schedules-reconcile", { every: MAINTENANCE_EVERY_MS }, { name: "schedules.reconcile", data: {} });

  const host = new WorkerHost<WorkerContext>({
    entries,
    connection: () => createRedis(config.redisUrl, "worker"),
    prefix,
    log,
    queues: ["sync", "maintenance"],
    concurrency: { sync: 2, maintenance: 1 },
    makeContext: (base) => ({ ...base, services, sources, producer, everyMs }),
  });
  host.start();

  const heartbeatKey = `${prefix}:heartbeat:${id}`;
  const beat = () =>
    redis
      .set(heartbeatKey, JSON.stringify({ id, at: new Date().toISOString() }), "EX", HEARTBEAT_TTL_S)
      .catch((err: unknown) => log.warn({ err }, "heartbeat failed"));
  await beat();
  const timer = setInterval(beat, HEARTBEAT_EVERY_MS);

  let resolveStopped: () => void = () => undefined;
  const stopped = new Promise<void>((resolve) => (resolveStopped = resolve));
  let stopping: Promise<void> | undefined;

  const stop = (reason: string): Promise<void> => {
    stopping ??= (async () => {
      log.info({ reason }, "worker stopping");
      clearInterval(timer);
      // Active jobs see the abort, commit their current page and re-queue; then connections close.
      await host.close();
      await producer.close();
      await redis.del(heartbeatKey).catch(() => undefined);
      await services.close();
      log.info("worker stopped");
      resolveStopped();
    })();
    return stopping;
  };
  if (handleSignals) {
    // Handlers stay installed: a second Ctrl-C while stopping must not kill the process mid-commit.
    const onSignal = (signal: NodeJS.Signals) => {
      if (stopping) log.warn({ signal }, "already stopping; waiting for active work to finish");
      void stop(signal);
    };
    process.on("SIGTERM", onSignal);
    process.on("SIGINT", onSignal);
  }

  log.info({ worker: id, schedules: summary.scheduled }, "worker ready");
  return { id, services, untilStopped: () => stopped, stop };
}
