// The worker's composition root (it may import jobs/): services, the checked job catalogue, the
// schedulers rebuilt from Postgres, the processors, a heartbeat, and a graceful shutdown. What of it a
// process runs follows its roles (DVAULT_WORKER_ROLES, src/queue/worker-roles.ts).
import os from "node:os";
import { enqueueDueDownloads } from "./downloads/enqueue-due.ts";
import { JOBS, JOB_DEFINITIONS } from "../jobs/index.ts";
import type { WorkerContext } from "../jobs/context.ts";
import { type Config, loadConfig } from "./config.ts";
import type { Schedules } from "./config/schedules.ts";
import { rereadSettings } from "./config/settings-file.ts";
import { assertSafeBind, startDashboard, type DashboardOptions, type RunningDashboard } from "./http/server.ts";
import type { Logger } from "./log.ts";
import { checkCatalogue } from "./queue/job-definition.ts";
import { Producer, schedulerIdOf } from "./queue/producer.ts";
import { QueueAdmin } from "./queue/queue-admin.ts";
import { registerSecret } from "./redact.ts";
import { DEFAULT_OUTAGE_RETRY_MS, WorkerHost } from "./queue/worker-host.ts";
import { startHeartbeat } from "./queue/heartbeat.ts";
import { createServices, type ServiceOverrides, type Services } from "./services.ts";
import { startDigestRuntime } from "./digest/runtime.ts";
import { forgetWorker } from "./digest/alerts.ts";
import { watchRedisLoss } from "./queue/redis-loss-guard.ts";
import { installWork, MAINTENANCE_INTERVALS } from "./engine/install-work.ts";
import { downloadDepsFor } from "./downloads/deps.ts";
import { sweepPartialsAtStart } from "./downloads/partial-sweep.ts";
import { PlacedOriginals } from "./downloads/placed-originals.ts";
import { reclaimDeadHolders } from "./downloads/reclaim.ts";
import { retryDownloadNow } from "./downloads/retry-now.ts";
import { type HolderLease, holdWorkLease, thisHolder } from "./queue/holder.ts";
import { type ReconcileSummary, reconcileSchedules } from "./sync/schedules.ts";
import { SOURCES } from "./sync/sources/index.ts";
import { enqueueSyncNow, enqueueTrackedSync } from "./sync/sync-now.ts";
import type { SourceDefinition, SourceName } from "./sync/source.ts";
import { queuesOfRoles, type WorkerRole } from "./queue/worker-roles.ts";

export type RunningWorker = {
  id: string;
  services: Services;
  /** The dashboard when started with `http`. */
  dashboard?: RunningDashboard;
  untilStopped(): Promise<void>;
  stop(reason: string): Promise<void>;
  /**
   * Installs the sources' schedules anew (what SIGHUP does with the re-read settings): only the sources whose
   * schedule changed are rescheduled, the others keep their next run.
   */
  applySchedules(schedules: Schedules): Promise<ReconcileSummary>;
};

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
  ...MAINTENANCE_INTERVALS,
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
  /**
   * Also serve the dashboard (`dvault worker --http`, which adds the http role); a non-loopback host without a
   * token is refused up front. With the http role and no options, config's address, port and token.
   */
  http?: DashboardOptions;
  /** What this process runs; default config.workerRoles. */
  roles?: readonly WorkerRole[];
  /** Shorter intervals for tests. */
  intervals?: Partial<WorkerIntervals>;
};

/**
 * The worker's lease: downloads a dead process held come back at start and within seconds after, rows it had claimed
 * outside the queue queued at once; so do jobs of any queue activated for this worker that never reached it
 * (docs/RELIABILITY.md#work-held-by-a-dead-process). Taken before anything is written: while `dvault engine migrate`
 * moves the install, the worker stops here with one line, its services closed, the queues untouched (src/engine/move.ts).
 */
async function holdWorkerLease(services: Services, roles: ReadonlySet<WorkerRole>): Promise<HolderLease> {
  try {
    return await holdWorkLease(services.coord, services.config.redisPrefix, { roles: [...roles] });
  } catch (err) {
    await services.close().catch(() => undefined);
    throw err;
  }
}

