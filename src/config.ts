// Parses the environment once into a frozen, typed Config. Nothing else in dvault reads process.env.
import os from "node:os";
import path from "node:path";
import { z } from "zod";
import { DEFAULT_API_BASE, DEFAULT_API_RATE, DEFAULT_DATABASE_URL, DEFAULT_REDIRECT_URI, DEFAULT_REDIS_URL } from "./config-defaults.ts";
import { DIGEST_ENV, DIGEST_SECRET_FILES, digestConfigFrom, digestEnvProblems, type DigestConfig } from "./config/digest.ts";
import { durationSetting, parseDuration, redisDbIndexProblem, emptyAsUndefined, wholeNumber } from "./config/fields.ts";
import { SCHEDULE_ENV, type Schedules, schedulesFrom } from "./config/schedules.ts";
import { HTTP_LOAD_ENV, type HttpLoadConfig, httpLoadFrom } from "./config/http-load.ts";
import { readSecretFiles } from "./config/secret-files.ts";
import { STORAGE_ENV, STORAGE_SECRET_FILES, type StorageConfig, storageConfigFrom } from "./config/storage.ts";
import { UserError } from "./errors.ts";
import { WORKER_ENV, workerRolesFrom, type WorkerRole } from "./config/worker-roles.ts";

const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;

