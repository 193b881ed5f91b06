// What src/downloads (enqueue-due.ts, retry.ts, run-once.ts) and jobs/refresh-tokens/handler.ts still import
// through this entry; the rest of dvault imports each name from the file that defines it (token-errors.ts,
// token-session.ts). Those four point there too, and this file goes.
export { grantUnusable, ReauthRequiredError, TokenRefreshDeferredError } from "./token-errors.ts";
export { DEFAULT_REFRESH_MARGIN_MS } from "./token-session.ts";
