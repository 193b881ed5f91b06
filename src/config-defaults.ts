// Defaults shared by the app's config and prisma.config.ts, so every command agrees on the database.
export const DEFAULT_DATABASE_URL = "postgresql://postgres@127.0.0.1:5432/dvault";
export const DEFAULT_REDIS_URL = "redis://127.0.0.1:6379";
export const DEFAULT_API_BASE = "https://www.deviantart.com";
export const DEFAULT_REDIRECT_URI = "http://127.0.0.1:8788/callback";
/** The API pace in requests per second per client and user (src/api/pacer.ts): where a key starts, and its bounds. */
export const DEFAULT_API_RATE = { start: 2, min: 0.1, max: 100 } as const;

/** The sources one account syncs (src/sync/sources/*); each has a schedule (DVAULT_SCHEDULE_<SOURCE>, src/config/schedules.ts). */
export const SOURCE_NAMES = [
  "profile",
  "gallery",
  "collections",
  "comments",
  "profile_posts",
  "messages",
  "notes",
  "watch_feed",
  "stash",
  "static",
  "tracked",
] as const;

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** Defaults from the issue: messages and notes every 10 min, watch feed 30 min, galleries 6 h, profile daily, static weekly. */
export const DEFAULT_SOURCE_EVERY_MS: Readonly<Record<(typeof SOURCE_NAMES)[number], number>> = {
  messages: 10 * MINUTE,
  notes: 10 * MINUTE,
  watch_feed: 30 * MINUTE,
  gallery: 6 * HOUR,
  collections: 6 * HOUR,
  tracked: 6 * HOUR,
  comments: 12 * HOUR,
  profile: DAY,
  profile_posts: DAY,
  stash: DAY,
  static: 7 * DAY,
};
