// The OAuth side of the service: authorize URLs with PKCE, single-use states, the loopback callback
// listener (code and implicit), pasted redirects, and the token and revoke endpoints.
// Token endpoint calls are plain got calls (form-encoded, no retry): a refresh is single-use, and
// whether to try again is for tokens.ts to decide, never for an HTTP retry policy.
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import http from "node:http";
import https from "node:https";
import type { AddressInfo } from "node:net";
import got, { RequestError } from "got";
import { z } from "zod";
import { UserError } from "../errors.ts";
import type { Logger } from "../log.ts";
import { registerSecret, scrubString } from "../redact.ts";
import { escapeHtml } from "../text/html.ts";
import { bodyGuardHandler } from "./body-guard.ts";

/** Read scopes an archive needs (docs/service-behaviour.md#scopes): content (browse), whoami (user), messages, notes, the old feeds. */
export const DEFAULT_SCOPES = ["basic", "browse", "user", "message", "note", "feed"] as const;

export type ClientAuthMethod = "basic" | "form" | "none";
export type OAuthVersion = "2.0" | "2.1";

export type OAuthClientOptions = {
  /** The service base; endpoints are `{serviceBase}/oauth2/authorize|token|revoke`. */
  serviceBase: string;
  clientId: string;
  /** Absent for public (OAuth 2.1) clients, which prove themselves with PKCE alone. */
  clientSecret?: string | undefined;
  userAgent?: string;
  /** Whole-request limit for token calls; tokens.ts keeps its lock longer than a whole refresh (refreshBudgetMs). */
  timeoutMs?: number;
  /** First wait before a refresh is sent again (doubled each time); default 500 ms. */
  refreshRetryDelayMs?: number;
  log?: Logger;
};

/**
 * How many times a refresh is sent again with the same refresh token: after a 400, which is either a
 * refusal (a spent token is refused again, so asking costs nothing) or an answer saying the request was
 * not processed (docs/service-behaviour.md#unknown-grant-type); and once after an answer that could not
 * be read, when the token may or may not have been spent.
 */
export const REFRESH_RETRIES = 3;

export type OAuthEndpoints = { authorize: string; token: string; revoke: string };

export function oauthEndpoints(serviceBase: string): OAuthEndpoints {
  const base = serviceBase.replace(/\/+$/, "");
  return { authorize: `${base}/oauth2/authorize`, token: `${base}/oauth2/token`, revoke: `${base}/oauth2/revoke` };
}

/** Space- or comma-separated scopes, de-duplicated, with `basic` first. */
export function normaliseScopes(...lists: Array<string | readonly string[] | undefined>): string[] {
  const out = new Set<string>();
  for (const list of lists) {
    if (list === undefined) continue;
    const items = typeof list === "string" ? list.split(/[\s,+]+/) : list;
    for (const item of items) if (item.trim()) out.add(item.trim());
  }
  const sorted = [...out];
  return sorted.includes("basic") ? ["basic", ...sorted.filter((s) => s !== "basic")] : sorted;
}

// ---------------------------------------------------------------------------------------------
// PKCE and state

export type Pkce = { verifier: string; challenge: string; method: "S256" };

/** RFC 7636: a 64-character verifier and its S256 challenge (plain is never offered: 2.1 apps reject it). */
export function createPkce(): Pkce {
  const verifier = randomBytes(48).toString("base64url");
  registerSecret(verifier);
  return { verifier, challenge: s256(verifier), method: "S256" };
}

export function s256(verifier: string): string {
  return createHash("sha256").update(verifier, "ascii").digest("base64url");
}

export type StateCheck = "ok" | "unknown" | "expired";

/** Random, single-use, expiring `state` values for one login. */
export class StateStore {
  private readonly issued = new Map<string, number>();

  constructor(
    private readonly ttlMs = 10 * 60_000,
    private readonly now: () => number = Date.now,
  ) {}

  issue(): string {
    const state = randomBytes(24).toString("base64url");
    this.issued.set(state, this.now() + this.ttlMs);
    return state;
  }

  /** Consumes the state: a second use of the same value is "unknown". */
  consume(state: string | undefined | null): StateCheck {
    if (!state) return "unknown";
    for (const [candidate, expiresAt] of this.issued) {
      if (!safeEqual(candidate, state)) continue;
      this.issued.delete(candidate);
      return this.now() > expiresAt ? "expired" : "ok";
    }
    return "unknown";
  }
}

function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

