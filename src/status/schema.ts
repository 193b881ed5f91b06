// The stable JSON form of `dvault status --json` (documented field by field in docs/status.md). Fields are
// only ever added; `version` changes if one is removed or changes meaning.
import { z } from "zod";
import { QUEUE_NAMES } from "../queue/queues.ts";
import { NOT_ARCHIVABLE_REASONS, type NotArchivable } from "../text/not-archivable.ts";

export const STATUS_VERSION = 1;

const isoTime = z.string().datetime({ offset: true });

export const AccountStatusSchema = z.object({
  id: z.number().int(),
  name: z.string(),
  kind: z.enum(["user", "client"]),
  username: z.string().nullable(),
  userId: z.string().nullable(),
  scopes: z.array(z.string()),
  state: z.enum(["ok", "expiring", "needs_reauth", "revoked"]),
  stateReason: z.string().nullable(),
  accessExpiresAt: isoTime.nullable(),
  /** Negative once expired (a refresh happens on the next call). */
  accessExpiresInS: z.number().int().nullable(),
  hasRefreshToken: z.boolean(),
  refreshTokenAgeDays: z.number().int().nullable(),
  grantStartedAt: isoTime.nullable(),
  lastRefreshAt: isoTime.nullable(),
  needsReauth: z.boolean(),
  /** The command that fixes the state, when a person has to act. */
  fix: z.string().nullable(),
});

export const SourceGapStatusSchema = z.object({
  scope: z.string(),
  expected: z.number().nullable(),
  mirrored: z.number().nullable(),
  reason: z.string(),
  recordedAt: z.string(),
});

export const SourceStatusSchema = z.object({
  accountId: z.number().int(),
  account: z.string(),
  source: z.string(),
  key: z.string(),
  lastRunAt: isoTime.nullable(),
  /** incomplete: the source's listings disagree or part of it could not be reached or read (see gaps). */
  lastResult: z.enum(["ok", "degraded", "incomplete", "failed", "skipped"]).nullable(),
  lastError: z.string().nullable(),
  /** When the worker runs it next: its job scheduler's next run, else what the last run recorded. */
  nextRunAt: isoTime.nullable(),
  /** Its schedule from the settings (DVAULT_SCHEDULE_<SOURCE>): "every 6h" or "cron 0 * * * * (Europe/Berlin)". */
  schedule: z.string().optional(),
  items: z.object({ new: z.number().int(), changed: z.number().int(), removed: z.number().int() }),
  apiCalls: z.number().int(),
  /** Requests of the last run that waited for dvault's own pacer (not a refusal of the service). */
  paced: z.number().int(),
  /** Answers of the last run in which the service refused a request as too many (429, 503, a threshold error). */
  throttled: z.number().int(),
  /** Deprecated: the same number as `paced`, under the name it had before the words were told apart. */
  throttleWaits: z.number().int(),
  durationMs: z.number().int(),
  lastCompleteSweepAt: isoTime.nullable(),
  /** A full sweep started and has not completed: running now, or interrupted and resumed by the next run. */
  inProgress: z.boolean(),
  unavailableReason: z.string().nullable(),
  gaps: z.array(SourceGapStatusSchema),
});

export const QueueStatusSchema = z.object({
  name: z.enum(QUEUE_NAMES),
  paused: z.boolean(),
  waiting: z.number().int(),
  active: z.number().int(),
  delayed: z.number().int(),
  failed: z.number().int(),
  completed: z.number().int(),
  /** Age of the oldest job waiting to start (null when none waits). */
  oldestWaitingS: z.number().nullable(),
});

export const DOWNLOAD_STATUSES = ["wanted", "queued", "deferred_quota", "done", "degraded", "not_downloadable", "failed"] as const;

export const QuotaStatusSchema = z.object({
  accountId: z.number().int(),
  account: z.string(),
  /** Monday 00:00 UTC of the current service week. */
  weekStart: isoTime,
  used: z.number().int(),
  /** The week's allowance: configuredLimit, or what the service allowed when it refused before that (limitFrom). */
  limit: z.number().int(),
  limitFrom: z.enum(["configured", "service"]),
  /** The account's own allowance, else DVAULT_DOWNLOAD_QUOTA. */
  configuredLimit: z.number().int(),
  remaining: z.number().int(),
  exhaustedAt: isoTime.nullable(),
  /** What the service answered when it refused an original as if the week were spent (docs/service-behaviour.md#quota-as-500). */
  exhaustedReason: z.string().nullable(),
});

