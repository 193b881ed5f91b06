// The old entry of the token owner, kept so callers' imports stay stable: the store interface
// (token-store.ts), the refresh path (token-refresh.ts), the manager (token-manager.ts), one account's
// provider (account-tokens.ts) and the placebo/whoami calls (account-calls.ts).
export { ensureFreshToken, placebo, whoami, type Whoami } from "./account-calls.ts";
export { AccountTokens, clientRowName } from "./account-tokens.ts";
export { grantUnusable, ReauthRequiredError, TokenRefreshDeferredError } from "./token-errors.ts";
export { TokenManager, accountStatusOf, type AccountStatus, type TokenManagerOptions } from "./token-manager.ts";
export { DEFAULT_REFRESH_MARGIN_MS, REFRESH_TOKEN_WARN_AGE_MS } from "./token-session.ts";
export type { StoredAccount, TokenStore } from "./token-store.ts";
