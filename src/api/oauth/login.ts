// The interactive flows, end to end up to the tokens (storing them and whoami are the token manager's and
// the CLI's).
import { UserError } from "../../errors.ts";
import type { Logger } from "../../log.ts";
import type { ClientAuthMethod, OAuthVersion } from "./endpoints.ts";
import { normaliseScopes } from "./scopes.ts";
import { createPkce, StateStore, buildAuthorizeUrl, type Pkce } from "./pkce-state.ts";
import type { AuthorizeResult } from "./redirect.ts";
import { parsePastedRedirect, IMPLICIT_UNAVAILABLE } from "./redirect.ts";
import { startCallbackListener } from "./callback-listener.ts";
import type { TokenGrant } from "./token-endpoint.ts";
import type { OAuthClient } from "./token-endpoint.ts";

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

/** One login's first half: its single-use state, its PKCE pair (code flow) and the URL to send the person to. */
export type LoginStart = { url: string; state: string; pkce: Pkce | undefined; scopes: string[] };

/**
 * Issues the state (carrying `data`, for a store that keeps each flow's secrets), makes the PKCE pair and
 * builds the authorize URL: the same for the CLI's listener, its --paste and the dashboard's callback.
 */
export function beginLogin<T>({
  oauth,
  redirectUri,
  scopes: asked,
  mode,
  states,
  keep,
}: {
  oauth: OAuthClient;
  redirectUri: string;
  scopes: readonly string[];
  mode: "code" | "token";
  states: StateStore<T>;
  /** What the state carries to the flow's second half. */
  keep?: (start: { pkce: Pkce | undefined; scopes: string[] }) => T;
}): LoginStart {
  const pkce = mode === "code" ? createPkce() : undefined;
  const scopes = normaliseScopes(asked);
  const state = states.issue(keep?.({ pkce, scopes }));
  const url = buildAuthorizeUrl({
    endpoints: oauth.endpoints,
    clientId: oauth.clientId,
    redirectUri,
    scopes,
    state,
    responseType: mode,
    ...(pkce ? { pkce } : {}),
  });
  return { url, state, pkce, scopes };
}

/** A login's second half: a redirect whose state checked out, turned into validated tokens (the code exchanged once). */
export async function finishLogin({
  oauth,
  result,
  redirectUri,
  pkce,
  scopes,
  auth,
  now = Date.now,
}: {
  oauth: OAuthClient;
  result: AuthorizeResult;
  redirectUri: string;
  pkce: Pkce | undefined;
  scopes: string[];
  auth?: ClientAuthMethod | undefined;
  now?: (() => number) | undefined;
}): Promise<InteractiveLoginResult> {
  if (result.kind === "token") {
    return {
      grant: {
        accessToken: result.accessToken,
        tokenType: "Bearer",
        expiresIn: result.expiresIn,
        refreshToken: undefined,
        scopes: result.scope === undefined ? undefined : normaliseScopes(result.scope),
      },
      requestedScopes: scopes,
      grantType: "implicit",
      requestedAt: now(),
    };
  }
  if (!pkce) throw new Error("unreachable: a code without PKCE");
  const requestedAt = now();
  const grant = await oauth.exchangeCode({ code: result.code, redirectUri, verifier: pkce.verifier, ...(auth ? { auth } : {}) });
  return { grant, requestedScopes: scopes, grantType: "authorization_code", requestedAt };
}

/** The authorization code flow (PKCE always) or the implicit flow, up to validated tokens. */
export async function interactiveLogin(options: InteractiveLoginOptions): Promise<InteractiveLoginResult> {
  const { oauth, redirectUri, mode } = options;
  if (mode === "token") assertImplicitAllowed({ oauth, redirectUri, oauthVersion: options.oauthVersion });
  const states = new StateStore(options.timeoutMs ?? 10 * 60_000);
  const { url, pkce, scopes } = beginLogin({ oauth, redirectUri, scopes: options.scopes, mode, states });

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
          timer = setTimeout(
            () => reject(new UserError(`no redirect arrived within ${Math.round(timeoutMs / 1000)} s; run \`dvault auth login\` again (or use --paste)`)),
            timeoutMs,
          );
          timer.unref();
        }),
      ]);
    } finally {
      if (timer) clearTimeout(timer);
      await listener.close();
    }
  }
  return finishLogin({ oauth, result, redirectUri, pkce, scopes, auth: options.auth, now: options.now });
}

/** The implicit grant exists only for OAuth 2.0 apps, over an https redirect. */
export function assertImplicitAllowed({
  oauth,
  redirectUri,
  oauthVersion,
}: {
  oauth: OAuthClient;
  redirectUri: string;
  oauthVersion: OAuthVersion | undefined;
}): void {
  if (oauthVersion === "2.1" || oauth.isPublicClient) {
    throw new UserError(
      `the implicit grant is not available: ${oauthVersion === "2.1" ? "DVAULT_OAUTH_VERSION=2.1" : "this client has no secret (an OAuth 2.1 public client)"}. ${IMPLICIT_UNAVAILABLE}`,
    );
  }
  if (new URL(redirectUri).protocol !== "https:") {
    throw new UserError(
      `the implicit grant needs an https redirect URI registered with your app; DVAULT_REDIRECT_URI is ${redirectUri}. Set it to the https URI (served by a TLS proxy in front of dvault's listener, or use --paste)`,
    );
  }
}
