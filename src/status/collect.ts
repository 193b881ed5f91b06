// Collects everything `dvault status` and the dashboard's overview show: accounts, sync sources, queues,
// downloads and the weekly allowance, the archive's size and free disk, worker heartbeats, the API pace. Each part is
// read on its own: one that fails (Redis down, a table another migration has not added yet) is reported
// in `problems` and the rest of the report still stands.
import fs from "node:fs/promises";
import path from "node:path";
import type { Coordinator } from "../coord/coordinator.ts";
import { grantUnusable } from "../api/token-errors.ts";
import { accountStatusOf, type AccountStatus, keyedStatus, type TokenManager } from "../api/token-manager.ts";
import type { Config } from "../config.ts";
import { type InstallKey, installKey, unreadableTokens } from "../crypto/install-key.ts";
import { describeSchedule, scheduleOf, type Schedules } from "../config/schedules.ts";
import { describeBucket } from "../config/storage.ts";
import type { AccountRepository, AccountRow } from "../db/account.repository.ts";
import { DownloadRepository } from "../db/download.repository.ts";
import { collectNotArchivable } from "../db/not-archivable.repository.ts";
import { DownloadQuotaRepository, type QuotaWeek } from "../db/download-quota.repository.ts";
import { StatusRepository } from "../db/status.repository.ts";
import { SyncStateRepository } from "../db/sync-state.repository.ts";
import { UnreadableResponseRepository } from "../db/unreadable-response.repository.ts";
import type { Queryable } from "../db/with-transaction.ts";
import { movedAway } from "../queue/holder.ts";
import { SOURCE_SCHEDULER_PREFIX, syncJobId } from "../queue/producer.ts";
import type { QueueAdmin } from "../queue/queue-admin.ts";
import { isHashTagged, LEGACY_REDIS_PREFIX } from "../queue/redis-prefix.ts";
import { emptyNotArchivable } from "../text/not-archivable.ts";
import { missingRoles, pacingStatusesOf, readPausedFlag, workersWithRoles } from "./redis-state.ts";
import type { PacerStore } from "../api/pacer-store.ts";
import {
  DOWNLOAD_STATUSES,
  STATUS_VERSION,
  type AccountStatusView,
  type ArchiveStatusView,
  type DownloadsStatusView,
  type PacingStatusView,
  type RedisKeysStatusView,
  type QueueStatusView,
  type SourceStatusView,
  type StatusReport,
  type UnreadableStatusView,
  type WorkerStatusView,
} from "./schema.ts";

const DAY = 86_400_000;

export type StatusDeps = {
  config: Config;
  pool: Queryable;
  /** The API pace (the pacer, or its store: pacingStatusesOf). */
  pacer: Pick<PacerStore, "keys" | "status">;
  /** Heartbeats, leases and the pause switch. */
  coord: Coordinator;
  accounts: AccountRepository;
  queues: QueueAdmin;
  /** The token manager when the app's credentials are configured (its status() flags old refresh tokens). */
  tokens?: (() => TokenManager) | undefined;
  /** The key the tokens are read with (Services.installKey); read from the settings when not given. */
  installKey?: (() => InstallKey) | undefined;
  now?: () => number;
};

export async function collectStatus(deps: StatusDeps): Promise<StatusReport> {
  const now = (deps.now ?? Date.now)();
  const problems: string[] = [];
  const part = async <T>(what: string, read: () => Promise<T>, fallback: T): Promise<T> => {
    try {
      return await read();
    } catch (err) {
      problems.push(`${what}: ${describeError(err)}`);
      return fallback;
    }
  };

  const rows = await part("accounts", () => deps.accounts.list(), [] as AccountRow[]);
  // The key the accounts' tokens are read with, or why they cannot be (read once, never made here).
  const key = deps.installKey?.() ?? installKey(deps.config);
  const [accounts, sources, queues, downloads, archive, workers, unreadable, pacing, notArchivable, movedTo, refusesWrites] = await Promise.all([
    part("accounts", () => Promise.all(rows.map((r) => accountStatus(deps, key, r, now))), [] as AccountStatusView[]),
    part("sources", () => sourceStatuses(deps.pool, rows, deps.queues, deps.config.schedules), [] as SourceStatusView[]),
    // Job timestamps and heartbeats are wall-clock times, whatever clock `now` follows (tests: the simulator's).
    part("queues", () => queueStatuses(deps.queues, Date.now()), [] as QueueStatusView[]),
    part("downloads", () => downloadStatus(deps, key, rows, now, problems), emptyDownloads()),
    part("archive", () => archiveStatus(deps.config, deps.pool), {
      dir: deps.config.archiveDir,
      ...storeOf(deps.config),
      exists: false,
      sizeBytes: 0,
      files: 0,
      freeBytes: null,
      totalBytes: null,
    }),
    part("workers", () => workersWithRoles(deps.coord, deps.config.redisPrefix, Date.now()), [] as WorkerStatusView[]),
    part("unreadable responses", () => unreadableStatus(deps.pool, now), emptyUnreadable()),
    // The pacer's clock is the wall clock, like the heartbeats'.
    part("pacing", () => pacingStatusesOf(deps.pacer, Date.now()), [] as PacingStatusView[]),
    part("not archivable", () => collectNotArchivable(deps.pool), emptyNotArchivable()),
    // Where `dvault engine migrate` moved the install, when it moved it away from this engine.
    part("engine", async () => (await movedAway(deps.coord, deps.config.redisPrefix)) ?? null, null),
    part("database", () => new StatusRepository(deps.pool).writeRefusal(), null),
  ]);
  return {
    version: STATUS_VERSION,
    generatedAt: new Date(now).toISOString(),
    accounts,
    sources,
    queues,
    downloads,
    archive,
    workers,
    missingRoles: missingRoles(workers),
    engine: { name: deps.config.engine, prefix: deps.config.redisPrefix, movedTo },
    database: { refusesWrites },
    redis: deps.config.engine === "redis" ? redisKeysStatus(deps.config) : null,
    unreadable,
    pacing,
    notArchivable,
    problems,
  };
}

