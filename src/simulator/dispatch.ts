// Routing of one request to the part of the simulator that answers it (API routes, OAuth endpoints, the
// CDN), who is calling, and the checks the service makes before any API handler runs.
import { isGone } from "./dataset.ts";
import { API_PREFIX } from "./faults.ts";
import { ERR, errorBody, type Params, type Reply } from "./http.ts";
import { handleAuthorize, handleRevoke, handleToken, type OAuthOutcome } from "./oauth.ts";
import type { RequestLogEntry } from "./request-log.ts";
import { Router } from "./router.ts";
import { allRoutes } from "./routes/index.ts";
import type { ApiCaller, ApiContext, ApiRoute, SimWorld } from "./world.ts";

const router = new Router<ApiRoute>(allRoutes);

const OAUTH_ROUTES: Record<string, string> = {
  "/oauth2/authorize": "/oauth2/authorize",
  "/oauth2/token": "/oauth2/token",
  "/oauth2/revoke": "/oauth2/revoke",
};

const CDN_TEMPLATE = "/_cdn/{variant}/{deviationid}/{filename}";

/** Which part of the simulator answers `path`, and the route template its log entry records ("(unknown)" when none). */
export function routeOf(path: string): { isApi: boolean; isOAuth: boolean; isCdn: boolean; route: string } {
  const isApi = path === API_PREFIX || path.startsWith(`${API_PREFIX}/`);
  const isCdn = path.startsWith("/_cdn/");
  const oauthRoute = OAUTH_ROUTES[path];
  let route = "(unknown)";
  if (oauthRoute) route = oauthRoute;
  else if (isCdn) route = CDN_TEMPLATE;
  else if (isApi) {
    const m = router.match(path.slice(API_PREFIX.length) || "/");
    if (m) route = API_PREFIX + m.route.template;
  }
  return { isApi, isOAuth: oauthRoute !== undefined, isCdn, route };
}

/** Who is calling and how (recorded before faults, so throttled requests are attributed too). */
export function identify(
  world: SimWorld,
  req: { isApi: boolean; isOAuth: boolean; params: Params; authHeader: string | undefined },
  entry: RequestLogEntry,
): string | undefined {
  const { isApi, isOAuth, params, authHeader } = req;
  if (isOAuth) {
    const basic = /^Basic\s/i.test(authHeader ?? "");
    entry.auth = basic
      ? "basic"
      : params.form.client_secret !== undefined || params.form.client_id !== undefined
        ? "body"
        : params.query.client_id !== undefined
          ? "query"
          : "none";
    const id = basic
      ? Buffer.from((authHeader ?? "").replace(/^Basic\s+/i, ""), "base64")
          .toString("utf8")
          .split(":")[0]
      : params.get("client_id");
    if (id && world.tokens.clients.has(id)) entry.clientId = id;
    return undefined;
  }
  if (!isApi) return undefined;
  // The bearer token: header, then POST body, then the query string (2.0 apps only:
  // docs/service-behaviour.md#oauth21-query-token).
  let token: string | undefined;
  const bearer = /^Bearer\s+(\S+)/i.exec(authHeader ?? "");
  if (bearer) {
    token = bearer[1];
    entry.auth = "bearer";
  } else if (typeof params.form.access_token === "string") {
    token = params.form.access_token;
    entry.auth = "body";
  } else if (typeof params.query.access_token === "string") {
    token = params.query.access_token;
    entry.auth = "query";
  }
  const known = token ? world.tokens.findAccess(token) : undefined;
  if (known) {
    entry.clientId = known.clientId;
    if (known.userId) entry.userId = known.userId;
  }
  return token;
}

/** An API request, past the checks the service makes before any handler: route, method, token, scopes, user. */
export function apiDispatch(
  world: SimWorld,
  req: { method: string; path: string; params: Params; files: ApiContext["files"]; token: string | undefined },
  entry: RequestLogEntry,
): Reply {
  const { method, path, params, files, token } = req;
  const rel = path.slice(API_PREFIX.length) || "/";
  const match = router.match(rel);
  if (!match) return ERR.notFound();
  if (match.route.removed && world.mode === "current") return ERR.notFound();
  if (match.route.removedIn2026 && world.profile === "2026") return ERR.notFound();
  if (!match.route.methods.includes(method as "GET" | "POST")) return ERR.notFound();
  if (!token) return { status: 401, json: errorBody("invalid_request", "Must provide an access_token to access this resource.") };
  const lookup = world.tokens.lookupAccess(token);
  if (!lookup.ok) return ERR.expiredToken();
  const at = lookup.token;
  if (entry.auth === "query" && world.tokens.clients.get(at.clientId)?.oauth21) {
    return {
      status: 401,
      json: errorBody("invalid_request", "Access tokens in the query string are not accepted for this application; send an Authorization: Bearer header."),
    };
  }
  // The service answers client tokens on user endpoints with its "expired user token" 401
  // (docs/service-behaviour.md#client-token-on-user-endpoint).
  if (match.route.userOnly && at.kind === "client") return ERR.expiredToken();
  const missing = match.route.scopes.filter((s) => !at.scopes.includes(s));
  if (missing.length > 0) return ERR.insufficientScope(match.route.scopes.join(" "));
  const user = at.userId ? world.data.users.get(at.userId) : undefined;
  if (at.kind === "user" && (!user || isGone(user))) return ERR.expiredToken();
  const caller: ApiCaller = { token: at, kind: at.kind, user };
  return match.route.handler({ world, method, path, pathParams: match.params, params, files, caller });
}

/** A request to /oauth2/*: authorize, token or revoke, with who it was for recorded in the log. */
export function oauthDispatch(
  world: SimWorld,
  incoming: { method: string; path: string; params: Params; bodyKind: string; authHeader: string | undefined; autoApprove: boolean },
  entry: RequestLogEntry,
): Reply {
  const { method, path, params, bodyKind, authHeader, autoApprove } = incoming;
  const req = { method, path, params, bodyKind, authorization: authHeader, autoApprove };
  let outcome: OAuthOutcome;
  if (path === "/oauth2/authorize" && method === "GET") outcome = handleAuthorize(world, req);
  else if (path === "/oauth2/token" && (method === "GET" || method === "POST")) outcome = handleToken(world, req);
  else if (path === "/oauth2/revoke" && method === "POST") outcome = handleRevoke(world, req);
  else return ERR.notFound();
  if (outcome.clientId) entry.clientId = outcome.clientId;
  if (outcome.userId) entry.userId = outcome.userId;
  return outcome.reply;
}
