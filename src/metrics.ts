// Prometheus metrics (prom-client, one registry per process). Counters of this process's API calls come
// from services.apiTotals; everything else is read at scrape time from Postgres and Redis (the status
// collector, the pacer's keys, the queues' event streams), so the numbers hold across processes.
import { Counter, Gauge, Registry, collectDefaultMetrics } from "prom-client";
import type { TransportStats } from "./api/http.ts";
import type { Pacer } from "./api/pacer.ts";
import type { Config } from "./config.ts";
import type { InstallKey } from "./crypto/install-key.ts";
import type { AccountRepository } from "./db/account.repository.ts";
import type { Queryable } from "./db/with-transaction.ts";
import type { QueueBackend } from "./queue/backend.ts";
import type { QueueAdmin } from "./queue/queue-admin.ts";
import type { Coordinator } from "./coord/coordinator.ts";
import { QUEUE_NAMES, type QueueName } from "./queue/queues.ts";
import { collectStatus, type StatusDeps } from "./status/collect.ts";

export type MetricsDeps = {
  config: Config;
  pool: Queryable;
  coord: Coordinator;
  accounts: AccountRepository;
  pacer: Pacer;
  apiTotals: TransportStats;
  queues: QueueAdmin;
  now?: () => number;
  /** The key the accounts' tokens are read with (Services.installKey), for their state; from the settings when not given. */
  installKey?: (() => InstallKey) | undefined;
  /** The dashboard's answers by route and outcome (src/http/answer-counts.ts), when this process serves it. */
  httpAnswers?: () => ReadonlyArray<{ route: string; outcome: string; count: number }>;
};

export type Metrics = {
  registry: Registry;
  contentType: string;
  /** Refreshes the scrape-time values and renders the exposition text. */
  render(): Promise<string>;
};

/** What the status report reads, of the metrics' own parts (no token manager: a scrape flags and refreshes nothing). */
function statusDepsOf(deps: MetricsDeps, now: () => number): StatusDeps {
  const { config, pool, pacer, coord, accounts, queues, installKey } = deps;
  return { config, pool, pacer, coord, accounts, queues, installKey, now };
}