export async function startWorker({
  config,
  log,
  overrides,
  everyMs = {},
  handleSignals = true,
  http: httpOptions,
  roles: chosenRoles = config.workerRoles,
  intervals: customIntervals,
}: WorkerOptions): Promise<RunningWorker> {
  const intervals = { ...DEFAULT_INTERVALS, ...customIntervals };
  const id = `${os.hostname()}:${process.pid}`;
  const roles = new Set<WorkerRole>(httpOptions ? [...chosenRoles, "http"] : chosenRoles);
  const http = httpOptions ?? (roles.has("http") ? { host: config.httpHost, port: config.httpPort, token: config.httpToken } : undefined);
  if (http) {
    assertSafeBind(http.host ?? config.httpHost, http.token);
    registerSecret(http.token);
  }
  const entries = checkCatalogue<WorkerContext>(JOBS);
  const services = await createServices({ config, log, ...(overrides ? { overrides } : {}) });
  // Settled by createServices: "{dvault}", or an older install's "dvault" (src/queue/redis-prefix.ts).
  const prefix = services.config.redisPrefix;
  const lease = await holdWorkerLease(services, roles);
  // Queue connection errors repeat while Redis is away; the worker hosts' own "error" lines say the same.
  const producer = new Producer([...JOB_DEFINITIONS], services.queues, (err, queue) => log.debug({ err, queue }, "queue connection error"));
  const sources = new Map(SOURCES.map((s) => [s.name, s]));

  // Due work comes from Postgres, not from whatever Redis still holds: installed now, and again whenever
  // Redis turns out to have lost it (the reconcile scheduler, installed last, is the sentinel). Each role
  // installs its own: sync the sources' schedules, downloads the queue of due rows, maintenance its periodic
  // jobs; a maintenance host also rebuilds all of them after a loss, as its reconcile job does anyway.
  // The operator's view of the same queues: the active jobs a dead process or a lost reply left (reclaim, below).
  const queues = new QueueAdmin(services.queues);
  // The settings' schedules, replaced when SIGHUP re-reads the settings file (the reconcile job reads them too).
  let schedules = config.schedules;
  const currentSchedules = () => schedules;
  const installSchedules = async (all = false) => {
    const parts = { sync: roles.has("sync") || all, downloads: roles.has("downloads") || all, maintenance: roles.has("maintenance") };
    return (await installWork({ services, producer, sources, everyMs, schedules, parts, intervals })).sync;
  };
  const summary = await installSchedules();
  // Not awaited: a start never waits on a folder listing, and a failure only leaves files for the next start. Every
  // role's start: a maintenance or digest host writes thumbnails through partial files too.
  const deps = downloadDepsFor(services);
  const downloads = roles.has("downloads") ? { repo: deps.repo, placed: new PlacedOriginals(services.coord, config.redisPrefix, deps.archive) } : undefined;
  void sweepPartialsAtStart({ archive: deps.archive, ...downloads, now: services.now(), log });
  let reclaiming = false;
  let reclaimFailing = false;
  const reclaim = async (host?: WorkerHost<WorkerContext>) => {
    if (reclaiming) return;
    reclaiming = true;
    try {
      const taken = await reclaimDeadHolders({ deps: downloadDepsFor(services), log, downloadsJobs: await queues.active("downloads") });
      if (taken.rows > 0) await enqueueDueDownloads(services, producer);
      await host?.requeueLostActivations((name) => queues.queue(name));
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
  // The sentinel is a maintenance scheduler, so only a maintenance host can tell that Redis lost the schedules.
  const lossGuard = roles.has("maintenance")
    ? watchRedisLoss({
        // Only the Redis engine has a connection whose reconnects to watch (services.redis throws on PostgreSQL).
        redis: services.queues.engine === "redis" ? services.redis : undefined,
        onReconnect: services.queues.engine === "postgres" ? (listener) => services.coord.onReconnect(listener) : undefined,
        isIntact: () => producer.hasScheduler("maintenance", RECONCILE_SCHEDULER_ID),
        rebuild: async () => void (await installSchedules(true)),
        afterReconnect: async () => void (await enqueueDueDownloads(services, producer, { rebuild: true })),
        everyMs: intervals.redisCheckMs,
        log,
      })
    : undefined;

  const host = new WorkerHost<WorkerContext>({
    entries,
    backend: services.queues,
    log,
    queues: queuesOfRoles([...roles]),
    concurrency: { sync: config.syncConcurrency, maintenance: 1, downloads: config.downloadConcurrency, digest: 1 },
    makeContext: (base) => ({ ...base, services, sources, producer, everyMs, schedules: currentSchedules, workerId: id }),
    outageRetryMs: intervals.outageRetryMs,
    name: thisHolder(),
  });
  host.start();
  const reclaimTimer = setInterval(() => void reclaim(host), intervals.reclaimMs);
  // Digests: the digest cron and its one-time catch-up (the alerts job is a maintenance scheduler, above).
  const digests = roles.has("digest")
    ? await startDigestRuntime({ services, log, workerId: id, enqueueDigest: (p) => producer.enqueue("digest.send", p) })
    : undefined;

  const heartbeatKey = `${prefix}:heartbeat:${id}`;
  const heartbeat = await startHeartbeat({ coord: services.coord, key: heartbeatKey, id, log });

  let resolveStopped: () => void = () => undefined;
  const stopped = new Promise<void>((resolve) => (resolveStopped = resolve));
  let stopping: Promise<void> | undefined;
  let dashboard: RunningDashboard | undefined;

  const stop = (reason: string): Promise<void> => {
    stopping ??= (async () => {
      log.info({ reason }, "worker stopping");
      heartbeat.stop();
      clearInterval(reclaimTimer);
      lossGuard?.stop();
      await dashboard?.close().catch((err: unknown) => log.warn({ err }, "dashboard close failed"));
      await digests?.stop().catch((err: unknown) => log.warn({ err }, "digest schedule stop failed"));
      // Without the digest role nothing above said so: a worker leaving on purpose is no incident for the alerts.
      if (!digests) await forgetWorker(services.coord, prefix, id).catch(() => undefined);
      // Active jobs see the abort, commit their current page and re-queue; then connections close.
      await host.close();
      await lease.stop().catch((err: unknown) => log.warn({ err }, "holder lease release failed"));
      await producer.close();
      await queues.close();
      await services.coord.remove(heartbeatKey).catch(() => undefined);
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
      dashboard = await startDashboard(
        { ...services, ...dashboardActions(services, producer, sources) },
        { host: http.host ?? config.httpHost, port: http.port ?? config.httpPort, token: http.token },
      );
    } catch (err) {
      await stop("the dashboard could not start");
      throw err;
    }
  }

  const applySchedules = async (next: Schedules): Promise<ReconcileSummary> => {
    schedules = next;
    return reconcileSchedules({ services, producer, sources, everyMs, schedules });
  };
  // SIGHUP: the settings file read again for the schedules (other settings wait for a restart); a bad value is
  // said in the log and the schedules stay as they were.
  const rereadSchedules = async () => {
    try {
      const layers = rereadSettings();
      if (!layers) return;
      const applied = await applySchedules(loadConfig(layers.env).schedules);
      log.info(
        { file: layers.file, changed: applied.changed, removed: applied.removed },
        "schedules re-read from the settings (other settings apply at the next start)",
      );
    } catch (err) {
      log.error({ err }, "the schedules were not changed: the settings cannot be read");
    }
  };

  if (handleSignals) process.on("SIGHUP", () => void rereadSchedules());

  log.info({ worker: id, roles: [...roles], schedules: summary.scheduled }, "worker ready");
  return { id, services, ...(dashboard ? { dashboard } : {}), untilStopped: () => stopped, stop, applySchedules };
}

/** What the dashboard's buttons do: each queues through the producer, as the CLI's commands do. */
function dashboardActions(services: Services, producer: Producer, sources: ReadonlyMap<SourceName, SourceDefinition>) {
  return {
    retryDownload: (data: unknown) => retryDownloadNow(services, producer, data),
    actions: {
      syncNow: (accountId?: number) => enqueueSyncNow({ services, producer, sources, accountId }),
      downloadNow: async () => ((await producer.enqueue("downloads.enqueue", { scope: "all" })) ? 1 : 0),
      syncTracked: (accountId: number, usernames: readonly string[]) => enqueueTrackedSync({ producer, accountId, usernames }),
      downloadWorks: async (accountId: number, deviationids: readonly string[]) =>
        (await enqueueDueDownloads(services, producer, { only: { accountId, deviationids } })).checked,
    },
  };
}