// ---------------------------------------------------------------------------------------------
// Authorize URL

export type AuthorizeRequest = {
  endpoints: OAuthEndpoints;
  clientId: string;
  redirectUri: string;
  scopes: readonly string[];
  state: string;
  /** "code" (always with PKCE) or "token" (the implicit grant). */
  responseType: "code" | "token";
  pkce?: Pkce;
};

export function buildAuthorizeUrl(req: AuthorizeRequest): string {
  const url = new URL(req.endpoints.authorize);
  url.searchParams.set("response_type", req.responseType);
  url.searchParams.set("client_id", req.clientId);
  url.searchParams.set("redirect_uri", req.redirectUri);
  url.searchParams.set("scope", req.scopes.join(" "));
  url.searchParams.set("state", req.state);
  if (req.responseType === "code") {
    if (!req.pkce) throw new Error("the authorization code flow always sends PKCE");
    url.searchParams.set("code_challenge", req.pkce.challenge);
    url.searchParams.set("code_challenge_method", req.pkce.method);
  }
  return url.toString();
}

// ---------------------------------------------------------------------------------------------
// What comes back on the redirect

export type AuthorizeResult =
  | { kind: "code"; code: string; state: string }
  | { kind: "token"; accessToken: string; tokenType: string; expiresIn: number; scope: string | undefined; state: string };

/** The service redirected with `error` (the user denied, or the app cannot use this flow). */
export class AuthorizeDeniedError extends UserError {
  constructor(
    readonly error: string,
    readonly errorDescription: string | undefined,
    hint: string,
  ) {
    super(`the service refused the authorization: ${error}${errorDescription ? ` (${errorDescription})` : ""}. ${hint}`);
    this.name = "AuthorizeDeniedError";
  }
}

export class StateMismatchError extends UserError {
  constructor(readonly check: Exclude<StateCheck, "ok">) {
    super(
      check === "expired"
        ? "the login took too long (its state expired); run `dvault auth login` again"
        : "the redirect's state does not match this login (a stale or forged redirect); run `dvault auth login` again and use the new URL",
    );
    this.name = "StateMismatchError";
  }
}

/** Reads code/state or a fragment token from redirect parameters; the state is checked by the caller. */
export function readRedirectParams(params: URLSearchParams, mode: "code" | "token"): AuthorizeResult | { kind: "error"; error: string; description?: string; state?: string } | { kind: "empty" } {
  const state = params.get("state") ?? "";
  const error = params.get("error");
  if (error) {
    const description = params.get("error_description") ?? undefined;
    return { kind: "error", error, ...(description ? { description } : {}), ...(state ? { state } : {}) };
  }
  if (mode === "code") {
    const code = params.get("code");
    if (!code) return { kind: "empty" };
    registerSecret(code);
    return { kind: "code", code, state };
  }
  const accessToken = params.get("access_token");
  if (!accessToken) return { kind: "empty" };
  registerSecret(accessToken);
  const expiresIn = Number(params.get("expires_in") ?? "3600");
  return {
    kind: "token",
    accessToken,
    tokenType: params.get("token_type") ?? "Bearer",
    expiresIn: Number.isFinite(expiresIn) && expiresIn > 0 ? expiresIn : 3600,
    scope: params.get("scope") ?? undefined,
    state,
  };
}

/** Words for an authorize-step error, including OAuth 2.1's missing implicit grant and PKCE. */
export function explainAuthorizeError(error: string, description: string | undefined, mode: "code" | "token"): AuthorizeDeniedError {
  let hint = "Run `dvault auth login` again.";
  if (error === "access_denied") hint = "You (or the service) declined; run `dvault auth login` again to retry.";
  if (mode === "token" && /unsupported_response_type|unauthorized_client/.test(error)) {
    hint = IMPLICIT_UNAVAILABLE;
  }
  if (/redirect/i.test(description ?? "")) {
    hint = "DVAULT_REDIRECT_URI must equal a redirect URI registered with your app, character for character.";
  }
  return new AuthorizeDeniedError(error, description, hint);
}

const IMPLICIT_UNAVAILABLE =
  "This app does not offer the implicit grant (OAuth 2.1 apps never do; a 2.0 app must enable it and whitelist an https redirect). " +
  "Use `dvault auth login` without --implicit: the authorization code flow with PKCE gives a refresh token too.";

/**
 * `--paste`: the URL the browser was sent to (the address bar), or just its query or fragment.
 * Checks the state against the store; a mismatch throws.
 */
