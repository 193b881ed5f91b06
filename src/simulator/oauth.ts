// /oauth2/authorize, /oauth2/token and /oauth2/revoke as the service runs them: OAuth 2.0 and 2.1
// clients, PKCE (docs/service-behaviour.md#oauth21-pkce), single-use rotating refresh tokens
// (#refresh-single-use), and its non-standard error bodies (#refresh-refused).
import { createHash, timingSafeEqual } from "node:crypto";
import { findUser, owner } from "./dataset.ts";
import { errorBody, json, type Params, type Reply } from "./http.ts";
import { CLIENT_TOKEN_SCOPES, type SimClient, type TokenStore } from "./tokens.ts";
import type { SimWorld } from "./world.ts";

export type OAuthRequest = {
  method: string;
  path: string;
  params: Params;
  /** Body kind as parsed: JSON bodies are not read by the service. */
  bodyKind: string;
  authorization: string | undefined;
  autoApprove: boolean;
};

/** What the server needs to log and to model "the response was lost". */
export type OAuthOutcome = { reply: Reply; clientId?: string; userId?: string };

const ISS = "https://www.deviantart.com";

/** docs/service-behaviour.md#refresh-refused */
export const REFRESH_INVALID = () => json(400, errorBody("invalid_request", "The refresh_token is invalid."));
const INVALID_CLIENT = () => json(401, errorBody("invalid_client", "Client authentication failed."));

function basicCredentials(header: string | undefined): { id: string; secret: string } | undefined {
  const m = /^Basic\s+(.+)$/i.exec(header ?? "");
  if (!m) return undefined;
  const decoded = Buffer.from(m[1] as string, "base64").toString("utf8");
  const i = decoded.indexOf(":");
  if (i === -1) return undefined;
  return { id: decodeURIComponent(decoded.slice(0, i)), secret: decodeURIComponent(decoded.slice(i + 1)) };
}

function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** Authenticates the client (params or HTTP Basic); public 2.1 clients may send only client_id. */
function authenticateClient(tokens: TokenStore, req: OAuthRequest, needsSecret: boolean): SimClient | undefined {
  const basic = basicCredentials(req.authorization);
  const id = basic?.id ?? req.params.get("client_id");
  const secret = basic?.secret ?? req.params.get("client_secret");
  if (!id) return undefined;
  const client = tokens.clients.get(id);
  if (!client) return undefined;
  if (client.clientSecret === undefined) return needsSecret ? undefined : client;
  if (secret === undefined || !safeEqual(secret, client.clientSecret)) return undefined;
  return client;
}

function redirectWith(uri: string, params: Record<string, string | undefined>, fragment = false): Reply {
  const url = new URL(uri);
  const pairs = Object.entries(params).filter((e): e is [string, string] => e[1] !== undefined);
  if (fragment) {
    url.hash = new URLSearchParams(pairs).toString();
  } else {
    for (const [k, v] of pairs) url.searchParams.set(k, v);
  }
  return { status: 302, redirect: url.toString() };
}

/** Only to a whitelisted URI (docs/service-behaviour.md#redirect-whitelist); anything else gets the service's error page. */
function redirectAllowed(client: SimClient, uri: string): boolean {
  if (client.oauth21) return client.redirectUris.includes(uri);
  // OAuth 2.0 apps: a registered URI or a prefix of it (the 2.1 switch made matching exact).
  return client.redirectUris.some((r) => uri === r || uri.startsWith(r));
}

function htmlPage(status: number, title: string, body: string): Reply {
  return {
    status,
    contentType: "text/html; charset=utf-8",
    text: `<!doctype html><html><head><title>${title}</title></head><body><h1>${title}</h1>${body}</body></html>`,
  };
}