export const DownloadsStatusSchema = z.object({
  byStatus: z.record(z.string(), z.number().int()),
  total: z.number().int(),
  /** The operator's pause switch (`<prefix>:switch:downloads-paused`: src/coord/downloads-pause.ts). */
  paused: z.boolean(),
  /** Why, when the downloads worker said (e.g. free disk below DVAULT_MIN_FREE_BYTES). */
  pausedReason: z.string().nullable(),
  deferredByQuota: z.number().int(),
  /** When deferred downloads are next tried: the earliest next attempt, else the next service week. */
  nextWindowAt: isoTime.nullable(),
  /** Failed rows waiting for their retry (a transient fault); the rest of byStatus.failed is failed for good. */
  failedRetrying: z.number().int(),
  /** When the earliest of those is tried again; null when no failed row waits for a retry. */
  nextRetryAt: isoTime.nullable(),
  /**
   * Rows that wait for an account to log in again (needs_reauth or revoked): not tried until then, and not
   * counted in failedRetrying. `failed` of them are failed rows an earlier run recorded.
   */
  waitingForLogin: z.object({ rows: z.number().int(), failed: z.number().int() }),
  quota: z.array(QuotaStatusSchema),
  bytesStored: z.number().int(),
  /**
   * Due now, by the one definition `download --once` claims by (DownloadRepository.remainingDownloads), for the
   * accounts that can download: 0 is "done for now". `queued` of them are held by a queue (a worker's).
   */
  dueNow: z.number().int(),
  queued: z.number().int(),
});

export const ArchiveStatusSchema = z.object({
  dir: z.string(),
  /** Where the originals and thumbnails are kept: "local" (in `dir`) or "s3" (a bucket; `dir` holds partial files). */
  storage: z.enum(["local", "s3"]),
  /** The store in words: the directory, or s3://bucket/prefix at its endpoint's host. */
  store: z.string(),
  exists: z.boolean(),
  /** Bytes of the files the downloads table records as stored. */
  sizeBytes: z.number().int(),
  files: z.number().int(),
  freeBytes: z.number().int().nullable(),
  totalBytes: z.number().int().nullable(),
});

export const WorkerStatusSchema = z.object({
  id: z.string(),
  host: z.string(),
  pid: z.number().int().nullable(),
  lastBeatAt: isoTime.nullable(),
  ageS: z.number().nullable(),
  /** What it runs (DVAULT_WORKER_ROLES), from its holder lease (src/queue/holder.ts); empty when it does not say. */
  roles: z.array(z.string()),
});

/**
 * The engine that holds the queues, locks, heartbeats and the pace (DVAULT_ENGINE, src/config.ts), and the prefix
 * every key of this install starts with on it (Redis keys, or the keys of PostgreSQL alone's tables).
 */
export const EngineStatusSchema = z.object({
  name: z.enum(["redis", "postgres"]),
  prefix: z.string(),
  /**
   * Set when `dvault engine migrate` moved the install away from this engine (src/queue/holder.ts#noteMovedTo):
   * the engine it went to and when (null when the note has no readable time). What this report shows of queues, workers and the pace is then the old engine's.
   */
  movedTo: z.object({ to: z.string(), at: z.string().nullable() }).nullable(),
});

/** The key prefix in Redis this install settled on (src/queue/redis-prefix.ts). */
export const RedisKeysStatusSchema = z.object({
  prefix: z.string(),
  /** Whether it is a hash tag such as {dvault}, which Redis Cluster needs. */
  hashTagged: z.boolean(),
  /** Whether DVAULT_REDIS_PREFIX is unset and an older install's keys kept the prefix "dvault". */
  legacy: z.boolean(),
});

/** The API pace of one pacer key (client id + user, or "cdn"), as src/api/pacer.ts keeps it in Redis. */
export const PacingStatusSchema = z.object({
  key: z.string(),
  /** Requests per second the key is paced at now; null when it was never used. */
  rate: z.number().nullable(),
  /** The safe rate it learned, where its next run starts; null while nothing is learned. */
  learnedRate: z.number().nullable(),
  /** The rate of its last refusal; null when never refused. */
  refusedRate: z.number().nullable(),
  /** Until when it is held after a refusal; null when not held. */
  heldUntil: isoTime.nullable(),
  /** Time lost to throttling: the sum of its holds (seconds). */
  throttledS: z.number(),
});

/** Answers of the service dvault could not read and skipped (kept with their raw JSON in unreadable_responses). */
export const UnreadableStatusSchema = z.object({
  /** Distinct (request, item) pairs seen in the last 30 days. */
  count: z.number().int(),
  /** Of those, whole responses; the rest are single items of otherwise readable pages. */
  responses: z.number().int(),
  lastSeenAt: isoTime.nullable(),
  recent: z.array(z.object({ operation: z.string(), subject: z.string(), error: z.string(), count: z.number().int(), lastSeenAt: isoTime })),
});

