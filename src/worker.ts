// The worker's composition root (it may import jobs/): services, the checked job catalogue, the
// schedulers rebuilt from Postgres, the processors, a heartbeat, and a graceful shutdown.
import os from "node:os";
import { enqueueDueDownloads } from "../jobs/enqueue-downloads/enqueue-due.ts";
import { JOBS, JOB_DEFINITIONS } from "../jobs/index.ts";
import type { WorkerContext } from "../jobs/context.ts";
import type { Config } from "./config.ts";
import { assertSafeBind, startDashboard, type DashboardOptions, type RunningDashboard } from "./http/server.ts";
import type { Logger } from "./log.ts";
import { checkCatalogue } from "./queue/job-definition.ts";
import { Producer } from "./queue/producer.ts";
import { createRedis } from "./queue/redis.ts";
import { registerSecret } from "./redact.ts";
import { WorkerHost } from "./queue/worker-host.ts";
import { createServices, type ServiceOverrides, type Services } from "./services.ts";
import { startDigestRuntime } from "./digest/runtime.ts";
import { reconcileSchedules } from "./sync/schedules.ts";
import { SOURCES } from "./sync/sources/index.ts";
import type { SourceName } from "./sync/source.ts";

export type RunningWorker = {
  id: string;
  services: Services;
  /** The dashboard when started with `http` (issue 8). */
  dashboard?: RunningDashboard;
  untilStopped(): Promise<void>;
  stop(reason: string): Promise<void>;
};

const HEARTBEAT_EVERY_MS = 15_000;
const HEARTBEAT_TTL_S = 60;
const MAINTENANCE_EVERY_MS = 5 * 60_000;
/** How often due downloads (wanted by sync, or whose quota window came) are handed to the queue. */
const DOWNLOADS_ENQUEUE_EVERY_MS = 2 * 60_000;

export type WorkerOptions = {
  config: Config;
  log: Logger;
  overrides?: ServiceOverrides;
  everyMs?: Partial<Record<SourceName, number>>;
  /** Install SIGTERM/SIGINT handlers (the CLI does; tests drive stop() themselves). */
  handleSignals?: boolean;
  /** Also serve the dashboard (`dvault worker --http`); a non-loopback host without a token is refused up front. */
  http?: DashboardOptions;
};

export async function startWorker({ config, log, overrides, everyMs = {}, handleSignals = true, http }: WorkerOptions): Promise<RunningWorker> {
  const id = `${os.hostname()}:${process.pid}`;
  if (http) {
    assertSafeBind(http.host ?? config.httpHost, http.token);
    registerSecret(http.token);
  }
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
  // Downloads (issue 6): the table is the source of truth, so a lost queue is rebuilt from it here.
  await enqueueDueDownloads(services, producer, { rebuild: true });
  await maintenance.upsertJobScheduler("maint-downloads-enqueue", { every: DOWNLOADS_ENQUEUE_EVERY_MS }, { name: "downloads.enqueue", data: { scope: "all" } });

  const host = new WorkerHost<WorkerContext>({
    entries,
    connection: () => createRedis(config.redisUrl, "worker"),
    prefix,
    log,
    queues: ["sync", "maintenance", "downloads", "digest"],
    concurrency: { sync: 2, maintenance: 1, downloads: config.downloadConcurrency, digest: 1 },
    makeContext: (base) => ({ ...base, services, sources, producer, everyMs }),
  });
  host.start();
  // Digests and alerts (issue 7): the alerts job every minute, the digest cron and its one-time catch-up.
  const digests = await startDigestRuntime({ services, log, workerId: id, maintenance, enqueueDigest: (p) => producer.enqueue("digest.send", p) });

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
  let dashboard: RunningDashboard | undefined;

  const stop = (reason: string): Promise<void> => {
    stopping ??= (async () => {
      log.info({ reason }, "worker stopping");
      clearInterval(timer);
      await dashboard?.close().catch((err: unknown) => log.warn({ err }, "dashboard close failed"));
      await digests.stop().catch((err: unknown) => log.warn({ err }, "digest schedule stop failed"));
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

  if (http) {
    try {
      dashboard = await startDashboard(services, { host: http.host ?? config.httpHost, port: http.port ?? config.httpPort, token: http.token });
    } catch (err) {
      await stop("the dashboard could not start");
      throw err;
    }
  }

  log.info({ worker: id, schedules: summary.scheduled }, "worker ready");
  return { id, services, ...(dashboard ? { dashboard } : {}), untilStopped: () => stopped, stop };
}
