// The worker's composition root (it may import jobs/): services, the checked job catalogue, the
// schedulers rebuilt from Postgres, the processors, a heartbeat, and a graceful shutdown.
import os from "node:os";
import { enqueueDueDownloads } from "./downloads/enqueue-due.ts";
import { JOBS, JOB_DEFINITIONS } from "../jobs/index.ts";
import type { WorkerContext } from "../jobs/context.ts";
import type { Config } from "./config.ts";
import { assertSafeBind, startDashboard, type DashboardOptions, type RunningDashboard } from "./http/server.ts";
import type { Logger } from "./log.ts";
import { checkCatalogue } from "./queue/job-definition.ts";
import { Producer, schedulerIdOf } from "./queue/producer.ts";
import { createRedis } from "./queue/redis.ts";
import { registerSecret } from "./redact.ts";
import { DEFAULT_OUTAGE_RETRY_MS, WorkerHost } from "./queue/worker-host.ts";
import { createServices, type ServiceOverrides, type Services } from "./services.ts";
import { startDigestRuntime } from "./digest/runtime.ts";
import { watchRedisLoss } from "./queue/redis-loss-guard.ts";
import { downloadDepsFor } from "./downloads/deps.ts";
import { reclaimDeadHolders } from "./downloads/reclaim.ts";
import { retryDownloadNow } from "./downloads/retry-now.ts";
import { holdLease, thisHolder } from "./queue/holder.ts";
import { reconcileSchedules } from "./sync/schedules.ts";
import { SOURCES } from "./sync/sources/index.ts";
import { enqueueSyncNow } from "./sync/sync-now.ts";
import type { SourceName } from "./sync/source.ts";

export type RunningWorker = {
  id: string;
  services: Services;
  /** The dashboard when started with `http`. */
  dashboard?: RunningDashboard;
  untilStopped(): Promise<void>;
  stop(reason: string): Promise<void>;
};

const HEARTBEAT_EVERY_MS = 15_000;
const HEARTBEAT_TTL_S = 60;
const RECONCILE_SCHEDULER_ID = schedulerIdOf("schedules.reconcile");

export type WorkerIntervals = {
  /** Token refresh and the schedule reconcile (maintenance schedulers in Redis). */
  maintenanceMs: number;
  /** Due downloads (wanted by sync, or whose quota window came) handed to the queue. */
  downloadsEnqueueMs: number;
  /** How often this process checks that Redis still holds the schedules (besides each reconnect). */
  redisCheckMs: number;
  /** How long a job that met a PostgreSQL or Redis outage waits before it runs again. */
  outageRetryMs: number;
  /** How often downloads held by a process that died are taken back (src/downloads/reclaim.ts). */
  reclaimMs: number;
};

export const DEFAULT_INTERVALS: WorkerIntervals = {
  maintenanceMs: 5 * 60_000,
  downloadsEnqueueMs: 2 * 60_000,
  redisCheckMs: 30_000,
  outageRetryMs: DEFAULT_OUTAGE_RETRY_MS,
  reclaimMs: 3000,
};

export type WorkerOptions = {
  config: Config;
  log: Logger;
  overrides?: ServiceOverrides;
  everyMs?: Partial<Record<SourceName, number>>;
  /** Install SIGTERM/SIGINT handlers (the CLI does; tests drive stop() themselves). */
  handleSignals?: boolean;
  /** Also serve the dashboard (`dvault worker --http`); a non-loopback host without a token is refused up front. */
  http?: DashboardOptions;
  /** Shorter intervals for tests. */
  intervals?: Partial<WorkerIntervals>;
};