const urlWithProtocols = (protocols: string[], what: string) =>
  z.string().refine(
    (v) => {
      try {
        return protocols.includes(new URL(v).protocol);
      } catch {
        return false;
      }
    },
    { message: `expects ${what} (${protocols.map((p) => `${p}//`).join(" or ")}...)` },
  );

/** A 32-byte key written as 64 hex digits or as base64. */
export function parseSecretKey(raw: string): Buffer | undefined {
  const trimmed = raw.trim();
  if (/^[0-9a-fA-F]{64}$/.test(trimmed)) return Buffer.from(trimmed, "hex");
  if (/^[A-Za-z0-9+/_-]+={0,2}$/.test(trimmed)) {
    const buf = Buffer.from(trimmed, "base64");
    if (buf.length === 32) return buf;
  }
  return undefined;
}

/** The prefix when DVAULT_REDIS_PREFIX is unset: a hash tag, so every key of one install lands in one Redis Cluster slot. */
export const DEFAULT_REDIS_PREFIX = "{dvault}";

/** Requests per second: a positive number (fractions allowed, 0.5 = one call every 2 s). */
const apiRate = (fallback: number) =>
  z.preprocess(emptyAsUndefined, z.coerce.number().positive({ message: "expects requests per second, a positive number such as 2 or 0.5" }).default(fallback));

/** The settings' schema: the environment's and the settings file's variables (their documentation: src/config/catalogue.ts). */
export const EnvSchema = z.object({
  // "embedded": a PostgreSQL server dvault runs itself, with its data under DVAULT_DATA_DIR (src/db/embedded/).
  DATABASE_URL: z.preprocess(
    emptyAsUndefined,
    z
      .literal("embedded")
      .or(urlWithProtocols(["postgresql:", "postgres:"], 'a PostgreSQL URL or "embedded"'))
      .default(DEFAULT_DATABASE_URL),
  ),
  // Where queues, locks and the shared pace live (src/coord/): Redis (the default, so that an install never
  // switches by itself) or PostgreSQL alone, in the mirror's database.
  DVAULT_ENGINE: z.preprocess(
    emptyAsUndefined,
    z.enum(["redis", "postgres"], { message: "expects redis or postgres (where queues, locks and the shared pace live)" }).default("redis"),
  ),
  DVAULT_DATA_DIR: z.preprocess(emptyAsUndefined, z.string().min(1).optional()),
  // redis+cluster:// names one node of a Redis Cluster (src/queue/redis.ts).
  REDIS_URL: z.preprocess(
    emptyAsUndefined,
    urlWithProtocols(["redis:", "rediss:", "redis+cluster:", "rediss+cluster:"], "a Redis URL")
      .superRefine((v, ctx) => {
        const problem = redisDbIndexProblem(v);
        if (problem) ctx.addIssue({ code: "custom", message: problem });
      })
      .default(DEFAULT_REDIS_URL),
  ),
  DVAULT_API_BASE: z.preprocess(emptyAsUndefined, urlWithProtocols(["http:", "https:"], "the service's base URL").default(DEFAULT_API_BASE)),
  DVAULT_CLIENT_ID: z.preprocess(
    emptyAsUndefined,
    z.string().regex(/^\d+$/, { message: "expects the numeric client_id from the service's applications page" }).optional(),
  ),
  DVAULT_CLIENT_SECRET: z.preprocess(emptyAsUndefined, z.string().min(1).optional()),
  DVAULT_REDIRECT_URI: z.preprocess(
    emptyAsUndefined,
    urlWithProtocols(["http:", "https:"], "the redirect URI registered with your app").default(DEFAULT_REDIRECT_URI),
  ),
  DVAULT_OAUTH_VERSION: z.preprocess(emptyAsUndefined, z.enum(["2.0", "2.1"], { message: "expects 2.0 or 2.1 (the OAuth version of your app)" }).optional()),
  DVAULT_ARCHIVE_DIR: z.preprocess(emptyAsUndefined, z.string().min(1).default("./archive")),
  DVAULT_CONFIG_DIR: z.preprocess(emptyAsUndefined, z.string().min(1).optional()),
  // ---- where originals and thumbnails are kept: DVAULT_STORAGE, DVAULT_S3_* ----
  ...STORAGE_ENV,
  DVAULT_SECRET_KEY: z.preprocess(
    emptyAsUndefined,
    z
      .string()
      .refine((v) => parseSecretKey(v) !== undefined, {
        message: "expects 32 bytes as 64 hex digits or base64 (generate one with: openssl rand -hex 32)",
      })
      .optional(),
  ),
  // Unset: "{dvault}", a Redis Cluster hash tag (src/queue/redis-prefix.ts), or "dvault" where an older install keeps its keys.
  DVAULT_REDIS_PREFIX: z.preprocess(
    emptyAsUndefined,
    z
      .string()
      .regex(/^(\{[A-Za-z0-9_.:-]+\}|[A-Za-z0-9_.:-]+)[A-Za-z0-9_.:-]*$/, {
        message: "expects letters, digits, _ . : - (optionally starting with a {hash tag} for Redis Cluster, e.g. {dvault})",
      })
      .optional(),
  ),
  // ---- worker roles: DVAULT_WORKER_ROLES, DVAULT_SYNC_CONCURRENCY ----
  ...WORKER_ENV,
  // ---- downloads ----
  DVAULT_DOWNLOAD_QUOTA: z.preprocess(
    emptyAsUndefined,
    z.coerce.number().int().min(0, { message: "expects a whole number >= 0 (original downloads per account per week)" }).default(10),
  ),
  DVAULT_DOWNLOAD_CONCURRENCY: wholeNumber(1, 64, "expects 1 to 64 parallel transfers", 4),
  DVAULT_DOWNLOAD_CLAIM_BATCH: wholeNumber(1, 100_000, "expects 1 to 100000 rows per claim", 500),
  DVAULT_MIN_FREE_BYTES: z.preprocess(
    emptyAsUndefined,
    z
      .string()
      .refine((v) => parseByteSize(v) !== undefined, { message: "expects a size such as 2147483648, 2GiB or 500MB" })
      .default("2GiB"),
  ),
  DVAULT_DOWNLOAD_PRIORITY: z.preprocess(
    emptyAsUndefined,
    z
      .string()
      .regex(/^\s*(gallery|collections|tracked|other)(\s*,\s*(gallery|collections|tracked|other))*\s*$/, {
        message: "expects a comma-separated order of gallery, collections, tracked, other",
      })
      .default("gallery,collections,tracked"),
  ),
  // ---- how long a --once run keeps trying what fails for a passing reason (src/queue/run-patience.ts) ----
  DVAULT_RUN_ITEM_PATIENCE: durationSetting("5min"),
  DVAULT_RUN_PATIENCE: durationSetting("10min"),
  DVAULT_RUN_RETRY_DELAY: durationSetting("2s"),
  // ---- the sources' schedules: DVAULT_SCHEDULE_<SOURCE>, DVAULT_SCHEDULE_TZ ----
  ...SCHEDULE_ENV,
  // ---- digests and alerts: DVAULT_DIGEST_*, DVAULT_SMTP_*, DVAULT_WEBHOOK_* ----
  ...DIGEST_ENV,
  // ---- dashboard ----
  DVAULT_HTTP_HOST: z.preprocess(
    emptyAsUndefined,
    z
      .string()
      .regex(/^[A-Za-z0-9.:[\]-]+$/, { message: "expects an address such as 127.0.0.1, 0.0.0.0 or ::1" })
      .default("127.0.0.1"),
  ),
  DVAULT_HTTP_PORT: wholeNumber(0, 65535, "expects a port from 0 to 65535", 8787),
  DVAULT_HTTP_TOKEN: z.preprocess(
    emptyAsUndefined,
    z.string().min(16, { message: "expects at least 16 characters (generate one with: openssl rand -hex 32)" }).optional(),
  ),
  DVAULT_PUBLIC_URL: z.preprocess(emptyAsUndefined, urlWithProtocols(["http:", "https:"], "the address people use to reach the dashboard").optional()),
  DVAULT_HTTP_ALLOWED_HOSTS: z.preprocess(
    emptyAsUndefined,
    z
      .string()
      .regex(/^\s*[A-Za-z0-9.:[\]-]+(\s*,\s*[A-Za-z0-9.:[\]-]+)*\s*$/, { message: "expects comma-separated host names, e.g. nas.local,archive.example.org" })
      .optional(),
  ),
  // ---- the dashboard under load and the database pool: DVAULT_HTTP_CONCURRENCY, _QUEUE, _QUEUE_WAIT, DVAULT_DB_POOL_SIZE ----
  ...HTTP_LOAD_ENV,
  // ---- a hostile or broken service (docs/RELIABILITY.md) ----
  DVAULT_API_MAX_BODY: z.preprocess(
    emptyAsUndefined,
    z
      .string()
      .refine((v) => (parseByteSize(v) ?? 0) >= 1024, { message: "expects a size of at least 1KiB such as 32MiB" })
      .default("32MiB"),
  ),
  DVAULT_RENDITION_MAX_BYTES: z.preprocess(
    emptyAsUndefined,
    z
      .string()
      .refine((v) => (parseByteSize(v) ?? 0) >= 1024, { message: "expects a size of at least 1KiB such as 512MiB" })
      .default("512MiB"),
  ),
  DVAULT_MIN_THROUGHPUT: z.preprocess(
    emptyAsUndefined,
    z
      .string()
      .refine((v) => parseByteSize(v) !== undefined, { message: "expects bytes per second such as 20KiB (0 turns the floor off)" })
      .default("20KiB"),
  ),
  // ---- the API pace (src/api/pacer.ts) ----
  DVAULT_API_RATE_START: apiRate(DEFAULT_API_RATE.start),
  DVAULT_API_RATE_MIN: apiRate(DEFAULT_API_RATE.min),
  DVAULT_API_RATE_MAX: apiRate(DEFAULT_API_RATE.max),
  DVAULT_CDN_HOSTS: z.preprocess(
    emptyAsUndefined,
    z
      .string()
      .regex(/^\s*[A-Za-z0-9.*-]+(\s*,\s*[A-Za-z0-9.*-]+)*\s*$/, { message: "expects comma-separated host names, *.example.net allowed" })
      .default("*.wixmp.com,*.deviantart.net,*.deviantart.com"),
  ),
  LOG_LEVEL: z.preprocess(
    (v) => (typeof v === "string" && v !== "" ? v.toLowerCase() : undefined),
    z.enum(LOG_LEVELS, { message: `expects one of ${LOG_LEVELS.join(", ")}` }).default("info"),
  ),
});

export type LogLevel = (typeof LOG_LEVELS)[number];
export { parseDuration };

export type Engine = "redis" | "postgres";

export type Config = Readonly<{
  /** A PostgreSQL URL; "embedded" until src/db/embedded/ has started the embedded server and put its URL here. */
  databaseUrl: string;
  /** Where queues, locks and the shared pace live (DVAULT_ENGINE); never switched implicitly. */
  engine: Engine;
  /** dvault's own data (the embedded server's folder): DVAULT_DATA_DIR, else $XDG_DATA_HOME/dvault or ~/.local/share/dvault. */
  dataDir: string;
  redisUrl: string;
  apiBase: string;
  clientId: string | undefined;
  clientSecret: string | undefined;
  redirectUri: string;
  /** The app's OAuth version when known: "2.1" refuses the implicit grant up front. */
  oauthVersion: "2.0" | "2.1" | undefined;
  archiveDir: string;
  /**
   * Where originals and thumbnails are kept: the archive folder, or an S3-compatible bucket (src/config/storage.ts,
   * src/storage/store.ts). archiveDir holds this machine's partial files either way.
   */
  storage: StorageConfig;
  configDir: string;
  /** Explicit key from DVAULT_SECRET_KEY; when absent the key file in configDir is used. */
  secretKey: Buffer | undefined;
  /** The key prefix in Redis as configured, or "{dvault}" when unset; createServices settles it (src/queue/redis-prefix.ts). */
  redisPrefix: string;
  /** Whether DVAULT_REDIS_PREFIX was set: an unset prefix may stay on an older install's "dvault". */
  redisPrefixSet: boolean;
  /** What this worker process does (DVAULT_WORKER_ROLES); `dvault worker --http` adds http. */
  workerRoles: readonly WorkerRole[];
  /** Sources synced at once by one worker (DVAULT_SYNC_CONCURRENCY). */
  syncConcurrency: number;
  logLevel: LogLevel;
  /** Each source's schedule, for every account and per account (DVAULT_SCHEDULE_*, src/config/schedules.ts). */
  schedules: Schedules;
  /** Digests and alerts: schedule, channels, SMTP and webhook settings (src/config/digest.ts). */
  digest: DigestConfig;
  /** Original downloads per account per service week, unless the account has its own allowance. */
  downloadQuota: number;
  downloadConcurrency: number;
  /**
   * Rows `download --once` claims at a time (DVAULT_DOWNLOAD_CLAIM_BATCH): a unit of claiming, never a ceiling of
   * the run, which claims batch after batch until nothing is due (src/downloads/run-once.ts).
   */
  downloadClaimBatch: number;
  /** Downloads pause below this much free space in the archive's filesystem. */
  minFreeBytes: number;
  /** Which wanted originals spend the allowance first (then newest first). */
  downloadPriority: readonly DownloadPriorityClass[];
  /** The dashboard (`dvault worker --http`): address, port, and the token any non-loopback address requires. */
  httpHost: string;
  httpPort: number;
  httpToken: string | undefined;
  /** The address people use to reach the dashboard (absolute links in digests and feeds; an allowed Host). */
  publicUrl: string | undefined;
  /** Host names the dashboard answers besides loopback names, the bind address and publicUrl's host. */
  httpAllowedHosts: readonly string[];
  /** The dashboard under load (DVAULT_HTTP_CONCURRENCY, _QUEUE, _QUEUE_WAIT) and DVAULT_DB_POOL_SIZE (src/config/http-load.ts). */
  httpLoad: HttpLoadConfig["httpLoad"];
  dbPoolSize: number;
  /** The largest API answer read (bytes), enforced while it streams. */
  apiMaxBody: number;
  /** The largest file without an announced size (free renditions), enforced while it streams. */
  renditionMaxBytes: number;
  /** Transfers slower than this (bytes per second, over a 30 s window after a 10 s grace) are aborted; 0 = off. */
  minThroughput: number;
  /** How long a `--once` run keeps trying what fails for a passing reason (src/queue/run-patience.ts). */
  runPatience: Readonly<{ itemMs: number; runMs: number; baseMs: number }>;
  /**
   * The API pace per client and user, in requests per second: where a key that learned nothing starts, and
   * the bounds it adapts within (src/api/pacer.ts).
   */
  apiRate: Readonly<{ start: number; min: number; max: number }>;
  /** Hosts a file download may be redirected to (the service's CDN family); `*.` matches any subdomain. */
  cdnHosts: readonly string[];
}>;

export type DownloadPriorityClass = "gallery" | "collections" | "tracked" | "other";

const BYTE_UNITS: Record<string, number> = {
  "": 1,
  b: 1,
  k: 1e3,
  kb: 1e3,
  m: 1e6,
  mb: 1e6,
  g: 1e9,
  gb: 1e9,
  t: 1e12,
  tb: 1e12,
  kib: 2 ** 10,
  mib: 2 ** 20,
  gib: 2 ** 30,
  tib: 2 ** 40,
};

/** "2147483648", "2GiB", "500 MB" → bytes; undefined when unreadable. */
export function parseByteSize(raw: string): number | undefined {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(raw);
  const unit = m ? BYTE_UNITS[(m[2] ?? "").toLowerCase()] : undefined;
  if (!m || unit === undefined) return undefined;
  return Math.round(Number(m[1]) * unit);
}

function listOf(raw: string): string[] {
  return [
    ...new Set(
      raw
        .split(",")
        .map((s) => s.trim().toLowerCase())
        .filter(Boolean),
    ),
  ];
}

export class ConfigError extends UserError {
  constructor(readonly problems: string[]) {
    super(`invalid configuration: ${problems.join("; ")}. Fix these settings (dvault config --template describes each) and run again.`);
    this.name = "ConfigError";
  }
}

type Env = Record<string, string | undefined>;

/**
 * zod's own words for a number that is not one ("Invalid input: expected number, received NaN") say nothing
 * to a person who typed "ten": say what was given and what is expected.
 */
function readableIssue(issue: z.core.$ZodIssue, given: string | undefined): string {
  if (issue.code === "invalid_type" && (issue.expected === "number" || issue.expected === "int")) {
    return `expects ${issue.expected === "int" ? "a whole number" : "a number"}, not ${JSON.stringify(given ?? "")}`;
  }
  return issue.message;
}

export function loadConfig(given: Env = process.env, cwd: string = process.cwd()): Config {
  const files = readSecretFiles(given, [...DIGEST_SECRET_FILES, ...STORAGE_SECRET_FILES]);
  if (files.problems.length) throw new ConfigError(files.problems);
  const env = files.env;
  const parsed = EnvSchema.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => `${issue.path.join(".")} ${readableIssue(issue, env[String(issue.path[0])])}`);
    throw new ConfigError(problems);
  }
  const e = parsed.data;
  if (e.DVAULT_API_RATE_MIN > e.DVAULT_API_RATE_MAX) throw new ConfigError(["DVAULT_API_RATE_MIN is above DVAULT_API_RATE_MAX"]);
  if (e.DVAULT_API_RATE_START < e.DVAULT_API_RATE_MIN || e.DVAULT_API_RATE_START > e.DVAULT_API_RATE_MAX) {
    throw new ConfigError(["DVAULT_API_RATE_START lies outside DVAULT_API_RATE_MIN..DVAULT_API_RATE_MAX"]);
  }
  const { schedules, problems: scheduleProblems } = schedulesFrom(e);
  if (scheduleProblems.length) throw new ConfigError(scheduleProblems);
  const digestProblems = digestEnvProblems(e);
  if (digestProblems.length) throw new ConfigError(digestProblems);
  const { storage, problems: storageProblems } = storageConfigFrom(e);
  if (storageProblems.length) throw new ConfigError(storageProblems);
  const configHome = env.XDG_CONFIG_HOME || path.join(env.HOME || os.homedir(), ".config");
  const dataHome = env.XDG_DATA_HOME || path.join(env.HOME || os.homedir(), ".local", "share");
  return Object.freeze({
    databaseUrl: e.DATABASE_URL,
    engine: e.DVAULT_ENGINE,
    dataDir: path.resolve(cwd, e.DVAULT_DATA_DIR ?? path.join(dataHome, "dvault")),
    redisUrl: e.REDIS_URL,
    apiBase: e.DVAULT_API_BASE.replace(/\/+$/, ""),
    clientId: e.DVAULT_CLIENT_ID,
    clientSecret: e.DVAULT_CLIENT_SECRET,
    redirectUri: e.DVAULT_REDIRECT_URI,
    oauthVersion: e.DVAULT_OAUTH_VERSION,
    archiveDir: path.resolve(cwd, e.DVAULT_ARCHIVE_DIR),
    storage,
    configDir: path.resolve(cwd, e.DVAULT_CONFIG_DIR ?? path.join(configHome, "dvault")),
    secretKey: e.DVAULT_SECRET_KEY === undefined ? undefined : parseSecretKey(e.DVAULT_SECRET_KEY),
    redisPrefix: e.DVAULT_REDIS_PREFIX ?? DEFAULT_REDIS_PREFIX,
    redisPrefixSet: e.DVAULT_REDIS_PREFIX !== undefined,
    workerRoles: workerRolesFrom(e.DVAULT_WORKER_ROLES),
    syncConcurrency: e.DVAULT_SYNC_CONCURRENCY,
    logLevel: e.LOG_LEVEL,
    schedules,
    digest: digestConfigFrom(e, cwd),
    downloadQuota: e.DVAULT_DOWNLOAD_QUOTA,
    downloadConcurrency: e.DVAULT_DOWNLOAD_CONCURRENCY,
    downloadClaimBatch: e.DVAULT_DOWNLOAD_CLAIM_BATCH,
    minFreeBytes: parseByteSize(e.DVAULT_MIN_FREE_BYTES) ?? 2 ** 31,
    downloadPriority: [...new Set(e.DVAULT_DOWNLOAD_PRIORITY.split(",").map((s) => s.trim() as DownloadPriorityClass))],
    httpHost: e.DVAULT_HTTP_HOST,
    httpPort: e.DVAULT_HTTP_PORT,
    httpToken: e.DVAULT_HTTP_TOKEN,
    publicUrl: e.DVAULT_PUBLIC_URL?.replace(/\/+$/, ""),
    httpAllowedHosts: e.DVAULT_HTTP_ALLOWED_HOSTS ? listOf(e.DVAULT_HTTP_ALLOWED_HOSTS) : [],
    ...httpLoadFrom(e),
    apiMaxBody: parseByteSize(e.DVAULT_API_MAX_BODY) ?? 32 * 2 ** 20,
    renditionMaxBytes: parseByteSize(e.DVAULT_RENDITION_MAX_BYTES) ?? 512 * 2 ** 20,
    minThroughput: parseByteSize(e.DVAULT_MIN_THROUGHPUT) ?? 20 * 1024,
    cdnHosts: listOf(e.DVAULT_CDN_HOSTS),
    runPatience: Object.freeze({
      itemMs: parseDuration(e.DVAULT_RUN_ITEM_PATIENCE) ?? 300_000,
      runMs: parseDuration(e.DVAULT_RUN_PATIENCE) ?? 600_000,
      baseMs: parseDuration(e.DVAULT_RUN_RETRY_DELAY) ?? 2000,
    }),
    apiRate: Object.freeze({ start: e.DVAULT_API_RATE_START, min: e.DVAULT_API_RATE_MIN, max: e.DVAULT_API_RATE_MAX }),
  });
}

/**
 * The configuration as if DVAULT_STORAGE were `kind`: `dvault storage migrate` opens the local folder and the
 * bucket at once, whichever of them this process is set to use.
 */
export function loadConfigForStorage(kind: "local" | "s3", env: Env = process.env, cwd: string = process.cwd()): Config {
  return loadConfig({ ...env, DVAULT_STORAGE: kind }, cwd);
}