export function createMetrics(deps: MetricsDeps): Metrics {
  const now = deps.now ?? Date.now;
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: "dvault_" });
  const m = {
    apiCalls: new Counter({
      name: "dvault_api_calls_total",
      help: 'API responses by operation and HTTP status ("network" when none came), retries included',
      labelNames: ["operation", "status"],
      registers: [registry],
    }),
    paced: new Counter({
      name: "dvault_api_paced_total",
      help: "API requests that waited for dvault's own pacer before being sent (paced, not refused)",
      registers: [registry],
    }),
    pacedSeconds: new Counter({
      name: "dvault_api_paced_seconds_total",
      help: "Time API requests spent waiting for dvault's own pacer",
      registers: [registry],
    }),
    throttled: new Counter({
      name: "dvault_api_throttled_total",
      help: "API answers in which the service refused a request as too many (429, 503, a threshold error)",
      registers: [registry],
    }),
    retries: new Counter({ name: "dvault_api_retries_total", help: "API requests retried (server errors, network errors, throttling)", registers: [registry] }),
    refreshes: new Counter({ name: "dvault_api_token_refreshes_total", help: "Access tokens refreshed after a 401", registers: [registry] }),
    pacerRate: new Gauge({
      name: "dvault_pacer_rate",
      help: "Requests per second the pacer key is paced at now",
      labelNames: ["key"],
      registers: [registry],
    }),
    pacerLearnedRate: new Gauge({
      name: "dvault_pacer_learned_rate",
      help: "The safe rate (requests per second) the pacer key learned, where its next run starts",
      labelNames: ["key"],
      registers: [registry],
    }),
    pacerLost: new Gauge({
      name: "dvault_pacer_throttled_seconds",
      help: "Time lost to throttling per pacer key: the sum of its holds after refusals",
      labelNames: ["key"],
      registers: [registry],
    }),
    pacerWait: new Gauge({
      name: "dvault_pacer_wait_seconds",
      help: "Time until the next request may start, per pacer key",
      labelNames: ["key"],
      registers: [registry],
    }),
    tokenExpiry: new Gauge({
      name: "dvault_token_expiry_seconds",
      help: "Seconds until the account's access token expires (negative: expired, refreshed on next use)",
      labelNames: ["account"],
      registers: [registry],
    }),
    accountState: new Gauge({
      name: "dvault_account_needs_reauth",
      help: "1 when the account must be authorized again",
      labelNames: ["account"],
      registers: [registry],
    }),
    jobsCompleted: new Counter({
      name: "dvault_jobs_completed_total",
      help: "Jobs completed, by queue and job name, seen since this process started",
      labelNames: ["queue", "name"],
      registers: [registry],
    }),
    jobsFailed: new Counter({
      name: "dvault_jobs_failed_total",
      help: "Jobs failed for good (attempts exhausted or permanent), by queue and job name, since this process started",
      labelNames: ["queue", "name"],
      registers: [registry],
    }),
    queueJobs: new Gauge({ name: "dvault_queue_jobs", help: "Jobs per queue and state", labelNames: ["queue", "state"], registers: [registry] }),
    queueLag: new Gauge({
      name: "dvault_queue_lag_seconds",
      help: "Age of the oldest job waiting to start (0 when none waits)",
      labelNames: ["queue"],
      registers: [registry],
    }),
    queuePaused: new Gauge({ name: "dvault_queue_paused", help: "1 when the queue is paused", labelNames: ["queue"], registers: [registry] }),
    downloads: new Gauge({ name: "dvault_downloads", help: "Rows of the downloads table by status", labelNames: ["status"], registers: [registry] }),
    downloadedBytes: new Gauge({ name: "dvault_downloaded_bytes", help: "Bytes of stored originals the downloads table records", registers: [registry] }),
    quotaUsed: new Gauge({
      name: "dvault_download_quota_used",
      help: "Original downloads used this service week",
      labelNames: ["account"],
      registers: [registry],
    }),
    quotaRemaining: new Gauge({
      name: "dvault_download_quota_remaining",
      help: "Original downloads left this service week",
      labelNames: ["account"],
      registers: [registry],
    }),
    archiveSize: new Gauge({ name: "dvault_archive_size_bytes", help: "Bytes of the files in the archive", registers: [registry] }),
    archiveFiles: new Gauge({ name: "dvault_archive_files", help: "Files in the archive", registers: [registry] }),
    archiveFree: new Gauge({ name: "dvault_archive_free_bytes", help: "Free bytes on the archive's filesystem", registers: [registry] }),
    workers: new Gauge({ name: "dvault_workers", help: "Workers with a live heartbeat", registers: [registry] }),
    sourceFailing: new Gauge({
      name: "dvault_sync_source_failed",
      help: "1 when the source's last run failed",
      labelNames: ["account", "source", "key"],
      registers: [registry],
    }),
    scrapeProblems: new Gauge({ name: "dvault_scrape_problems", help: "Parts of the status that could not be read at this scrape", registers: [registry] }),
    httpAnswers: new Counter({
      name: "dvault_http_answers_total",
      help: "Dashboard answers by route and outcome: ok, refused (4xx), busy (503 with Retry-After: come back later, not a failure), error (other 5xx)",
      labelNames: ["route", "outcome"],
      registers: [registry],
    }),
  };
  const events = new JobEventCounter(deps.queues.backend);

  async function refresh(): Promise<void> {
    const t = deps.apiTotals;
    m.apiCalls.reset();
    for (const [operation, byStatus] of Object.entries(t.calls)) {
      for (const [status, n] of Object.entries(byStatus)) m.apiCalls.inc({ operation, status }, n);
    }
    setCounter(m.paced, t.paced.count);
    setCounter(m.pacedSeconds, t.paced.totalMs / 1000);
    setCounter(m.throttled, t.throttled);
    setCounter(m.retries, t.retries);
    setCounter(m.refreshes, t.refreshes);
    m.httpAnswers.reset();
    for (const a of deps.httpAnswers?.() ?? []) m.httpAnswers.inc({ route: a.route, outcome: a.outcome }, a.count);

    const [report] = await Promise.all([collectStatus(statusDepsOf(deps, now)), refreshPacers(), events.poll().catch(() => undefined)]);
    m.jobsCompleted.reset();
    m.jobsFailed.reset();
    for (const [queue, byName] of events.completed) for (const [name, n] of byName) m.jobsCompleted.inc({ queue, name }, n);
    for (const [queue, byName] of events.failed) for (const [name, n] of byName) m.jobsFailed.inc({ queue, name }, n);

    m.tokenExpiry.reset();
    m.accountState.reset();
    for (const a of report.accounts) {
      if (a.accessExpiresInS !== null) m.tokenExpiry.set({ account: a.name }, a.accessExpiresInS);
      m.accountState.set({ account: a.name }, a.needsReauth ? 1 : 0);
    }
    for (const q of report.queues) {
      for (const state of ["waiting", "active", "delayed", "failed", "completed"] as const) m.queueJobs.set({ queue: q.name, state }, q[state]);
      m.queueLag.set({ queue: q.name }, q.oldestWaitingS ?? 0);
      m.queuePaused.set({ queue: q.name }, q.paused ? 1 : 0);
    }
    m.downloads.reset();
    for (const [status, n] of Object.entries(report.downloads.byStatus)) m.downloads.set({ status }, n);
    m.downloadedBytes.set(report.downloads.bytesStored);
    m.quotaUsed.reset();
    m.quotaRemaining.reset();
    for (const q of report.downloads.quota) {
      m.quotaUsed.set({ account: q.account }, q.used);
      m.quotaRemaining.set({ account: q.account }, q.remaining);
    }
    m.archiveSize.set(report.archive.sizeBytes);
    m.archiveFiles.set(report.archive.files);
    if (report.archive.freeBytes !== null) m.archiveFree.set(report.archive.freeBytes);
    m.workers.set(report.workers.length);
    m.sourceFailing.reset();
    for (const s of report.sources) m.sourceFailing.set({ account: s.account, source: s.source, key: s.key }, s.lastResult === "failed" ? 1 : 0);
    m.scrapeProblems.set(report.problems.length);
  }

  async function refreshPacers(): Promise<void> {
    const pacerKeys = await deps.pacer.keys();
    const statuses = await Promise.all(pacerKeys.map((k) => deps.pacer.status(k)));
    for (const gauge of [m.pacerRate, m.pacerLearnedRate, m.pacerLost, m.pacerWait]) gauge.reset();
    for (const s of statuses) {
      if (s.rate !== null) m.pacerRate.set({ key: s.key }, s.rate);
      if (s.learnedRate !== null) m.pacerLearnedRate.set({ key: s.key }, s.learnedRate);
      m.pacerLost.set({ key: s.key }, s.lostMs / 1000);
      m.pacerWait.set({ key: s.key }, s.waitMs / 1000);
    }
  }

  return {
    registry,
    contentType: registry.contentType,
    async render() {
      await refresh();
      return registry.metrics();
    },
  };
}

