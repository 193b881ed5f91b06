// The settings of digests and alerts (DVAULT_DIGEST_*, DVAULT_SMTP_*, DVAULT_WEBHOOK_*, DVAULT_NTFY_*,
// DVAULT_DISCORD_*): the fragment of
// the environment schema that src/config.ts merges in, the checks across variables, and DigestConfig. It lives
// with the config (the foundation) so the config is parsed in one place and the digest only reads it
// (docs/ARCHITECTURE.md#what-each-folder-may-import).
import { createRequire } from "node:module";
import path from "node:path";
import type { CronExpressionParser } from "cron-parser";
import { z } from "zod";
import { isHttpUrl, isTimeZone, emptyAsUndefined } from "./fields.ts";

const require = createRequire(import.meta.url);

export const DIGEST_CHANNELS = ["smtp", "file", "webhook", "ntfy", "discord"] as const;
export type DigestChannel = (typeof DIGEST_CHANNELS)[number];

export type SmtpConfig = Readonly<{
  host: string;
  port: number;
  /** Implicit TLS (port 465). Otherwise STARTTLS when the server offers it, and required when a password is sent. */
  secure: boolean;
  user: string | undefined;
  pass: string | undefined;
  from: string;
  to: readonly string[];
}>;

export type WebhookConfig = Readonly<{ url: string; secret: string }>;

/** The topic's URL (https://ntfy.sh/<topic> or a self-hosted server's) and an optional access token. */
export type NtfyConfig = Readonly<{ url: string; token: string | undefined }>;

/** A Discord channel's webhook URL: /api/webhooks/<id>/<token>; the token in it is the secret. */
export type DiscordConfig = Readonly<{ webhookUrl: string }>;

/** Settings whose value may come from a file named by `<NAME>_FILE` (src/config/secret-files.ts). */
export const DIGEST_SECRET_FILES = ["DVAULT_NTFY_TOKEN", "DVAULT_DISCORD_WEBHOOK_URL"] as const;

export type DigestConfig = Readonly<{
  /** A 5-field cron expression (minute hour day month weekday). */
  cron: string;
  /** IANA time zone the cron expression is read in. */
  timezone: string;
  /** Where digests and alerts go; none means `dvault digest --preview` only. */
  channels: readonly DigestChannel[];
  /** The directory of the file channel. */
  dir: string;
  /** Send a digest even when its window brought nothing new and nothing needs attention. */
  sendEmpty: boolean;
  smtp: SmtpConfig | undefined;
  webhook: WebhookConfig | undefined;
  ntfy: NtfyConfig | undefined;
  discord: DiscordConfig | undefined;
  /** DVAULT_PUBLIC_URL without its trailing slash: where links in ntfy and Discord messages point. */
  publicUrl: string | undefined;
}>;

export const DEFAULT_DIGEST_CRON = "0 8 * * *";

const TRUE = ["1", "true", "yes", "on"];
const FALSE = ["0", "false", "no", "off"];

const bool = (fallback: boolean) =>
  z.preprocess(
    emptyAsUndefined,
    z
      .string()
      .transform((v) => v.trim().toLowerCase())
      .refine((v) => TRUE.includes(v) || FALSE.includes(v), { message: "expects true or false" })
      .transform((v) => TRUE.includes(v))
      .optional()
      .transform((v) => v ?? fallback),
  );

const list = (v: string | undefined) =>
  (v ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);

/**
 * node-cron fires the digest forward; cron-parser walks back to the tick before (src/digest/cron-time.ts). An
 * expression must read in both: node-cron refuses one no date satisfies (30 February), cron-parser one it cannot
 * walk (the nearest weekday, "15W").
 * Both (with luxon, about 100 ms to load) are loaded only to check an expression that is set: every command
 * parses the config, and most never read the schedule (docs/PERFORMANCE.md#start-up).
 */
function readsInBoth(expression: string): boolean {
  const forward = require("node-cron") as { validate(expression: string): boolean };
  if (!forward.validate(expression)) return false;
  const backward = require("cron-parser") as { CronExpressionParser: typeof CronExpressionParser };
  try {
    backward.CronExpressionParser.parse(expression);
    return true;
  } catch {
    return false;
  }
}

