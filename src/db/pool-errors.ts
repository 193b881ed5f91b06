// Which database errors mean "too busy now", not "broken": the pool had no connection to give within its
// timeout (every one in use), or the server has no connection slot left.
// The dashboard answers these with 503 and Retry-After (src/http/refusals.ts) instead of a 500.

/** pg-pool's own words when a checkout waits past connectionTimeoutMillis (it gives the error no code). */
const POOL_TIMEOUT = "timeout exceeded when trying to connect";
/** SQLSTATE too_many_connections, cannot_connect_now. */
const BUSY_CODES = new Set(["53300", "57P03"]);

export function isPoolExhausted(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === "string" && BUSY_CODES.has(code)) return true;
  return err.message === POOL_TIMEOUT || (err.cause !== undefined && err.cause !== err && isPoolExhausted(err.cause));
}