function redisKeysStatus(config: Config): RedisKeysStatusView {
  const prefix = config.redisPrefix;
  return { prefix, hashTagged: isHashTagged(prefix), legacy: !config.redisPrefixSet && prefix === LEGACY_REDIS_PREFIX };
}

// ---- accounts ---------------------------------------------------------------------------------------

async function accountStatus(deps: StatusDeps, key: InstallKey, row: AccountRow, now: number): Promise<AccountStatusView> {
  // The token manager only when a key exists to read with: making it would make a key file (src/secret-key.ts).
  let manager: TokenManager | undefined;
  try {
    manager = "cipher" in key ? deps.tokens?.() : undefined;
  } catch {
    // No client credentials configured: the row alone still tells the state.
  }
  // The manager's status reads the tokens with the same key (TokenManager.status); the row alone is read with it here.
  const s: AccountStatus = manager ? await manager.status(row) : keyedStatus(accountStatusOf(row, now), row, key);
  const expiresAt = s.accessExpiresAt ? Date.parse(s.accessExpiresAt) : null;
  return {
    id: s.id,
    name: s.name,
    kind: s.kind,
    username: s.username,
    userId: s.userId,
    scopes: s.scopes,
    state: s.state,
    stateReason: s.stateReason,
    accessExpiresAt: s.accessExpiresAt,
    accessExpiresInS: expiresAt === null ? null : Math.round((expiresAt - now) / 1000),
    hasRefreshToken: s.hasRefreshToken,
    refreshTokenAgeDays: s.refreshTokenAgeDays,
    grantStartedAt: s.grantStartedAt,
    lastRefreshAt: s.lastRefreshAt,
    needsReauth: s.state === "needs_reauth" || s.state === "revoked",
    fix: fixFor(s),
  };
}

/** What a person runs to fix the account's state; null when nothing needs doing. */
export function fixFor(s: Pick<AccountStatus, "name" | "kind" | "state" | "hasRefreshToken">): string | null {
  if (s.kind === "client") return s.state === "ok" ? null : "dvault auth client";
  switch (s.state) {
    case "ok":
      return null;
    case "expiring":
      // Without a refresh token (implicit grant) only a new login helps; an old one is renewed by any refresh.
      return s.hasRefreshToken ? "dvault auth status" : `dvault auth login --account ${s.name}`;
    case "needs_reauth":
    case "revoked":
      return `dvault auth login --account ${s.name}`;
  }
}

// ---- sources ----------------------------------------------------------------------------------------

/** The next run of each source's job scheduler the worker installed (by scheduler id); none when Redis cannot say. */
async function schedulerNextRuns(queues: QueueAdmin): Promise<Map<string, number>> {
  try {
    const schedulers = await queues.queue("sync").getJobSchedulers(0, -1);
    return new Map(schedulers.filter((s) => s.next !== undefined).map((s) => [s.key, Number(s.next)]));
  } catch {
    // The queues part says Redis is away; the sources still show what their last runs recorded.
    return new Map();
  }
}