export async function startWorker({
  config,
  log,
  overrides,
  everyMs = {},
  handleSignals = true,
  http,
  intervals: customIntervals,
}: WorkerOptions): Promise<RunningWorker> {
  const intervals = { ...DEFAULT_INTERVALS, ...customIntervals };
  const id = `${os.hostname()}:${process.pid}`;
  if (http) {
    assertSafeBind(http.host ?? config.httpHost, http.token);
    registerSecret(http.token);
  }
  const entries = checkCatalogue<WorkerContext>(JOBS);
  const services = await createServices({ config, log, ...(overrides ? { overrides } : {}) });
  const { redis } = services;
  const prefix = config.redisPrefix;
  // Queue connection errors repeat while Redis is away; the worker hosts' own "error" lines say the same.
  const producer = new Producer([...JOB_DEFINITIONS], redis, prefix, (err, queue) => log.debug({ err, queue }, "queue connection error"));
  const sources = new Map(SOURCES.map((s) => [s.name, s]));

  // Due work comes from Postgres, not from whatever Redis still holds: installed now, and again whenever
  // Redis turns out to have lost it (the reconcile scheduler, installed last, is the sentinel).
  const maintenance = producer.queue("maintenance");
  const installSchedules = async () => {
    const summary = await reconcileSchedules({ services, producer, sources, everyMs });
    await producer.schedule("tokens.refresh", {}, { everyMs: intervals.maintenanceMs });
    await producer.schedule("alerts.evaluate", {});
    await producer.schedule("thumbnails.backfill", { rebuild: false, untilDone: false });
    // Downloads: the table is the source of truth, so a lost queue is rebuilt from it here.
    await enqueueDueDownloads(services, producer, { rebuild: true });
    await producer.schedule("downloads.enqueue", { scope: "all" }, { everyMs: intervals.downloadsEnqueueMs });
    await producer.schedule("schedules.reconcile", {}, { everyMs: intervals.maintenanceMs });
    return summary;
  };
  const summary = await installSchedules();
  // Downloads a dead process held come back at start and within seconds after, rows it had claimed outside
  // the queue queued at once; so do jobs of any queue activated for this worker that never reached it
  // (docs/RELIABILITY.md#work-held-by-a-dead-process).
  const lease = await holdLease(redis, prefix);
  let reclaiming = false;
  let reclaimFailing = false;
  const reclaim = async (host?: WorkerHost<WorkerContext>) => {
    if (reclaiming) return;
    reclaiming = true;
    try {
      const taken = await reclaimDeadHolders({ deps: downloadDepsFor(services), log, downloadsQueue: producer.queue("downloads") });
      if (taken.rows > 0) await enqueueDueDownloads(services, producer);
      await host?.requeueLostActivations(redis, (name) => producer.queue(name));
      reclaimFailing = false;
    } catch (err) {
      // Once per outage, not every few seconds while Redis or PostgreSQL is away.
      if (!reclaimFailing) log.warn({ err }, "taking back the downloads of dead processes failed; trying again every few seconds");
      reclaimFailing = true;
    } finally {
      reclaiming = false;
    }
  };
  await reclaim();
  const lossGuard = watchRedisLoss({
    redis,
    isIntact: async () => (await maintenance.getJobScheduler(RECONCILE_SCHEDULER_ID)) != null,
    rebuild: async () => void (await installSchedules()),
    afterReconnect: async () => void (await enqueueDueDownloads(services, producer, { rebuild: true })),
    everyMs: intervals.redisCheckMs,
    log,
  });

  const host = new WorkerHost<WorkerContext>({
    entries,
    connection: () => createRedis(config.redisUrl, "worker"),
    prefix,
    log,
    queues: ["sync", "maintenance", "downloads", "digest"],
    concurrency: { sync: 2, maintenance: 1, downloads: config.downloadConcurrency, digest: 1 },
    makeContext: (base) => ({ ...base, services, sources, producer, everyMs }),
    outageRetryMs: intervals.outageRetryMs,
    name: thisHolder(),
  });
  host.start();
  const reclaimTimer = setInterval(() => void reclaim(host), intervals.reclaimMs);
  // Digests and alerts: the alerts job every minute, the digest cron and its one-time catch-up.
  const digests = await startDigestRuntime({ services, log, workerId: id, enqueueDigest: (p) => producer.enqueue("digest.send", p) });

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
      clearInterval(reclaimTimer);
      lossGuard.stop();
      await dashboard?.close().catch((err: unknown) => log.warn({ err }, "dashboard close failed"));
      await digests.stop().catch((err: unknown) => log.warn({ err }, "digest schedule stop failed"));
      // Active jobs see the abort, commit their current page and re-queue; then connections close.
      await host.close();
      await lease.stop().catch((err: unknown) => log.warn({ err }, "holder lease release failed"));
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
      const retryDownload = (data: unknown) => retryDownloadNow(services, producer, data);
      const actions = {
        syncNow: () => enqueueSyncNow({ services, producer, sources }),
        downloadNow: async () => ((await producer.enqueue("downloads.enqueue", { scope: "all" })) ? 1 : 0),
      };
      dashboard = await startDashboard(
        { ...services, retryDownload, actions },
        { host: http.host ?? config.httpHost, port: http.port ?? config.httpPort, token: http.token },
      );
    } catch (err) {
      await stop("the dashboard could not start");
      throw err;
    }
  }

  log.info({ worker: id, schedules: summary.scheduled }, "worker ready");
  return { id, services, ...(dashboard ? { dashboard } : {}), untilStopped: () => stopped, stop };
}