/** A topic is the URL's last path segment; ntfy allows letters, digits, _ and - (at most 64). */
const ntfyTopicOf = (v: string) => /^[A-Za-z0-9_-]{1,64}$/.exec(new URL(v).pathname.replace(/\/+$/, "").split("/").pop() ?? "")?.[0];

/** /api/webhooks/<id>/<token>, optionally with an API version (/api/v10/webhooks/...). */
export const DISCORD_WEBHOOK_PATH = /^\/api\/(?:v\d+\/)?webhooks\/(\d+)\/([A-Za-z0-9_-]+)\/?$/;

const EMAIL = /^[^\s@<>]+@[^\s@<>]+$/;
/** "dvault <me@example.org>" or "me@example.org". */
const isMailbox = (v: string) => EMAIL.test(v) || /^[^<>]*<[^\s@<>]+@[^\s@<>]+>$/.test(v.trim());

/** Merged into src/config.ts's EnvSchema. */
export const DIGEST_ENV = {
  DVAULT_DIGEST_CRON: z.preprocess(
    emptyAsUndefined,
    z
      .string()
      .refine((v) => v.trim().split(/\s+/).length === 5 && readsInBoth(v.trim()), {
        message: "expects a 5-field cron expression: minute hour day-of-month month day-of-week, such as 0 8 * * *",
      })
      .default(DEFAULT_DIGEST_CRON),
  ),
  DVAULT_DIGEST_TZ: z.preprocess(
    emptyAsUndefined,
    z.string().refine(isTimeZone, { message: "expects an IANA time zone such as UTC or Europe/Berlin" }).default("UTC"),
  ),
  DVAULT_DIGEST_CHANNELS: z.preprocess(
    emptyAsUndefined,
    z
      .string()
      .refine((v) => list(v).every((c) => (DIGEST_CHANNELS as readonly string[]).includes(c)), {
        message: `expects a comma-separated list of ${DIGEST_CHANNELS.join(", ")}`,
      })
      .optional(),
  ),
  DVAULT_DIGEST_DIR: z.preprocess(emptyAsUndefined, z.string().default("./digests")),
  DVAULT_DIGEST_SEND_EMPTY: bool(false),
  DVAULT_SMTP_HOST: z.preprocess(emptyAsUndefined, z.string().optional()),
  DVAULT_SMTP_PORT: z.preprocess(
    emptyAsUndefined,
    z.coerce
      .number({ message: "expects a port number" })
      .int()
      .min(1, { message: "expects a port number" })
      .max(65535, { message: "expects a port number" })
      .optional(),
  ),
  DVAULT_SMTP_SECURE: bool(false),
  DVAULT_SMTP_USER: z.preprocess(emptyAsUndefined, z.string().optional()),
  DVAULT_SMTP_PASS: z.preprocess(emptyAsUndefined, z.string().optional()),
  DVAULT_SMTP_FROM: z.preprocess(emptyAsUndefined, z.string().refine(isMailbox, { message: "expects an address such as dvault <me@example.org>" }).optional()),
  DVAULT_SMTP_TO: z.preprocess(
    emptyAsUndefined,
    z
      .string()
      .refine((v) => list(v).length > 0 && list(v).every(isMailbox), { message: "expects one or more comma-separated addresses" })
      .optional(),
  ),
  DVAULT_WEBHOOK_URL: z.preprocess(emptyAsUndefined, z.string().refine(isHttpUrl, { message: "expects an http:// or https:// URL" }).optional()),
  DVAULT_WEBHOOK_SECRET: z.preprocess(
    emptyAsUndefined,
    z.string().min(16, { message: "expects a secret of at least 16 characters (openssl rand -hex 32)" }).optional(),
  ),
  DVAULT_NTFY_URL: z.preprocess(
    emptyAsUndefined,
    z
      .string()
      .refine((v) => isHttpUrl(v) && ntfyTopicOf(v) !== undefined, {
        message: "expects the topic's URL, such as https://ntfy.sh/my-dvault-topic (letters, digits, _ and - in the topic)",
      })
      .optional(),
  ),
  DVAULT_NTFY_TOKEN: z.preprocess(emptyAsUndefined, z.string().min(1).optional()),
  DVAULT_DISCORD_WEBHOOK_URL: z.preprocess(
    emptyAsUndefined,
    z
      .string()
      .refine((v) => isHttpUrl(v) && DISCORD_WEBHOOK_PATH.test(new URL(v).pathname), {
        message: "expects the webhook URL Discord shows (channel settings, Integrations, Webhooks): https://discord.com/api/webhooks/<id>/<token>",
      })
      .optional(),
  ),
};

