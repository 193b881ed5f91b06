// Collects everything `dvault status` and the dashboard's overview show: accounts, sync sources, queues,
// downloads and the weekly allowance, the archive's size and free disk, worker heartbeats. Each part is
// read on its own: one that fails (Redis down, a table another migration has not added yet) is reported
// in `problems` and the rest of the report still stands.
import fs from "node:fs/promises";
import path from "node:path";
import type { Redis } from "ioredis";
import type { AccountStatus, TokenManager } from "../api/tokens.ts";
import type { Config } from "../config.ts";
import type { AccountRepository, AccountRow } from "../db/account.repository.ts";
import { SyncStateRepository } from "../db/sync-state.repository.ts";
import { UnreadableResponseRepository } from "../db/unreadable-response.repository.ts";
import type { Queryable } from "../db/with-transaction.ts";
import type { QueueAdmin } from "../queue/queue-admin.ts";
import {
  DOWNLOAD_STATUSES,
  STATUS_VERSION,
  type AccountStatusView,
  type ArchiveStatusView,
  type DownloadsStatusView,
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
  redis: Redis;
  accounts: AccountRepository;
  queues: QueueAdmin;
  /** The token manager when the app's credentials are configured (its status() flags old refresh tokens). */
  tokens?: (() => TokenManager) | undefined;
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
  const [accounts, sources, queues, downloads, archive, workers, unreadable] = await Promise.all([
    part("accounts", () => Promise.all(rows.map((r) => accountStatus(deps, r, now))), [] as AccountStatusView[]),
    part("sources", () => sourceStatuses(deps.pool, rows), [] as SourceStatusView[]),
    // Job timestamps and heartbeats are wall-clock times, whatever clock `now` follows (tests: the simulator's).
    part("queues", () => queueStatuses(deps.queues, Date.now()), [] as QueueStatusView[]),
    part("downloads", () => downloadStatus(deps, rows, now, problems), emptyDownloads()),
    part("archive", () => archiveStatus(deps.config.archiveDir, deps.pool), { dir: deps.config.archiveDir, exists: false, sizeBytes: 0, files: 0, freeBytes: null, totalBytes: null }),
    part("workers", () => workerHeartbeats(deps.redis, deps.config.redisPrefix, Date.now()), [] as WorkerStatusView[]),
    part("unreadable responses", () => unreadableStatus(deps.pool, now), emptyUnreadable()),
  ]);
  return { version: STATUS_VERSION, generatedAt: new Date(now).toISOString(), accounts, sources, queues, downloads, archive, workers, unreadable, problems };
}

// ---- accounts ---------------------------------------------------------------------------------------

