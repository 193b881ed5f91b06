// The OAuth side of the service, kept as one import path: endpoints and scopes, PKCE and single-use states
// with the authorize URL (oauth/pkce-state.ts), the redirect (oauth/redirect.ts), the loopback callback
// listener (oauth/callback-listener.ts), the token and revoke endpoints (oauth/token-endpoint.ts) and the
// interactive login in two halves (oauth/login.ts). Storing the grant a login brings is the token side's
// (src/api/store-login.ts).
export { type ClientAuthMethod, type OAuthVersion, type OAuthEndpoints, oauthEndpoints } from "./oauth/endpoints.ts";
export { DEFAULT_SCOPES, normaliseScopes, compareScopes } from "./oauth/scopes.ts";
export { type Pkce, createPkce, s256, type StateCheck, type StateTake, StateStore, type AuthorizeRequest, buildAuthorizeUrl } from "./oauth/pkce-state.ts";
export {
  type AuthorizeResult,
  AuthorizeDeniedError,
  StateMismatchError,
  readRedirectParams,
  explainAuthorizeError,
  type RetryWords,
  parsePastedRedirect,
} from "./oauth/redirect.ts";
export { type CallbackListener, type CallbackListenerOptions, startCallbackListener } from "./oauth/callback-listener.ts";
export {
  type OAuthClientOptions,
  REFRESH_RETRIES,
  type TokenGrant,
  type TokenRequestKind,
  OAuthEndpointError,
  TokenResponseLostError,
  TokenEndpointUnreachableError,
  TokenResponseInvalidError,
  OAuthClient,
  classifyTransportError,
} from "./oauth/token-endpoint.ts";
export {
  type InteractiveLoginOptions,
  type InteractiveLoginResult,
  type LoginStart,
  interactiveLogin,
  beginLogin,
  finishLogin,
  assertImplicitAllowed,
} from "./oauth/login.ts";
