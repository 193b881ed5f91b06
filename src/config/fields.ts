// Pieces of the environment schema that more than one of the config's fragments use (src/config/*.ts).
import { z } from "zod";

/**
 * An empty or blank variable counts as unset, in every setting: docker compose's `X: ${X:-}` passes an empty one, and
 * `dvault config` shows a blank one as its default (catalogue.ts), which it then must be: z.coerce.number() reads " "
 * as 0 (a weekly allowance of 0, the dashboard on a random port).
 */
export const emptyAsUndefined = (v: unknown) => (typeof v === "string" && v.trim() === "" ? undefined : v);

/** A whole number from `min` to `max` (unset: `fallback`); `message` says the range for any value outside it. */
export const wholeNumber = (min: number, max: number, message: string, fallback: number) =>
  z.preprocess(emptyAsUndefined, z.coerce.number().int().min(min, { message }).max(max, { message }).default(fallback));

export function isHttpUrl(v: string): boolean {
  try {
    return ["http:", "https:"].includes(new URL(v).protocol);
  } catch {
    return false;
  }
}

/** An optional http:// or https:// URL (empty counts as unset); `message` says what is expected. */
export function optionalHttpUrl(message: string) {
  return z.preprocess(emptyAsUndefined, z.string().refine(isHttpUrl, { message }).optional());
}

const DURATION_UNITS: Record<string, number> = { "": 1000, ms: 1, s: 1000, sec: 1000, m: 60_000, min: 60_000, h: 3_600_000, d: 86_400_000 };

/** "90s", "5min", "1h", "1d", "500ms", "30" (seconds) → ms; undefined when unreadable. */
export function parseDuration(raw: string): number | undefined {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(raw);
  const unit = m ? DURATION_UNITS[(m[2] ?? "").toLowerCase()] : undefined;
  if (!m || unit === undefined) return undefined;
  return Math.round(Number(m[1]) * unit);
}

/** A duration such as 90s, 5min, 1h or 500ms (a bare number is seconds). */
export function durationSetting(fallback: string) {
  return z.preprocess(
    emptyAsUndefined,
    z
      .string()
      .refine((v) => parseDuration(v) !== undefined, { message: "expects a duration such as 500ms, 30s, 5min or 1h" })
      .default(fallback),
  );
}

/**
 * The database index a redis:// URL names (its path, "/3"), or a reason it names none dvault can use: a Redis
 * Cluster has database 0 only. Whether the server has that many databases is asked at connect (src/queue/redis.ts).
 */
export function redisDbIndexProblem(url: string): string | undefined {
  // A URL that does not parse is the URL check's to report (src/config.ts), once, with what it expects.
  if (!URL.canParse(url)) return undefined;
  const { pathname, protocol } = new URL(url);
  const db = pathname.replace(/^\/+|\/+$/g, "");
  if (db === "") return undefined;
  if (!/^\d{1,9}$/.test(db)) return `names database "${db}": the path after the port is a database number, such as /0 or /2`;
  if (protocol.endsWith("+cluster:") && Number(db) !== 0) return `names a database other than 0, which a Redis Cluster does not have: drop the /${db}`;
  return undefined;
}

/** An IANA time zone name this Node knows (UTC, Europe/Berlin). */
export function isTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}