async function accountStatus(deps: StatusDeps, row: AccountRow, now: number): Promise<AccountStatusView> {
  let manager: TokenManager | undefined;
  try {
    manager = deps.tokens?.();
  } catch {
    // No client credentials configured: the row alone still tells the state.
  }
  const s: AccountStatus = manager ? await manager.status(row) : statusFromRow(row, now);
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

function statusFromRow(row: AccountRow, now: number): AccountStatus {
  return {
    id: row.id,
    name: row.name,
    kind: row.kind,
    username: row.username,
    userId: row.userId,
    clientId: row.clientId,
    grantType: row.grantType,
    scopes: row.scopes,
    state: row.state,
    stateReason: row.stateReason,
    accessExpiresAt: row.accessExpiresAt?.toISOString() ?? null,
    refreshTokenAgeDays: row.refreshTokenEnc && row.refreshIssuedAt ? Math.floor((now - row.refreshIssuedAt.getTime()) / DAY) : null,
    hasRefreshToken: row.refreshTokenEnc !== null,
    grantStartedAt: row.grantStartedAt?.toISOString() ?? null,
    lastRefreshAt: row.lastRefreshAt?.toISOString() ?? null,
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

async function sourceStatuses(pool: Queryable, rows: readonly AccountRow[]): Promise<SourceStatusView[]> {
  const repo = new SyncStateRepository(pool);
  const out: SourceStatusView[] = [];
  for (const row of rows) {
    for (const s of await repo.listSourceStates(row.id)) {
      out.push({
        accountId: row.id,
        account: row.name,
        source: s.source,
        key: s.key,
        lastRunAt: iso(s.lastRunAt),
        lastResult: s.lastResult,
        lastError: s.lastError,
        nextRunAt: iso(s.nextRunAt),
        items: { new: s.counters.new, changed: s.counters.changed, removed: s.counters.removed },
        apiCalls: s.counters.apiCalls,
        throttleWaits: s.counters.throttleWaits,
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
  };
}

/**
 * A downloads row `d` that only a new login can move: its account has no usable grant, or it belongs to
 * no account yet and no user account has one (src/downloads/run-once.ts claims nothing for them).
 */
const BLOCKED_ROW = `
  EXISTS (SELECT 1 FROM accounts a WHERE a.id = d.account_id AND a.state IN ('needs_reauth', 'revoked'))
  OR (d.account_id IS NULL AND EXISTS (SELECT 1 FROM accounts a WHERE a.kind = 'user')
      AND NOT EXISTS (SELECT 1 FROM accounts a WHERE a.kind = 'user' AND a.state NOT IN ('needs_reauth', 'revoked')))`;

const WAITING_FOR_LOGIN = `
SELECT count(*)::int AS rows, count(*) FILTER (WHERE d.status = 'failed')::int AS failed
FROM downloads d
WHERE (d.status IN ('wanted', 'queued') OR (d.status = 'failed' AND d.next_attempt_at IS NOT NULL)) AND (${BLOCKED_ROW})`;

/** Monday 00:00 UTC of the week that contains `now`: the service's quota week. */
export function serviceWeekStart(now: number): Date {
  const d = new Date(now);
  const midnight = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate());
  const sinceMonday = (d.getUTCDay() + 6) % 7;
  return new Date(midnight - sinceMonday * DAY);
}

async function downloadStatus(deps: StatusDeps, rows: readonly AccountRow[], now: number, problems: string[]): Promise<DownloadsStatusView> {
  const out = emptyDownloads();
  const { rows: counts } = await deps.pool.query<{ status: string; n: number; bytes: string | null }>(
    "SELECT status::text AS status, count(*)::int AS n, sum(size) FILTER (WHERE status IN ('done', 'degraded'))::text AS bytes FROM downloads GROUP BY status",
  );
  for (const c of counts) {
    out.byStatus[c.status] = c.n;
    out.total += c.n;
    out.bytesStored += Number(c.bytes ?? 0);
  }
  out.deferredByQuota = out.byStatus.deferred_quota ?? 0;
  const weekStart = serviceWeekStart(now);
  const nextWeek = new Date(weekStart.getTime() + 7 * DAY);

  // The columns and tables below belong to the downloads work (issue 6): read them if they are there.
  const optional = async <T>(what: string, read: () => Promise<T>, fallback: T): Promise<T> => {
    try {
      return await read();
    } catch (err) {
      if (!isMissingRelation(err)) problems.push(`downloads ${what}: ${describeError(err)}`);
      return fallback;
    }
  };
  const nextAttempt = out.deferredByQuota
    ? await optional(
        "next window",
        async () =>
          (await deps.pool.query<{ at: Date | null }>("SELECT min(next_attempt_at) AS at FROM downloads WHERE status = 'deferred_quota'")).rows[0]?.at ?? null,
        null,
      )
    : null;
  out.nextWindowAt = out.deferredByQuota ? (nextAttempt ?? nextWeek).toISOString() : null;
  // Rows of an account that must log in again wait for that, whatever an earlier run recorded on them.
  const waiting = await optional(
    "waiting for a login",
    async () => (await deps.pool.query<{ rows: number; failed: number }>(WAITING_FOR_LOGIN)).rows[0],
    undefined,
  );
  out.waitingForLogin = { rows: waiting?.rows ?? 0, failed: waiting?.failed ?? 0 };
  // Failed rows with a next attempt failed on a transient fault and are retried on their own (src/downloads/retry.ts).
  if (out.byStatus.failed) {
    const retrying = await optional(
      "retries",
      async () =>
        (
          await deps.pool.query<{ n: number; at: Date | null }>(
            `SELECT count(*)::int AS n, min(d.next_attempt_at) AS at FROM downloads d
             WHERE d.status = 'failed' AND d.next_attempt_at IS NOT NULL AND NOT (${BLOCKED_ROW})`,
          )
        ).rows[0],
      undefined,
    );
    out.failedRetrying = retrying?.n ?? 0;
    out.nextRetryAt = iso(retrying?.at ?? null);
  }

  const usage = await optional(
    "quota",
    async () =>
      (
        await deps.pool.query<{ account_id: number; used: number; exhausted_at: Date | null; exhausted_reason: string | null }>(
          "SELECT account_id, used, exhausted_at, exhausted_reason FROM download_quota_usage WHERE week_start = $1::date",
          [weekStart.toISOString().slice(0, 10)],
        )
      ).rows,
    [],
  );
  const overrides = await optional(
    "allowances",
    async () => new Map((await deps.pool.query<{ id: number; q: number | null }>("SELECT id, download_quota AS q FROM accounts")).rows.map((r) => [r.id, r.q])),
    new Map<number, number | null>(),
  );
  const usedBy = new Map(usage.map((u) => [u.account_id, u]));
  for (const row of rows) {
    if (row.kind !== "user") continue;
    const used = usedBy.get(row.id)?.used ?? 0;
    const limit = overrides.get(row.id) ?? deps.config.downloadQuota;
    out.quota.push({
      accountId: row.id,
      account: row.name,
      weekStart: weekStart.toISOString(),
      used,
      limit,
      remaining: Math.max(0, limit - used),
      exhaustedAt: iso(usedBy.get(row.id)?.exhausted_at ?? null),
      exhaustedReason: usedBy.get(row.id)?.exhausted_reason ?? (usedBy.get(row.id)?.exhausted_at ? "the service refused an original download this week" : null),
    });
  }
  const pause = await readPausedFlag(deps.redis, `${deps.config.redisPrefix}:downloads:paused`).catch((err: unknown) => {
    problems.push(`downloads pause flag: ${describeError(err)}`);
    return { paused: false, reason: null };
  });
  out.paused = pause.paused;
  out.pausedReason = pause.reason;
  return out;
}

/**
 * The pause switch belongs to the downloads worker (src/downloads/disk-guard.ts sets JSON with a `reason`
 * while disk space is short). Read defensively: any value but "0"/"false"/"" (or another type) means paused.
 */
export async function readPausedFlag(redis: Redis, key: string): Promise<{ paused: boolean; reason: string | null }> {
  const type = await redis.type(key);
  if (type === "none") return { paused: false, reason: null };
  if (type !== "string") return { paused: true, reason: null };
  const value = ((await redis.get(key)) ?? "").trim();
  if (["", "0", "false", "no"].includes(value.toLowerCase())) return { paused: false, reason: null };
  try {
    const parsed = JSON.parse(value) as { reason?: unknown };
    return { paused: true, reason: typeof parsed?.reason === "string" ? parsed.reason : null };
  } catch {
    return { paused: true, reason: null };
  }
}

// ---- archive ----------------------------------------------------------------------------------------

async function archiveStatus(dir: string, pool: Queryable): Promise<ArchiveStatusView> {
  // Content-addressed files are shared between downloads: count each path once.
  const { rows } = await pool.query<{ files: number; bytes: string | null }>(
    `SELECT count(*)::int AS files, sum(size)::text AS bytes FROM (
       SELECT DISTINCT ON (path) path, size FROM downloads WHERE status IN ('done', 'degraded') AND path IS NOT NULL
     ) stored`,
  );
  const exists = await fs.stat(dir).then((s) => s.isDirectory(), () => false);
  const disk = await statfsNearest(dir);
  return {
    dir,
    exists,
    sizeBytes: Number(rows[0]?.bytes ?? 0),
    files: rows[0]?.files ?? 0,
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

// ---- workers ----------------------------------------------------------------------------------------

/** Heartbeats are `<prefix>:heartbeat:<host>:<pid>` = {id, at}, expiring after a minute without a beat. */
export async function workerHeartbeats(redis: Redis, prefix: string, now: number): Promise<WorkerStatusView[]> {
  const base = `${prefix}:heartbeat:`;
  const keys: string[] = [];
  let cursor = "0";
  do {
    const [next, batch] = await redis.scan(cursor, "MATCH", `${base}*`, "COUNT", 200);
    cursor = next;
    keys.push(...batch);
  } while (cursor !== "0");
  if (keys.length === 0) return [];
  const values = await redis.mget(...keys);
  const out: WorkerStatusView[] = keys.map((key, i) => {
    const id = key.slice(base.length);
    const colon = id.lastIndexOf(":");
    const pid = colon > 0 ? Number(id.slice(colon + 1)) : NaN;
    let at: string | null = null;
    try {
      const parsed = JSON.parse(values[i] ?? "null") as { at?: unknown } | null;
      if (parsed && typeof parsed.at === "string" && !Number.isNaN(Date.parse(parsed.at))) at = new Date(parsed.at).toISOString();
    } catch {
      // A foreign value: the key's presence is still a heartbeat.
    }
    return {
      id,
      host: colon > 0 ? id.slice(0, colon) : id,
      pid: Number.isInteger(pid) ? pid : null,
      lastBeatAt: at,
      ageS: at ? Math.max(0, Math.round((now - Date.parse(at)) / 1000)) : null,
    };
  });
  return out.sort((a, b) => a.id.localeCompare(b.id));
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