export function handleAuthorize(world: SimWorld, req: OAuthRequest): OAuthOutcome {
  const p = req.params;
  const clientId = p.get("client_id");
  const client = clientId ? world.tokens.clients.get(clientId) : undefined;
  if (!client) return { reply: htmlPage(400, "Invalid client", "<p>Unknown client_id.</p>") };
  const redirectUri = p.get("redirect_uri") ?? client.redirectUris[0];
  if (!redirectUri || !redirectAllowed(client, redirectUri)) {
    return { reply: htmlPage(400, "Invalid redirect_uri", "<p>The redirect_uri is not whitelisted for this client.</p>"), clientId: client.clientId };
  }
  const state = p.get("state");
  const iss = client.oauth21 ? ISS : undefined;
  const fail = (error: string, description: string) => ({
    reply: redirectWith(redirectUri, { error, error_description: description, state, iss }),
    clientId: client.clientId,
  });
  const responseType = p.get("response_type");
  if (responseType !== "code" && responseType !== "token") return fail("unsupported_response_type", "The response_type is not supported.");
  if (responseType === "token") {
    if (client.oauth21 || !client.implicit) return fail("unauthorized_client", "The implicit grant is not enabled for this client.");
    if (!redirectUri.startsWith("https://") || !client.redirectUris.includes(redirectUri)) {
      return {
        reply: htmlPage(400, "Invalid redirect_uri", "<p>The implicit grant needs an https redirect_uri that matches a whitelisted one exactly.</p>"),
        clientId: client.clientId,
      };
    }
  }
  const challenge = p.get("code_challenge");
  const method = p.get("code_challenge_method") ?? (challenge ? "plain" : undefined);
  if (responseType === "code") {
    if (client.oauth21 && !challenge) return fail("invalid_request", "The code_challenge parameter is required.");
    if (method !== undefined && method !== "S256" && method !== "plain") return fail("invalid_request", "Transform algorithm not supported.");
    if (client.oauth21 && method === "plain") return fail("invalid_request", "Transform algorithm not supported.");
  }
  const user = findUser(world.data, p.get("sim_user")) ?? owner(world.data);
  const decision = p.get("sim_decision") ?? (req.autoApprove ? "approve" : undefined);
  if (decision === undefined) {
    const base = new URL(`${world.baseUrl}${req.path}`);
    for (const [k, v] of Object.entries(p.query)) for (const value of Array.isArray(v) ? v : [v]) base.searchParams.append(k, value);
    const approve = new URL(base);
    approve.searchParams.set("sim_decision", "approve");
    const deny = new URL(base);
    deny.searchParams.set("sim_decision", "deny");
    const esc = (s: string) => s.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;");
    return {
      reply: htmlPage(
        200,
        "Authorize application",
        `<p>Client ${esc(client.clientId)} asks for: ${esc(p.get("scope") ?? "basic")} as ${esc(user.username)}.</p><p><a id="approve" href="${esc(approve.toString())}">Authorize</a> <a id="deny" href="${esc(deny.toString())}">Cancel</a></p>`,
      ),
      clientId: client.clientId,
    };
  }
  if (decision !== "approve") return fail("access_denied", "The user denied access to your application.");
  const scopes = world.tokens.grantScopes(p.get("scope"));
  if (responseType === "token") {
    const grantId = world.tokens.newGrantId();
    const at = world.tokens.issueAccess({ kind: "user", clientId: client.clientId, userId: user.userid, scopes, grantId });
    return {
      reply: redirectWith(
        redirectUri,
        { access_token: at.token, token_type: "bearer", expires_in: String(world.tokens.accessLifetimeS), scope: scopes.join(" "), state },
        true,
      ),
      clientId: client.clientId,
      userId: user.userid,
    };
  }
  const code = world.tokens.issueCode({
    clientId: client.clientId,
    userId: user.userid,
    redirectUri,
    scopes,
    ...(challenge ? { challenge, challengeMethod: method === "S256" ? "S256" : "plain" } : {}),
  });
  return { reply: redirectWith(redirectUri, { code: code.code, state, iss }), clientId: client.clientId, userId: user.userid };
}

function tokenSuccess(world: SimWorld, access: { token: string; scopes: string[] }, refresh?: string): Reply {
  const body: Record<string, unknown> = {
    access_token: access.token,
    token_type: "Bearer",
    expires_in: world.tokens.accessLifetimeS,
  };
  if (refresh !== undefined) {
    body.refresh_token = refresh;
    body.scope = access.scopes.join(" ");
  }
  body.status = "success";
  return json(200, body);
}

function verifyPkce(challenge: string, method: "S256" | "plain", verifier: string | undefined): boolean {
  if (!verifier || !/^[A-Za-z0-9._~-]{43,128}$/.test(verifier)) return false;
  const computed = method === "S256" ? createHash("sha256").update(verifier).digest("base64url") : verifier;
  return safeEqual(computed, challenge);
}

