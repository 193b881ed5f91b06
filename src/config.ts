// Parses the environment once into a frozen, typed Config. Nothing else in dvault reads process.env.
import os from "node:os";
import path from "node:path";
import { z } from "zod";
import {
  DEFAULT_API_BASE,
  DEFAULT_DATABASE_URL,
  DEFAULT_REDIRECT_URI,
  DEFAULT_REDIS_URL,
} from "./config-defaults.ts";
import { UserError } from "./errors.ts";

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
    { message: `expects ${what} (${protocols.map((p) => p + "//").join(" or ")}...)` },
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

const emptyAsUndefined = (v: unknown) => (v === "" ? undefined : v);

const EnvSchema = z.object({
  DATABASE_URL: z.preprocess(
    emptyAsUndefined,
    urlWithProtocols(["postgresql:", "postgres:"], "a PostgreSQL URL").default(DEFAULT_DATABASE_URL),
  ),
  REDIS_URL: z.preprocess(
    emptyAsUndefined,
    urlWithProtocols(["redis:", "rediss:"], "a Redis URL").default(DEFAULT_REDIS_URL),
  ),
  DVAULT_API_BASE: z.preprocess(
    emptyAsUndefined,
    urlWithProtocols(["http:", "https:"], "the service's base URL").default(DEFAULT_API_BASE),
  ),
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
  DVAULT_SECRET_KEY: z.preprocess(
    emptyAsUndefined,
    z
      .string()
      .refine((v) => parseSecretKey(v) !== undefined, {
        message: "expects 32 bytes as 64 hex digits or base64 (generate one with: openssl rand -hex 32)",
      })
      .optional(),
  ),
  DVAULT_REDIS_PREFIX: z.preprocess(
    emptyAsUndefined,
    z.string().regex(/^[A-Za-z0-9_.:-]+$/, { message: "expects letters, digits, _ . : -" }).default("dvault"),
  ),
  LOG_LEVEL: z.preprocess(
    (v) => (typeof v === "string" && v !== "" ? v.toLowerCase() : undefined),
    z.enum(LOG_LEVELS, { message: `expects one of ${LOG_LEVELS.join(", ")}` }).default("info"),
  ),
});

export type LogLevel = (typeof LOG_LEVELS)[number];

export type Config = Readonly<{
  databaseUrl: string;
  redisUrl: string;
  apiBase: string;
  clientId: string | undefined;
  clientSecret: string | undefined;
  redirectUri: string;
  /** The app's OAuth version when known: "2.1" refuses the implicit grant up front. */
  oauthVersion: "2.0" | "2.1" | undefined;
  archiveDir: string;
  configDir: string;
  /** Explicit key from DVAULT_SECRET_KEY; when absent the key file in configDir is used. */
  secretKey: Buffer | undefined;
  redisPrefix: string;
  logLevel: LogLevel;
}>;

export class ConfigError extends UserError {
  constructor(readonly problems: string[]) {
    super(`invalid configuration: ${problems.join("; ")}. Fix these variables (see .env.example) and run again.`);
    this.name = "ConfigError";
  }
}

type Env = Record<string, string | undefined>;

export function loadConfig(env: Env = process.env, cwd: string = process.cwd()): Config {
  const parsed = EnvSchema.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => `${issue.path.join(".")} ${issue.message}`);
    throw new ConfigError(problems);
  }
  const e = parsed.data;
  const configHome = env.XDG_CONFIG_HOME || path.join(env.HOME || os.homedir(), ".config");
  return Object.freeze({
    databaseUrl: e.DATABASE_URL,
    redisUrl: e.REDIS_URL,
    apiBase: e.DVAULT_API_BASE.replace(/\/+$/, ""),
    clientId: e.DVAULT_CLIENT_ID,
    clientSecret: e.DVAULT_CLIENT_SECRET,
    redirectUri: e.DVAULT_REDIRECT_URI,
    oauthVersion: e.DVAULT_OAUTH_VERSION,
    archiveDir: path.resolve(cwd, e.DVAULT_ARCHIVE_DIR),
    configDir: path.resolve(cwd, e.DVAULT_CONFIG_DIR ?? path.join(configHome, "dvault")),
    secretKey: e.DVAULT_SECRET_KEY === undefined ? undefined : parseSecretKey(e.DVAULT_SECRET_KEY),
    redisPrefix: e.DVAULT_REDIS_PREFIX,
    logLevel: e.LOG_LEVEL,
  });
}
