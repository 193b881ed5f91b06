// The token and revoke endpoints. Calls are plain got calls (form-encoded, no retry): a refresh is
// single-use, and whether to try again is for src/api/token-refresh.ts to decide, never for an HTTP retry policy.
import https from "node:https";
import http from "node:http";
import type { Got, RequestError } from "got";
import { UserError } from "../../errors.ts";
import type { Logger } from "../../log.ts";
import { registerSecret, scrubString } from "../../redact.ts";
import { bodyGuardHandler } from "../body-guard.ts";
import { z } from "zod";
import type { OAuthEndpoints, ClientAuthMethod } from "./endpoints.ts";
import { oauthEndpoints } from "./endpoints.ts";
import { normaliseScopes } from "./scopes.ts";

export type OAuthClientOptions = {
  /** The service base; endpoints are `{serviceBase}/oauth2/authorize|token|revoke`. */
  serviceBase: string;
  clientId: string;
  /** Absent for public (OAuth 2.1) clients, which prove themselves with PKCE alone. */
  clientSecret?: string | undefined;
  userAgent?: string;
  /** Whole-request limit for token calls; src/api/token-refresh.ts keeps its lock longer than a whole refresh (refreshBudgetMs). */
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
    super(
      `the service's ${request === "revoke" ? "revoke" : "token"} endpoint refused the ${request.replace("_", " ")} request: HTTP ${status} ${error}${errorDescription ? ` (${scrubString(errorDescription)})` : ""}`,
    );
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
    // Exit code 1, as any failed call to the service: 3 says dvault's own PostgreSQL or Redis is not there (src/errors.ts).
    super(`cannot reach the service's OAuth endpoint ${url} (${reason}). Check DVAULT_API_BASE and the network, then try again`);
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
const NOT_SENT_CODES = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EADDRNOTAVAIL",
  "ERR_INVALID_URL",
  "CERT_HAS_EXPIRED",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "ERR_TLS_CERT_ALTNAME_INVALID",
]);

/**
 * Token answers are small: one past this size, or trickling in, is cut off and treated as an answer that
 * was lost after the request was sent (docs/service-behaviour.md#hostile-answers).
 */
let tokenGot: Got | undefined;
/** got's RequestError, once got is loaded: an error can only be one after a token call has loaded it. */
let RequestErrorClass: typeof RequestError | undefined;

/** got is loaded by the first token call, not at import: `dvault status` and others that never call keep start-up light. */
async function tokenClient(): Promise<Got> {
  if (tokenGot) return tokenGot;
  const loaded = await import("got");
  RequestErrorClass = loaded.RequestError;
  tokenGot = loaded.default.extend({ handlers: [bodyGuardHandler({ maxBytes: 1024 * 1024, minBytesPerSecond: 1024, graceMs: 5_000, windowMs: 10_000 })] });
  return tokenGot;
}

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
        if (lost && refused)
          throw new TokenResponseLostError("refresh_token", `${lost.message}; sent again, the same refresh token was refused: the first request spent it`);
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
      throw new OAuthEndpointError(
        kind,
        res.statusCode,
        err.success ? err.data.error : cdn ? "cdn_block" : "http_error",
        err.success ? err.data.error_description : undefined,
      );
    }
    if (body === undefined) throw new TokenResponseInvalidError(kind, "the body is not JSON");
    // Register before validating, so not even a validation message can carry them.
    const raw = body as Record<string, unknown>;
    if (typeof raw.access_token === "string") registerSecret(raw.access_token);
    if (typeof raw.refresh_token === "string") registerSecret(raw.refresh_token);
    const parsed = TokenSuccessSchema.safeParse(body);
    if (!parsed.success) {
      const status = typeof raw.status === "string" ? raw.status : undefined;
      throw new TokenResponseInvalidError(
        kind,
        status && status !== "success" ? `status "${status}"` : parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; "),
      );
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
      const res = await (await tokenClient()).post(url, {
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
      // Info, not warn: the error is thrown to a caller that says it (a command's one line, the refresh's own warn).
      this.log?.info({ request: kind, clientAuth: method, err: classified, durationMs: Date.now() - started }, "oauth endpoint call failed");
      throw classified;
    }
  }
}

/**
 * A failed token request either never left (safe: nothing spent) or was sent and lost its answer
 * (a refresh token is then probably spent). Only errors known to happen before sending count as the former.
 */
export function classifyTransportError(kind: TokenRequestKind, url: string, err: unknown): Error {
  if (!RequestErrorClass || !(err instanceof RequestErrorClass)) return err instanceof Error ? err : new Error(String(err));
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