export function parsePastedRedirect(text: string, { mode, states }: { mode: "code" | "token"; states: StateStore }): AuthorizeResult {
  const trimmed = text.trim().replace(/^["'<]+|[>"']+$/g, "");
  if (!trimmed) throw new UserError("nothing was pasted; paste the whole URL from the browser's address bar");
  let params: URLSearchParams;
  try {
    const url = new URL(trimmed);
    params = new URLSearchParams(mode === "token" && url.hash ? url.hash.slice(1) : url.search);
    if (mode === "token" && !url.hash && url.search) params = new URLSearchParams(url.search);
  } catch {
    params = new URLSearchParams(trimmed.replace(/^[?#]/, ""));
  }
  const read = readRedirectParams(params, mode);
  if (read.kind === "error") throw explainAuthorizeError(read.error, read.description, mode);
  if (read.kind === "empty") {
    throw new UserError(
      mode === "code"
        ? "the pasted URL has no `code` parameter; paste the URL the browser was redirected to after you approved"
        : "the pasted URL has no access_token in its fragment (#...); paste the whole URL from the address bar",
    );
  }
  const check = states.consume(read.state);
  if (check !== "ok") throw new StateMismatchError(check);
  return read;
}

// ---------------------------------------------------------------------------------------------
// The loopback listener

export type CallbackListener = {
  /** Where it listens (the redirect URI's host and port; port 0 picks one, for tests). */
  readonly port: number;
  /** Resolves with the first redirect whose state checks out; rejects on an authorize error. */
  readonly result: Promise<AuthorizeResult>;
  close(): Promise<void>;
};

export type CallbackListenerOptions = {
  redirectUri: string;
  mode: "code" | "token";
  states: StateStore;
  /** Overrides the redirect URI's port (0 = any free port); tests use it. */
  port?: number;
  /** Told about each rejected callback (wrong state, wrong path), so the CLI can say so. */
  onRejected?: (reason: string) => void;
  log?: Logger;
};

/**
 * Listens on the host and port of the redirect URI. For the code flow it reads `code` and `state` from
 * the query; for the implicit flow the token is in the fragment, which browsers never send, so the page
 * posts it back with a small script. Requests with a wrong state get a 400 page and the wait goes on.
 * An https redirect (the implicit grant requires one) needs a TLS-terminating proxy in front of it,
 * or `--paste`.
 */
export async function startCallbackListener(options: CallbackListenerOptions): Promise<CallbackListener> {
  const redirect = new URL(options.redirectUri);
  const host = redirect.hostname.replace(/^\[|\]$/g, "");
  const port = options.port ?? (redirect.port ? Number(redirect.port) : redirect.protocol === "https:" ? 443 : 80);
  let settle: { resolve: (r: AuthorizeResult) => void; reject: (e: Error) => void } | undefined;
  const result = new Promise<AuthorizeResult>((resolve, reject) => (settle = { resolve, reject }));
  result.catch(() => undefined);
  let done = false;

  const reject = (res: http.ServerResponse, status: number, reason: string, json = false) => {
    options.onRejected?.(reason);
    options.log?.warn({ reason }, "rejected an OAuth callback");
    page(res, status, "dvault: login not accepted", reason, json);
  };

  const accept = (params: URLSearchParams, res: http.ServerResponse, json: boolean) => {
    if (done) return page(res, 409, "dvault", "This login has already finished. You can close this window.", json);
    const read = readRedirectParams(params, options.mode);
    if (read.kind === "empty") return reject(res, 400, "The redirect carries neither a code nor a token.", json);
    if (read.kind === "error") {
      // An error redirect with someone else's state could be forged to abort the login: only ours, or
      // one without any state (some services drop it on errors), ends the wait.
      if (read.state !== undefined && options.states.consume(read.state) !== "ok") return reject(res, 400, "The redirect's state does not match this login.", json);
      done = true;
      const err = explainAuthorizeError(read.error, read.description, options.mode);
      page(res, 400, "dvault: login refused", err.message, json);
      settle?.reject(err);
      return;
    }
    const check = options.states.consume(read.state);
    if (check !== "ok") {
      return reject(res, 400, check === "expired" ? "This login's state expired; start `dvault auth login` again." : "The redirect's state does not match this login.", json);
    }
    done = true;
    page(res, 200, "dvault: logged in", "dvault received the authorization. You can close this window and return to the terminal.", json);
    settle?.resolve(read);
  };

  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://callback.invalid");
    // Browsers ask for /favicon.ico and the like: not worth a warning.
    if (url.pathname !== redirect.pathname) return page(res, 404, "dvault", "Not found.");
    if (req.method === "GET") {
      if (options.mode === "code" || url.searchParams.has("error") || url.searchParams.has("access_token")) {
        return accept(url.searchParams, res, false);
      }
      return fragmentPage(res);
    }
    if (req.method === "POST" && options.mode === "token") {
      // Only the page we served may post the fragment back (a browser sends Origin on a fetch POST).
      const origin = req.headers.origin;
      if (origin !== undefined && origin !== "null" && origin !== redirect.origin && origin !== `http://${req.headers.host ?? ""}`) {
        return reject(res, 403, "Cross-origin post refused.", true);
      }
      let body = "";
      req.setEncoding("utf8");
      req.on("data", (chunk: string) => {
        body += chunk;
        if (body.length > 16_384) req.destroy();
      });
      req.on("end", () => accept(new URLSearchParams(body.replace(/^#/, "")), res, true));
      return;
    }
    res.writeHead(405, { allow: "GET, POST" }).end();
  });
  server.keepAliveTimeout = 1000;

  await new Promise<void>((resolve, rejectListen) => {
    server.once("error", (err: NodeJS.ErrnoException) => {
      rejectListen(
        new UserError(
          err.code === "EADDRINUSE"
            ? `cannot listen on ${host}:${port} for the OAuth redirect: the port is in use. Free it, set DVAULT_REDIRECT_URI to another registered URI, or use --paste`
            : `cannot listen on ${host}:${port} for the OAuth redirect (${err.code ?? err.message}). Use --paste instead`,
        ),
      );
    });
    server.listen(port, host, () => resolve());
  });
  const actualPort = (server.address() as AddressInfo).port;

  return {
    port: actualPort,
    result,
    close: () =>
      new Promise<void>((resolve) => {
        if (!done) settle?.reject(new UserError("the login was cancelled before the browser came back"));
        done = true;
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function page(res: http.ServerResponse, status: number, title: string, text: string, json = false): void {
  if (json) {
    res.writeHead(status, { "content-type": "application/json", "cache-control": "no-store" }).end(JSON.stringify({ message: text }));
    return;
  }
  res
    .writeHead(status, { "content-type": "text/html; charset=utf-8", "cache-control": "no-store", "referrer-policy": "no-referrer" })
    .end(`<!doctype html><meta charset="utf-8"><title>${escapeHtml(title)}</title><h1>${escapeHtml(title)}</h1><p>${escapeHtml(text)}</p>`);
}

/** The implicit grant's landing page: hands the fragment to the listener, then wipes it from the address bar. */
function fragmentPage(res: http.ServerResponse): void {
  const script = `(async()=>{const f=location.hash.slice(1);history.replaceState(null,"",location.pathname);
const p=document.getElementById("m");if(!f){p.textContent="No token in the address (#...). Use dvault auth login --paste.";return;}
try{const r=await fetch(location.pathname,{method:"POST",headers:{"content-type":"application/x-www-form-urlencoded"},body:f});
const j=await r.json();p.textContent=j.message;}catch(e){p.textContent="Could not reach dvault: "+e;}})();`;
  res
    .writeHead(200, {
      "content-type": "text/html; charset=utf-8",
      "cache-control": "no-store",
      "referrer-policy": "no-referrer",
      "content-security-policy": "default-src 'none'; script-src 'unsafe-inline'; connect-src 'self'",
    })
    .end(`<!doctype html><meta charset="utf-8"><meta name="referrer" content="no-referrer"><title>dvault</title><h1>dvault</h1><p id="m">Handing the token to dvault…</p><script>${script}</script>`);
}

// ---------------------------------------------------------------------------------------------
// Token endpoint

/** A validated token answer. `scope` is what the service granted, which may be less than asked. */
export type TokenGrant = {
  accessToken: string;
  tokenType: "Bearer";
  expiresIn: number;
  refreshToken: string | undefined;
  /** undefined when the answer had no `scope` field. */
  scopes: string[] | undefined;
};

const TokenSuccessSchema = z.object({
  access_token: z.string().min(1),
  token_type: z.string().refine((t) => t.toLowerCase() === "bearer", { message: "token_type is not Bearer" }),
  expires_in: z.coerce.number().positive().optional(),
  refresh_token: z.string().min(1).optional(),
  scope: z.string().optional(),
  status: z.literal("success").optional(),
});

const ErrorBodySchema = z.object({
  error: z.string(),
  error_description: z.string().optional(),
  status: z.string().optional(),
});

export type TokenRequestKind = "authorization_code" | "refresh_token" | "client_credentials" | "revoke";

/** The token or revoke endpoint answered with an error. */
export class OAuthEndpointError extends UserError {
  constructor(
    readonly request: TokenRequestKind,
    readonly status: number,
    readonly error: string,
    readonly errorDescription: string | undefined,
  ) {
    super(`the service's ${request === "revoke" ? "revoke" : "token"} endpoint refused the ${request.replace("_", " ")} request: HTTP ${status} ${error}${errorDescription ? ` (${scrubString(errorDescription)})` : ""}`);
    this.name = "OAuthEndpointError";
  }

  /**
   * 400 invalid_request (or the RFC's invalid_grant) to a refresh, after it was sent again: final, the
   * grant is gone (docs/service-behaviour.md#refresh-refused). `unsupported_grant_type` is not: that
   * request was not processed (docs/service-behaviour.md#unknown-grant-type).
   */
  get refreshTokenDead(): boolean {
    return this.request === "refresh_token" && this.status === 400 && (this.error === "invalid_request" || this.error === "invalid_grant");
  }

  /** Worth trying again later: the service was busy or broken, not the request. */
  get transient(): boolean {
    return this.status === 429 || this.status >= 500 || (this.status === 403 && this.error === "cdn_block");
  }
}

/**
 * The request was sent and no answer came back (reset, timeout). For a refresh this is the dangerous
 * case: the service has probably consumed the single-use token.
 */
export class TokenResponseLostError extends Error {
  constructor(
    readonly request: TokenRequestKind,
    readonly reason: string,
  ) {
    super(`the ${request.replace("_", " ")} request reached the service but its answer was lost (${reason})`);
    this.name = "TokenResponseLostError";
  }
}

/** The request never left (refused, DNS): nothing was spent; try again later. */
export class TokenEndpointUnreachableError extends UserError {
  constructor(
    readonly request: TokenRequestKind,
    readonly url: string,
    readonly reason: string,
  ) {
    super(`cannot reach the service's OAuth endpoint ${url} (${reason}). Check DVAULT_API_BASE and the network, then try again`, 3);
    this.name = "TokenEndpointUnreachableError";
  }
}

/** The answer is a 200 that is not a usable token (no Bearer, status not "success", not JSON). */
export class TokenResponseInvalidError extends UserError {
  constructor(
    readonly request: TokenRequestKind,
    reason: string,
  ) {
    super(`the service's token endpoint gave an unusable answer to the ${request.replace("_", " ")} request: ${reason}`);
    this.name = "TokenResponseInvalidError";
  }
}

/** Failures that happen before the request is on the wire: nothing was spent. */
const NOT_SENT_CODES = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH", "EADDRNOTAVAIL", "ERR_INVALID_URL", "CERT_HAS_EXPIRED", "DEPTH_ZERO_SELF_SIGNED_CERT", "UNABLE_TO_VERIFY_LEAF_SIGNATURE", "ERR_TLS_CERT_ALTNAME_INVALID"]);

/**
 * Token answers are small: one past this size, or trickling in, is cut off and treated as an answer that
 * was lost after the request was sent (docs/service-behaviour.md#hostile-answers).
 */
const TOKEN_GOT = got.extend({ handlers: [bodyGuardHandler({ maxBytes: 1024 * 1024, minBytesPerSecond: 1024, graceMs: 5_000, windowMs: 10_000 })] });

/**
 * No keep-alive for token calls: a pooled socket the server has just closed fails with ECONNRESET after
 * the request was written, which would look exactly like a refresh whose answer was lost.
 */
const FRESH_CONNECTION_AGENTS = {
  http: new http.Agent({ keepAlive: false }),
  https: new https.Agent({ keepAlive: false }),
};

export class OAuthClient {
  readonly endpoints: OAuthEndpoints;
  readonly clientId: string;
  private readonly clientSecret: string | undefined;
  private readonly userAgent: string;
  readonly timeoutMs: number;
  private readonly refreshRetryDelayMs: number;
  private readonly log: Logger | undefined;

  constructor(options: OAuthClientOptions) {
    this.log = options.log;
    this.refreshRetryDelayMs = options.refreshRetryDelayMs ?? 500;
    this.endpoints = oauthEndpoints(options.serviceBase);
    this.clientId = options.clientId;
    this.clientSecret = options.clientSecret;
    registerSecret(options.clientSecret);
    this.userAgent = options.userAgent ?? "dvault (+https://github.com/dvault)";
    this.timeoutMs = options.timeoutMs ?? 30_000;
  }

  get isPublicClient(): boolean {
    return this.clientSecret === undefined;
  }

  /** The method to use when none was chosen: Basic for confidential clients, none for public ones. */
  defaultAuth(): ClientAuthMethod {
    return this.isPublicClient ? "none" : "basic";
  }

  exchangeCode({ code, redirectUri, verifier, auth }: { code: string; redirectUri: string; verifier: string; auth?: ClientAuthMethod }): Promise<TokenGrant> {
    registerSecret(code);
    registerSecret(verifier);
    return this.tokenRequest("authorization_code", { grant_type: "authorization_code", code, redirect_uri: redirectUri, code_verifier: verifier }, auth);
  }

  /** The longest a refresh can take, retries and their waits included: the refresh lock must outlive it. */
  get refreshBudgetMs(): number {
    return (REFRESH_RETRIES + 1) * this.timeoutMs + this.refreshRetryDelayMs * (2 ** REFRESH_RETRIES - 1);
  }

  /**
   * Spends the refresh token for a new pair. Sent again with the same token (at most REFRESH_RETRIES
   * times, with backoff) after a 400, and once after an unreadable answer; a refusal after an unreadable
   * answer means the first request spent the token, reported as the lost answer it was.
   */
  async refresh(refreshToken: string, auth?: ClientAuthMethod): Promise<TokenGrant> {
    registerSecret(refreshToken);
    let lost: TokenResponseLostError | TokenResponseInvalidError | undefined;
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.tokenRequest("refresh_token", { grant_type: "refresh_token", refresh_token: refreshToken }, auth);
      } catch (err) {
        const refused = err instanceof OAuthEndpointError && err.status === 400;
        if (lost && refused) throw new TokenResponseLostError("refresh_token", `${lost.message}; sent again, the same refresh token was refused: the first request spent it`);
        const unreadable = err instanceof TokenResponseLostError || err instanceof TokenResponseInvalidError;
        if (attempt >= REFRESH_RETRIES || !(refused || (unreadable && !lost))) throw err;
        if (unreadable) lost = err;
        const waitMs = this.refreshRetryDelayMs * 2 ** attempt;
        this.log?.info({ err, attempt: attempt + 1, waitMs }, "refresh not settled; sending it again with the same refresh token");
        await new Promise((resolve) => setTimeout(resolve, waitMs));
      }
    }
  }

  clientCredentials(auth?: ClientAuthMethod): Promise<TokenGrant> {
    if (this.isPublicClient) {
      throw new UserError("the client-credentials grant needs DVAULT_CLIENT_SECRET (public clients have no secret)");
    }
    return this.tokenRequest("client_credentials", { grant_type: "client_credentials" }, auth === "none" ? "basic" : auth);
  }

  /**
   * Revokes the grant the token belongs to (all its tokens), or with `refreshOnly` just that refresh
   * token. Form-encoded: the service does not parse JSON here. An already-dead token counts as revoked.
   */
  async revoke(token: string, { refreshOnly = false, auth }: { refreshOnly?: boolean; auth?: ClientAuthMethod } = {}): Promise<"revoked" | "already_invalid"> {
    registerSecret(token);
    const form: Record<string, string> = { token };
    if (refreshOnly) form.revoke_refresh_only = "true";
    const res = await this.post("revoke", this.endpoints.revoke, form, auth);
    if (res.statusCode >= 200 && res.statusCode < 300) return "revoked";
    const body = parseJson(res.body);
    const err = ErrorBodySchema.safeParse(body);
    if (res.statusCode === 400) return "already_invalid";
    throw new OAuthEndpointError("revoke", res.statusCode, err.success ? err.data.error : "http_error", err.success ? err.data.error_description : undefined);
  }

  private async tokenRequest(kind: TokenRequestKind, form: Record<string, string>, auth: ClientAuthMethod | undefined): Promise<TokenGrant> {
    const res = await this.post(kind, this.endpoints.token, form, auth);
    const body = parseJson(res.body);
    if (res.statusCode !== 200) {
      const err = ErrorBodySchema.safeParse(body);
      const cdn = res.statusCode === 403 && /<html/i.test(res.body);
      throw new OAuthEndpointError(kind, res.statusCode, err.success ? err.data.error : cdn ? "cdn_block" : "http_error", err.success ? err.data.error_description : undefined);
    }
    if (body === undefined) throw new TokenResponseInvalidError(kind, "the body is not JSON");
    // Register before validating, so not even a validation message can carry them.
    const raw = body as Record<string, unknown>;
    if (typeof raw.access_token === "string") registerSecret(raw.access_token);
    if (typeof raw.refresh_token === "string") registerSecret(raw.refresh_token);
    const parsed = TokenSuccessSchema.safeParse(body);
    if (!parsed.success) {
      const status = typeof raw.status === "string" ? raw.status : undefined;
      throw new TokenResponseInvalidError(kind, status && status !== "success" ? `status "${status}"` : parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; "));
    }
    const data = parsed.data;
    return {
      accessToken: data.access_token,
      tokenType: "Bearer",
      expiresIn: data.expires_in ?? 3600,
      refreshToken: data.refresh_token,
      scopes: data.scope === undefined ? undefined : normaliseScopes(data.scope),
    };
  }

  private async post(kind: TokenRequestKind, url: string, form: Record<string, string>, auth: ClientAuthMethod | undefined) {
    const method = auth ?? this.defaultAuth();
    const headers: Record<string, string> = { "user-agent": this.userAgent, accept: "application/json" };
    const body = { ...form };
    if (method === "basic" && this.clientSecret !== undefined) {
      headers.authorization = `Basic ${Buffer.from(`${this.clientId}:${this.clientSecret}`).toString("base64")}`;
    } else {
      body.client_id = this.clientId;
      if (method === "form" && this.clientSecret !== undefined) body.client_secret = this.clientSecret;
    }
    const started = Date.now();
    try {
      const res = await TOKEN_GOT.post(url, {
        form: body,
        headers,
        throwHttpErrors: false,
        followRedirect: false,
        retry: { limit: 0 },
        timeout: { request: this.timeoutMs },
        responseType: "text",
        agent: FRESH_CONNECTION_AGENTS,
      });
      this.log?.debug({ request: kind, clientAuth: method, status: res.statusCode, durationMs: Date.now() - started }, "oauth endpoint call");
      return res;
    } catch (err) {
      const classified = classifyTransportError(kind, url, err);
      this.log?.warn({ request: kind, clientAuth: method, err: classified, durationMs: Date.now() - started }, "oauth endpoint call failed");
      throw classified;
    }
  }
}

/**
 * A failed token request either never left (safe: nothing spent) or was sent and lost its answer
 * (a refresh token is then probably spent). Only errors known to happen before sending count as the former.
 */
export function classifyTransportError(kind: TokenRequestKind, url: string, err: unknown): Error {
  if (!(err instanceof RequestError)) return err instanceof Error ? err : new Error(String(err));
  const code = err.code;
  const event = (err as RequestError & { event?: string }).event;
  const notSent =
    NOT_SENT_CODES.has(code) ||
    (code === "ETIMEDOUT" && (event === "lookup" || event === "connect" || event === "secureConnect")) ||
    (err.timings !== undefined && err.timings.upload === undefined && err.timings.connect === undefined && err.timings.socket === undefined);
  if (notSent) return new TokenEndpointUnreachableError(kind, url, code);
  return new TokenResponseLostError(kind, code === "ETIMEDOUT" ? `no answer within the time limit` : code || err.message);
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

// ---------------------------------------------------------------------------------------------
// The flows, end to end up to the tokens (storing them and whoami are tokens.ts' and the CLI's)

export type InteractiveLoginOptions = {
  oauth: OAuthClient;
  redirectUri: string;
  scopes: readonly string[];
  mode: "code" | "token";
  auth?: ClientAuthMethod;
  /** Called with the URL the user must open (the CLI prints it and tries a browser). */
  onAuthorizeUrl: (url: string) => void | Promise<void>;
  /** `--paste`: returns what the user pasted. Without it, the loopback listener waits for the browser. */
  readPastedUrl?: () => Promise<string>;
  /** Overrides the listener port (tests). */
  listenPort?: number;
  /** Told the port the listener actually bound (useful with listenPort 0). */
  onListening?: (port: number) => void;
  onRejected?: (reason: string) => void;
  timeoutMs?: number;
  /** "2.1" refuses the implicit grant before sending the user anywhere. */
  oauthVersion?: OAuthVersion;
  /** Epoch ms, for `requestedAt` (tests follow the simulator's clock). */
  now?: () => number;
  log?: Logger;
};

export type InteractiveLoginResult = {
  grant: TokenGrant;
  requestedScopes: string[];
  grantType: "authorization_code" | "implicit";
  /** When the token was asked for: its lifetime counts from here. */
  requestedAt: number;
};

/** The authorization code flow (PKCE always) or the implicit flow, up to validated tokens. */
export async function interactiveLogin(options: InteractiveLoginOptions): Promise<InteractiveLoginResult> {
  const { oauth, redirectUri, mode } = options;
  if (mode === "token") assertImplicitAllowed({ oauth, redirectUri, oauthVersion: options.oauthVersion });
  const states = new StateStore(options.timeoutMs ?? 10 * 60_000);
  const state = states.issue();
  const pkce = mode === "code" ? createPkce() : undefined;
  const scopes = normaliseScopes(options.scopes);
  const url = buildAuthorizeUrl({ endpoints: oauth.endpoints, clientId: oauth.clientId, redirectUri, scopes, state, responseType: mode, ...(pkce ? { pkce } : {}) });

  let result: AuthorizeResult;
  if (options.readPastedUrl) {
    await options.onAuthorizeUrl(url);
    result = parsePastedRedirect(await options.readPastedUrl(), { mode, states });
  } else {
    const listener = await startCallbackListener({
      redirectUri,
      mode,
      states,
      ...(options.listenPort !== undefined ? { port: options.listenPort } : {}),
      ...(options.onRejected ? { onRejected: options.onRejected } : {}),
      ...(options.log ? { log: options.log } : {}),
    });
    options.onListening?.(listener.port);
    const timeoutMs = options.timeoutMs ?? 10 * 60_000;
    let timer: NodeJS.Timeout | undefined;
    try {
      await options.onAuthorizeUrl(url);
      result = await Promise.race([
        listener.result,
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new UserError(`no redirect arrived within ${Math.round(timeoutMs / 1000)} s; run \`dvault auth login\` again (or use --paste)`)), timeoutMs);
          timer.unref();
        }),
      ]);
    } finally {
      if (timer) clearTimeout(timer);
      await listener.close();
    }
  }

  const now = options.now ?? Date.now;
  if (result.kind === "token") {
    return {
      grant: { accessToken: result.accessToken, tokenType: "Bearer", expiresIn: result.expiresIn, refreshToken: undefined, scopes: result.scope === undefined ? undefined : normaliseScopes(result.scope) },
      requestedScopes: scopes,
      grantType: "implicit",
      requestedAt: now(),
    };
  }
  if (!pkce) throw new Error("unreachable: a code without PKCE");
  const requestedAt = now();
  const grant = await oauth.exchangeCode({ code: result.code, redirectUri, verifier: pkce.verifier, ...(options.auth ? { auth: options.auth } : {}) });
  return { grant, requestedScopes: scopes, grantType: "authorization_code", requestedAt };
}

/** The implicit grant exists only for OAuth 2.0 apps, over an https redirect. */
export function assertImplicitAllowed({ oauth, redirectUri, oauthVersion }: { oauth: OAuthClient; redirectUri: string; oauthVersion: OAuthVersion | undefined }): void {
  if (oauthVersion === "2.1" || oauth.isPublicClient) {
    throw new UserError(`the implicit grant is not available: ${oauthVersion === "2.1" ? "DVAULT_OAUTH_VERSION=2.1" : "this client has no secret (an OAuth 2.1 public client)"}. ${IMPLICIT_UNAVAILABLE}`);
  }
  if (new URL(redirectUri).protocol !== "https:") {
    throw new UserError(`the implicit grant needs an https redirect URI registered with your app; DVAULT_REDIRECT_URI is ${redirectUri}. Set it to the https URI (served by a TLS proxy in front of dvault's listener, or use --paste)`);
  }
}

/** Scopes asked for but not granted; `downgraded` when the service fell back to `basic` alone. */
export function compareScopes(requested: readonly string[], granted: readonly string[]): { missing: string[]; downgraded: boolean } {
  const missing = requested.filter((s) => !granted.includes(s));
  const downgraded = granted.length === 1 && granted[0] === "basic" && requested.some((s) => s !== "basic");
  return { missing, downgraded };
}