async function sourceStatuses(pool: Queryable, rows: readonly AccountRow[], queues: QueueAdmin, schedules: Schedules): Promise<SourceStatusView[]> {
  const repo = new SyncStateRepository(pool);
  const nextRuns = await schedulerNextRuns(queues);
  const out: SourceStatusView[] = [];
  for (const row of rows) {
    for (const s of await repo.listSourceStates(row.id)) {
      const scheduled = nextRuns.get(syncJobId({ accountId: row.id, source: s.source, key: s.key }, SOURCE_SCHEDULER_PREFIX));
      const schedule = (schedules as Partial<Schedules>)[s.source as keyof Schedules]
        ? scheduleOf(schedules, s.source as keyof Schedules, row.name)
        : undefined;
      out.push({
        accountId: row.id,
        account: row.name,
        source: s.source,
        key: s.key,
        lastRunAt: iso(s.lastRunAt),
        lastResult: s.lastResult,
        lastError: s.lastError,
        nextRunAt: scheduled === undefined ? iso(s.nextRunAt) : new Date(scheduled).toISOString(),
        ...(schedule ? { schedule: describeSchedule(schedule) } : {}),
        items: { new: s.counters.new, changed: s.counters.changed, removed: s.counters.removed },
        apiCalls: s.counters.apiCalls,
        paced: s.counters.paced,
        throttled: s.counters.throttled,
        throttleWaits: s.counters.paced,
        durationMs: s.counters.durationMs,
        lastCompleteSweepAt: iso(s.lastCompleteSweepAt),
        inProgress: s.sweepStartedAt !== null,
        unavailableReason: s.unavailableReason,
        gaps: Object.entries(s.gaps ?? {}).map(([scope, g]) => ({
          scope,
          expected: g.expected ?? null,
          mirrored: g.mirrored ?? null,
          reason: g.reason,
          recordedAt: g.recordedAt,
        })),
      });
    }
  }
  return out;
}

// ---- queues -----------------------------------------------------------------------------------------

async function queueStatuses(queues: QueueAdmin, now: number): Promise<QueueStatusView[]> {
  const counts = await queues.counts(now);
  return counts.map((c) => ({
    name: c.name,
    paused: c.paused,
    waiting: c.waiting,
    active: c.active,
    delayed: c.delayed,
    failed: c.failed,
    completed: c.completed,
    oldestWaitingS: c.oldestWaitingMs === null ? null : Math.round(c.oldestWaitingMs / 1000),
  }));
}

// ---- downloads --------------------------------------------------------------------------------------

function emptyDownloads(): DownloadsStatusView {
  return {
    byStatus: Object.fromEntries(DOWNLOAD_STATUSES.map((s) => [s, 0])),
    total: 0,
    paused: false,
    pausedReason: null,
    deferredByQuota: 0,
    nextWindowAt: null,
    failedRetrying: 0,
    nextRetryAt: null,
    waitingForLogin: { rows: 0, failed: 0 },
    quota: [],
    bytesStored: 0,
    dueNow: 0,
    queued: 0,
  };
}

/** Monday 00:00 UTC of the week that contains `now`: the service's quota week. */
export function serviceWeekStart(now: number): Date {
  const d = new Date(now);
  const midnight = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate());
  const sinceMonday = (d.getUTCDay() + 6) % 7;
  return new Date(midnight - sinceMonday * DAY);
}

async function downloadStatus(deps: StatusDeps, key: InstallKey, rows: readonly AccountRow[], now: number, problems: string[]): Promise<DownloadsStatusView> {
  const out = emptyDownloads();
  const repo = new StatusRepository(deps.pool);
  const counts = await repo.countDownloadsByStatus();
  for (const c of counts) {
    out.byStatus[c.status] = c.n;
    out.total += c.n;
    out.bytesStored += Number(c.bytes ?? 0);
  }
  out.deferredByQuota = out.byStatus.deferred_quota ?? 0;
  const weekStart = serviceWeekStart(now);
  const nextWeek = new Date(weekStart.getTime() + 7 * DAY);

  // The columns and tables below belong to the downloads (docs/schema.md): read them if they are there.
  const optional = async <T>(what: string, read: () => Promise<T>, fallback: T): Promise<T> => {
    try {
      return await read();
    } catch (err) {
      if (!isMissingRelation(err)) problems.push(`downloads ${what}: ${describeError(err)}`);
      return fallback;
    }
  };
  const nextAttempt = out.deferredByQuota ? await optional("next window", () => repo.nextQuotaWindow(), null) : null;
  out.nextWindowAt = out.deferredByQuota ? (nextAttempt ?? nextWeek).toISOString() : null;
  // Rows of an account that must log in again wait for that, whatever an earlier run recorded on them: its grant is
  // lost, or the install's key cannot read its tokens (those accounts' ids, `keyLost`).
  const users = rows.filter((r) => r.kind === "user" && !grantUnusable(r));
  const keyLost = users.filter((r) => unreadableTokens(r, key)).map((r) => r.id);
  const waiting = await optional("waiting for a login", () => repo.countWaitingForLogin(keyLost), undefined);
  out.waitingForLogin = { rows: waiting?.rows ?? 0, failed: waiting?.failed ?? 0 };
  // Failed rows with a next attempt failed on a transient fault and are retried on their own (src/downloads/retry.ts).
  if (out.byStatus.failed) {
    const retrying = await optional("retries", () => repo.countFailedRetrying(keyLost), undefined);
    out.failedRetrying = retrying?.n ?? 0;
    out.nextRetryAt = iso(retrying?.at ?? null);
  }

  // What a run could do now: the accounts that can download (an account waiting for a login is counted above).
  const able = users.filter((r) => !keyLost.includes(r.id)).map((r) => r.id);
  const left = await optional("due now", () => new DownloadRepository(deps.pool).remainingDownloads(able, new Date(now)), undefined);
  out.dueNow = left?.dueNow ?? 0;
  out.queued = left?.queued ?? 0;

  // One read of the quota ledger, derived as the downloads decide by it (download-quota.repository.ts#quotaWeekOf).
  const weeks = await optional(
    "quota",
    () =>
      new DownloadQuotaRepository(deps.pool).usageOfAccounts({ weekStart: weekStart.toISOString().slice(0, 10), defaultAllowance: deps.config.downloadQuota }),
    new Map<number, QuotaWeek>(),
  );
  for (const row of rows) {
    const week = weeks.get(row.id);
    if (row.kind !== "user" || !week) continue;
    out.quota.push({
      accountId: row.id,
      account: row.name,
      weekStart: weekStart.toISOString(),
      used: week.used,
      limit: week.allowance,
      limitFrom: week.allowanceFrom,
      configuredLimit: week.configured,
      remaining: week.remaining,
      exhaustedAt: iso(week.exhaustedAt),
      exhaustedReason: week.exhaustedReason,
    });
  }
  const pause = await readPausedFlag(deps.coord, deps.config.redisPrefix).catch((err: unknown) => {
    problems.push(`downloads pause flag: ${describeError(err)}`);
    return { paused: false, reason: null };
  });
  out.paused = pause.paused;
  out.pausedReason = pause.reason;
  return out;
}

