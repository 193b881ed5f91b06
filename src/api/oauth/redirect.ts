// What comes back on the redirect (query or fragment), pasted or received, and what its errors mean.
import { UserError } from "../../errors.ts";
import { registerSecret } from "../../redact.ts";
import type { StateCheck } from "./pkce-state.ts";
import type { StateStore } from "./pkce-state.ts";

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
export function readRedirectParams(
  params: URLSearchParams,
  mode: "code" | "token",
): AuthorizeResult | { kind: "error"; error: string; description?: string; state?: string } | { kind: "empty" } {
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

/** What a person does after a refused authorization: start again, and which redirect URI must be registered. */
export type RetryWords = { again: string; redirect: string };

const CLI_RETRY: RetryWords = {
  again: "run `dvault auth login` again",
  redirect: "DVAULT_REDIRECT_URI must equal a redirect URI registered with your app, character for character.",
};

/** Words for an authorize-step error, including OAuth 2.1's missing implicit grant and PKCE. */
export function explainAuthorizeError(
  error: string,
  description: string | undefined,
  mode: "code" | "token",
  retry: RetryWords = CLI_RETRY,
): AuthorizeDeniedError {
  let hint = `${retry.again[0]?.toUpperCase()}${retry.again.slice(1)}.`;
  if (error === "access_denied") hint = `You (or the service) declined; ${retry.again} to retry.`;
  if (mode === "token" && /unsupported_response_type|unauthorized_client/.test(error)) {
    hint = IMPLICIT_UNAVAILABLE;
  }
  if (/redirect/i.test(description ?? "")) {
    hint = retry.redirect;
  }
  return new AuthorizeDeniedError(error, description, hint);
}

export const IMPLICIT_UNAVAILABLE =
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
