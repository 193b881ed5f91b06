// Defaults shared by the app's config and prisma.config.ts, so every command agrees on the database.
export const DEFAULT_DATABASE_URL = "postgresql://postgres@127.0.0.1:5432/dvault";
export const DEFAULT_REDIS_URL = "redis://127.0.0.1:6379";
export const DEFAULT_API_BASE = "https://www.deviantart.com";
export const DEFAULT_REDIRECT_URI = "http://127.0.0.1:8788/callback";