/** Counters mirror totals kept elsewhere: reset and add the current total. */
function setCounter(counter: Counter, value: number): void {
  counter.reset();
  if (value > 0) counter.inc(value);
}

/**
 * Counts "completed" and "failed" events from each queue's BullMQ event log (a Redis stream `<prefix>:<queue>:events`,
 * or BullMQ's event table on PostgreSQL: src/queue/backend.ts#finishedAfter), read without blocking at every scrape
 * from where the last scrape stopped: every worker process is counted, not just this one. A "failed" event means
 * failed for good (a retried attempt emits "delayed").
 */
export class JobEventCounter {
  readonly completed = new Map<QueueName, Map<string, number>>();
  readonly failed = new Map<QueueName, Map<string, number>>();
  private readonly cursors = new Map<QueueName, string>();
  private started: Promise<void> | undefined;

  constructor(private readonly backend: QueueBackend) {
    this.started = this.start();
  }

  /** Counting starts at the logs' current ends: earlier events belong to earlier processes' counters. */
  private async start(): Promise<void> {
    await Promise.all(
      QUEUE_NAMES.map(async (queue) => {
        const cursor = await this.backend.eventCursor(queue).catch(() => undefined);
        if (cursor !== undefined) this.cursors.set(queue, cursor);
      }),
    );
  }

  async poll(): Promise<void> {
    if (this.started) {
      await this.started.catch(() => undefined);
      this.started = undefined;
    }
    for (const queue of QUEUE_NAMES) {
      // A log whose end could not be read at start is read from now on, not from its beginning.
      const from = this.cursors.get(queue) ?? (await this.backend.eventCursor(queue));
      const { cursor, finished } = await this.backend.finishedAfter(queue, from);
      for (const e of finished) {
        const counts = e.event === "completed" ? this.completed : this.failed;
        const byName = counts.get(queue) ?? new Map<string, number>();
        byName.set(e.name, (byName.get(e.name) ?? 0) + 1);
        counts.set(queue, byName);
      }
      this.cursors.set(queue, cursor);
    }
  }
}
