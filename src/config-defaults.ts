// Defaults shared by the app's config and prisma.config.ts, so every command agrees on the database.
export const DEFAULT_DATABASE_URL = "postgresql://postgres@127.0.0.1:5432/dvault";
export const DEFAULT_REDIS_URL = "redis://127.0.0.1:6379";
export const DEFAULT_API_BASE = "https://www.deviantart.com";
export const DEFAULT_REDIRECT_URI = "http://127.0.0.1:8788/callback";
/** The API pace in requests per second per client and user (src/api/pacer.ts): where a key starts, and its bounds. */
export const DEFAULT_API_RATE = { start: 2, min: 0.1, max: 100 } as const;