/** One reason works are not archivable in full, with what it means and what the user can do (src/text/not-archivable.ts). */
export const NotArchivableReasonSchema = z.object({
  reason: z.enum(NOT_ARCHIVABLE_REASONS),
  count: z.number().int(),
  why: z.string(),
  action: z.string(),
});

/** One artist in one source (gallery, collections or a tracked artist) with works not archived in full. */
export const NotArchivableArtistSchema = z.object({
  account: z.string(),
  source: z.string(),
  key: z.string(),
  /** The artist's username (their userid while the mirror knows no name). */
  artist: z.string(),
  artistUserid: z.string().nullable(),
  total: z.number().int(),
  /** Nonzero counts only. */
  counts: z.array(z.object({ reason: z.enum(NOT_ARCHIVABLE_REASONS), count: z.number().int() })),
  /** hidden_mature: the profile's count and what the listings showed in the last sweep. */
  profileCount: z.number().int().nullable(),
  listed: z.number().int().nullable(),
});

/**
 * What the archive lists but could not archive in full, and why: locked (paid or watchers-only), partial,
 * and works a public token's listings did not show. Reasons and artists with a zero count are left out.
 */
export const NotArchivableSchema = z.object({
  /** Works under any reason: listed works once each (whatever the source), plus works no listing showed. */
  total: z.number().int(),
  byReason: z.array(NotArchivableReasonSchema),
  byArtist: z.array(NotArchivableArtistSchema),
});

/** Whether the database takes writes, as status's own session finds it (src/db/status.repository.ts#writeRefusal). */
export const DatabaseStatusSchema = z.object({
  /**
   * "standby" (in recovery) or "read-only" (default_transaction_read_only): nothing is archived and the worker's jobs
   * wait without spending attempts (src/queue/outage.ts); null when it takes writes, or could not be read (problems).
   */
  refusesWrites: z.enum(["standby", "read-only"]).nullable(),
});

export const StatusReportSchema = z.object({
  version: z.literal(STATUS_VERSION),
  generatedAt: isoTime,
  accounts: z.array(AccountStatusSchema),
  sources: z.array(SourceStatusSchema),
  queues: z.array(QueueStatusSchema),
  downloads: DownloadsStatusSchema,
  archive: ArchiveStatusSchema,
  workers: z.array(WorkerStatusSchema),
  /** Roles that take jobs (sync, downloads, digest, maintenance) that no live worker runs; empty while no worker runs, or one of a version before roles (which runs them all). */
  missingRoles: z.array(z.string()),
  engine: EngineStatusSchema,
  database: DatabaseStatusSchema,
  /** What Redis Cluster needs of the prefix, on the Redis engine; null on PostgreSQL alone, which has no Redis keys. */
  redis: RedisKeysStatusSchema.nullable(),
  unreadable: UnreadableStatusSchema,
  /** The API pace per pacer key (src/api/pacer.ts). */
  pacing: z.array(PacingStatusSchema),
  /** What could not be archived in full, and why (per reason and per artist). */
  notArchivable: NotArchivableSchema,
  /** Parts that could not be read (e.g. Redis down), in words; the rest of the report still stands. */
  problems: z.array(z.string()),
});

export type AccountStatusView = z.infer<typeof AccountStatusSchema>;
export type SourceStatusView = z.infer<typeof SourceStatusSchema>;
export type QueueStatusView = z.infer<typeof QueueStatusSchema>;
export type DownloadsStatusView = z.infer<typeof DownloadsStatusSchema>;
export type ArchiveStatusView = z.infer<typeof ArchiveStatusSchema>;
export type WorkerStatusView = z.infer<typeof WorkerStatusSchema>;
export type RedisKeysStatusView = z.infer<typeof RedisKeysStatusSchema>;
export type EngineStatusView = z.infer<typeof EngineStatusSchema>;
export type UnreadableStatusView = z.infer<typeof UnreadableStatusSchema>;
export type PacingStatusView = z.infer<typeof PacingStatusSchema>;
export type NotArchivableView = z.infer<typeof NotArchivableSchema>;
// The JSON form is the shape every renderer takes: a change to one that the other does not follow fails here.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const notArchivableShapesAgree: Same<NotArchivableView, NotArchivable> = true;
void notArchivableShapesAgree;
export type StatusReport = z.infer<typeof StatusReportSchema>;