type DigestEnvShape = typeof DIGEST_ENV;
export type DigestEnv = z.output<z.ZodObject<DigestEnvShape>>;

/** Problems across variables: a channel without what it needs. Empty when the settings fit together. */
export function digestEnvProblems(e: DigestEnv): string[] {
  const channels = list(e.DVAULT_DIGEST_CHANNELS);
  const problems: string[] = [];
  if (channels.includes("smtp")) {
    const missing = (["DVAULT_SMTP_HOST", "DVAULT_SMTP_FROM", "DVAULT_SMTP_TO"] as const).filter((k) => !e[k]);
    if (missing.length) problems.push(`${missing.join(", ")} must be set when DVAULT_DIGEST_CHANNELS includes smtp`);
    if (e.DVAULT_SMTP_USER && !e.DVAULT_SMTP_PASS) problems.push("DVAULT_SMTP_PASS must be set with DVAULT_SMTP_USER");
  }
  if (channels.includes("webhook")) {
    const missing = (["DVAULT_WEBHOOK_URL", "DVAULT_WEBHOOK_SECRET"] as const).filter((k) => !e[k]);
    if (missing.length) problems.push(`${missing.join(", ")} must be set when DVAULT_DIGEST_CHANNELS includes webhook`);
  }
  if (channels.includes("ntfy") && !e.DVAULT_NTFY_URL) problems.push("DVAULT_NTFY_URL must be set when DVAULT_DIGEST_CHANNELS includes ntfy");
  if (channels.includes("discord") && !e.DVAULT_DISCORD_WEBHOOK_URL) {
    problems.push("DVAULT_DISCORD_WEBHOOK_URL (or DVAULT_DISCORD_WEBHOOK_URL_FILE) must be set when DVAULT_DIGEST_CHANNELS includes discord");
  }
  return problems;
}

export function digestConfigFrom(e: DigestEnv & { DVAULT_PUBLIC_URL?: string | undefined }, cwd: string): DigestConfig {
  const channels = [...new Set(list(e.DVAULT_DIGEST_CHANNELS))] as DigestChannel[];
  const smtp: SmtpConfig | undefined =
    e.DVAULT_SMTP_HOST && e.DVAULT_SMTP_FROM && e.DVAULT_SMTP_TO
      ? Object.freeze({
          host: e.DVAULT_SMTP_HOST,
          port: e.DVAULT_SMTP_PORT ?? (e.DVAULT_SMTP_SECURE ? 465 : 587),
          secure: e.DVAULT_SMTP_SECURE,
          user: e.DVAULT_SMTP_USER,
          pass: e.DVAULT_SMTP_PASS,
          from: e.DVAULT_SMTP_FROM,
          to: Object.freeze(list(e.DVAULT_SMTP_TO)),
        })
      : undefined;
  const webhook: WebhookConfig | undefined =
    e.DVAULT_WEBHOOK_URL && e.DVAULT_WEBHOOK_SECRET ? Object.freeze({ url: e.DVAULT_WEBHOOK_URL, secret: e.DVAULT_WEBHOOK_SECRET }) : undefined;
  return Object.freeze({
    cron: e.DVAULT_DIGEST_CRON.trim(),
    timezone: e.DVAULT_DIGEST_TZ,
    channels: Object.freeze(channels),
    dir: path.resolve(cwd, e.DVAULT_DIGEST_DIR),
    sendEmpty: e.DVAULT_DIGEST_SEND_EMPTY,
    smtp,
    webhook,
    ntfy: e.DVAULT_NTFY_URL ? Object.freeze({ url: e.DVAULT_NTFY_URL, token: e.DVAULT_NTFY_TOKEN }) : undefined,
    discord: e.DVAULT_DISCORD_WEBHOOK_URL ? Object.freeze({ webhookUrl: e.DVAULT_DISCORD_WEBHOOK_URL }) : undefined,
    publicUrl: e.DVAULT_PUBLIC_URL?.replace(/\/+$/, ""),
  });
}