// ---- archive ----------------------------------------------------------------------------------------

function storeOf(config: Config): Pick<ArchiveStatusView, "storage" | "store"> {
  const s = config.storage;
  return s.kind === "s3" ? { storage: "s3", store: describeBucket(s) } : { storage: "local", store: config.archiveDir };
}

async function archiveStatus(config: Config, pool: Queryable): Promise<ArchiveStatusView> {
  const dir = config.archiveDir;
  // Content-addressed files are shared between downloads: count each path once.
  const stored = await new StatusRepository(pool).storedArchive();
  const exists = await fs.stat(dir).then(
    (s) => s.isDirectory(),
    () => false,
  );
  const disk = await statfsNearest(dir);
  return {
    dir,
    ...storeOf(config),
    exists,
    sizeBytes: Number(stored?.bytes ?? 0),
    files: stored?.files ?? 0,
    freeBytes: disk ? disk.bavail * disk.bsize : null,
    totalBytes: disk ? disk.blocks * disk.bsize : null,
  };
}

/** statfs of the directory, or of its nearest existing parent before the archive is created. */
async function statfsNearest(dir: string): Promise<{ bavail: number; bsize: number; blocks: number } | undefined> {
  for (let d = path.resolve(dir); ; d = path.dirname(d)) {
    const s = await fs.statfs(d).catch(() => undefined);
    if (s) return { bavail: Number(s.bavail), bsize: Number(s.bsize), blocks: Number(s.blocks) };
    if (path.dirname(d) === d) return undefined;
  }
}

// ---- unreadable answers -------------------------------------------------------------------------------

/** How far back status counts unreadable answers. */
const UNREADABLE_WINDOW_MS = 30 * DAY;

function emptyUnreadable(): UnreadableStatusView {
  return { count: 0, responses: 0, lastSeenAt: null, recent: [] };
}

async function unreadableStatus(pool: Queryable, now: number): Promise<UnreadableStatusView> {
  const s = await new UnreadableResponseRepository(pool).summarizeUnreadable(new Date(now - UNREADABLE_WINDOW_MS));
  return {
    count: s.count,
    responses: s.responses,
    lastSeenAt: iso(s.lastSeenAt),
    recent: s.recent.map((r) => ({ ...r, lastSeenAt: r.lastSeenAt.toISOString() })),
  };
}

// ---- helpers ----------------------------------------------------------------------------------------

function iso(d: Date | null | undefined): string | null {
  return d ? d.toISOString() : null;
}

/** 42P01 undefined table, 42703 undefined column: a part of the schema that is not migrated (yet). */
function isMissingRelation(err: unknown): boolean {
  const code = (err as { code?: string }).code;
  return code === "42P01" || code === "42703";
}

function describeError(err: unknown): string {
  const e = err as { message?: string; code?: string };
  return (e.message ?? String(err)).split("\n")[0]!.slice(0, 200) || e.code || "failed";
}