export function handleToken(world: SimWorld, req: OAuthRequest): OAuthOutcome {
  const p = req.params;
  const grantType = p.get("grant_type");
  const tokens = world.tokens;
  switch (grantType) {
    case "authorization_code": {
      const client = authenticateClient(tokens, req, false);
      if (!client) return { reply: INVALID_CLIENT() };
      const codeValue = p.get("code");
      const code = codeValue ? tokens.takeCode(codeValue) : undefined;
      if (!code || code.clientId !== client.clientId) {
        return { reply: json(400, errorBody("invalid_request", "Incorrect authorization code.")), clientId: client.clientId };
      }
      if ((p.get("redirect_uri") ?? "") !== code.redirectUri) {
        return { reply: json(400, errorBody("invalid_request", "redirect_uri does not match the one sent to authorize.")), clientId: client.clientId };
      }
      if (code.challenge && !verifyPkce(code.challenge, code.challengeMethod ?? "plain", p.get("code_verifier"))) {
        return { reply: json(400, errorBody("invalid_request", "The code_verifier is invalid.")), clientId: client.clientId };
      }
      const grantId = tokens.newGrantId();
      const access = tokens.issueAccess({ kind: "user", clientId: client.clientId, userId: code.userId, scopes: code.scopes, grantId });
      const refresh = tokens.issueRefresh({ clientId: client.clientId, userId: code.userId, scopes: code.scopes, grantId });
      return { reply: tokenSuccess(world, access, refresh.token), clientId: client.clientId, userId: code.userId };
    }
    case "refresh_token": {
      const client = authenticateClient(tokens, req, false);
      if (!client) return { reply: INVALID_CLIENT() };
      const old = p.get("refresh_token");
      const consumed = old ? tokens.consumeRefresh(old, client.clientId) : undefined;
      if (!consumed) return { reply: REFRESH_INVALID(), clientId: client.clientId };
      const access = tokens.issueAccess({
        kind: "user",
        clientId: client.clientId,
        userId: consumed.userId,
        scopes: consumed.scopes,
        grantId: consumed.grantId,
      });
      const refresh = tokens.issueRefresh({ clientId: client.clientId, userId: consumed.userId, scopes: consumed.scopes, grantId: consumed.grantId });
      return { reply: tokenSuccess(world, access, refresh.token), clientId: client.clientId, userId: consumed.userId };
    }
    case "client_credentials": {
      const client = authenticateClient(tokens, req, true);
      if (!client) return { reply: INVALID_CLIENT() };
      if (p.get("scope")) {
        return {
          reply: json(400, errorBody("invalid_request", "Scope has not been implemented, please remove it from the request")),
          clientId: client.clientId,
        };
      }
      const access = tokens.issueAccess({ kind: "client", clientId: client.clientId, scopes: CLIENT_TOKEN_SCOPES });
      return { reply: tokenSuccess(world, access), clientId: client.clientId };
    }
    default:
      return { reply: json(400, errorBody("invalid_request", "Unknown grant_type")) };
  }
}

export function handleRevoke(world: SimWorld, req: OAuthRequest): OAuthOutcome {
  // The service does not read JSON bodies here; it redirects (docs/service-behaviour.md#revoke-json-body).
  if (req.bodyKind === "json") return { reply: { status: 302, redirect: `${world.baseUrl}/users/login` } };
  const token = req.params.get("token");
  if (!token) return { reply: json(400, errorBody("invalid_request", "Request field validation failed.", { error_details: { token: "token is required" } })) };
  // By default every token of the user for the client goes; revoke_refresh_only=true ends one device's refresh
  // token (docs/service-behaviour.md#revoke-scope).
  const refreshOnly = req.params.bool("revoke_refresh_only");
  const refresh = world.tokens.findRefresh(token);
  const access = world.tokens.findAccess(token);
  if (refresh) {
    if (refresh.state !== "live") return { reply: json(400, errorBody("invalid_request", "Invalid token.")), clientId: refresh.clientId };
    if (refreshOnly) refresh.state = "revoked";
    else world.tokens.revokeUserClient(refresh.userId, refresh.clientId);
    return { reply: json(200, { success: true, status: "success" }), clientId: refresh.clientId, userId: refresh.userId };
  }
  if (access && !access.revoked) {
    if (refreshOnly) return { reply: json(400, errorBody("invalid_request", "revoke_refresh_only needs a refresh token.")), clientId: access.clientId };
    if (access.userId) world.tokens.revokeUserClient(access.userId, access.clientId);
    else access.revoked = true;
    return { reply: json(200, { success: true, status: "success" }), clientId: access.clientId, ...(access.userId ? { userId: access.userId } : {}) };
  }
  return { reply: json(400, errorBody("invalid_request", "Invalid token.")) };
}
