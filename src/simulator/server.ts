// The simulator: a local node:http server that plays DeviantArt's OAuth2 API for tests, the demo and
// experiments — faithful error bodies, paging, token rotation and throttling, with fault injection.
import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type RequestListener, type ServerResponse } from "node:http";
import { createServer as createTlsServer } from "node:https";
import type { AddressInfo, Socket } from "node:net";
import type { TLSSocket } from "node:tls";
import { applyActivity, type ActivityInput } from "./activity.ts";
import { sendCdnFile, serveCdn, deviationBytes, type CdnHook, type CdnSettings } from "./cdn.ts";
import { createClock, type ClockMode } from "./clock.ts";
import { handleControl } from "./control.ts";
import { generateDataset, isGone, type DatasetOptions, type GroundTruth, type SimDeviation } from "./dataset.ts";
import { fileSha256, simFile } from "./files.ts";
import { API_PREFIX, FaultStore, corruptBody, faultReply, type FaultRule } from "./faults.ts";
import { ERR, Params, errorBody, parseBody, parseParams, readBody, type ParamMap, type Reply } from "./http.ts";
import { handleAuthorize, handleRevoke, handleToken, type OAuthOutcome } from "./oauth.ts";
import { DEFAULT_DOWNLOAD_QUOTA, DownloadQuota, type QuotaStatus } from "./quota.ts";
import { Router } from "./router.ts";
import { allRoutes } from "./routes/index.ts";
import { createRng } from "./rng.ts";
import { CLIENT_TOKEN_SCOPES, KNOWN_SCOPES, TokenStore, type SimClient } from "./tokens.ts";
import { OFFSET_CEILING } from "./paging.ts";
import type { BucketPageKey } from "./variance.ts";
import { buildIndex, type ApiCaller, type ApiContext, type ApiRoute, type QuotaExhaustion, type SimMode, type SimProfile, type SimWorld } from "./world.ts";

export type { SimClient } from "./tokens.ts";
export type { FaultRule, FaultKind } from "./faults.ts";
export type * from "./dataset.ts";
export type { ActivityInput } from "./activity.ts";
export type { CdnHook, CdnRequest, CdnSettings, SimFile } from "./cdn.ts";
export type { QuotaStatus } from "./quota.ts";
export type { BucketPageKey, GalleryVariance, VarianceTruth } from "./variance.ts";
export type { QuotaExhaustion, SimMode, SimProfile } from "./world.ts";

export type SimulatorOptions = {
  /** 0 = ephemeral (default). */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  seed?: number;
  /** Dataset sizes, plus hostileNames and largeFiles for the downloads work. */
  dataset?: DatasetOptions;
  /** current: removed endpoints answer the real 404; legacy: they answer with data. */
  mode?: SimMode;
  accessTokenLifetimeS?: number;
  clients?: SimClient[];
  /** /oauth2/authorize redirects straight back with a code (default true); otherwise it serves an approve page. */
  autoApprove?: boolean;
  /** Initial simulated time (default 2026-11-02T09:00:00Z). */
  startTime?: Date;
  /** "frozen" (default): simulated time moves only when advanced; "real": it also follows the wall clock. */
  clockMode?: ClockMode;
  /** Added to every request (ms of real time), before faults. */
  latencyMs?: number;
  /** Extension point for the CDN (/_cdn/*): a hook may answer a request itself. */
  cdnHooks?: CdnHook[];
  /** Weekly original downloads per account (/deviation/download), default 10 (a free account). */
  downloadQuota?: number;
  /** Per-connection bandwidth cap of the CDN in bytes per second (default: none). */
  cdnBytesPerSecond?: number;
  /** Whether the CDN honours Range requests (default true). */
  cdnRanges?: boolean;
  /** Original sizes in bytes by deviationid (streamed, so 1 GB is fine). */
  fileSizes?: Record<string, number>;
  /** Oldest request-log entries are dropped beyond this many (default 200 000), so a long-running CLI stays small. */
  logLimit?: number;
  /**
   * Draw what the real service allows beyond the base dataset, seeded (default off; see dataset.variance and
   * `Simulator.variance`): unfiled gallery deviations, second folders, empty folders, gone authors of favourites,
   * locked premium works, and the page key of /feed/home/{bucketid}. Same as `dataset.variance`.
   */
  variance?: boolean;
  /** "classic" (default): as today. "2026": current mode, and the comment endpoints removed on 2026-08-31 answer 404. */
  profile?: SimProfile;
  /** Offsets above this answer an empty last page on every offset listing (default 10 000). */
  offsetCeiling?: number;
  /** "400" (default): over-quota downloads answer "Free download limit reached."; "500": a bare HTTP 500, as in March 2026. */
  quotaExhaustion?: QuotaExhaustion;
};

/** What variance drew for this instance (`enabled` false: the defaults). */
export type SimVariance = { enabled: boolean; bucketKey: BucketPageKey };

export type RequestLogEntry = {
  seq: number;
  /** Simulated time, ISO. */
  at: string;
  /** Date.now() when received. */
  realMs: number;
  method: string;
  /** As received, without the query. */
  path: string;
  /** Template, e.g. "/api/v1/oauth2/gallery/{folderid}" or "/oauth2/token"; "(unknown)" when unrouted. */
  route: string;
  query: ParamMap;
  form: ParamMap;
  /** 0 when the socket was reset. */
  status: number;
  auth: "bearer" | "query" | "body" | "basic" | "none";
  userId?: string;
  clientId?: string;
  fault?: string;
};

export type Simulator = {
  url: string;
  apiUrl: string;
  clock: { now(): Date; advance(ms: number): void; set(date: Date): void };
  truth: GroundTruth;
  faults: { add(rule: FaultRule): void; clear(): void };
  log(): RequestLogEntry[];
  clearLog(): void;
  /** Keyed by method and route template relative to the API root ("GET /gallery/{folderid}", "POST /oauth2/token"). */
  stats(): Record<string, { count: number; byStatus: Record<string, number> }>;
  issueUserToken(opts?: { clientId?: string; userId?: string; scopes?: string[] }): { access_token: string; refresh_token: string; expires_in: number; scope: string };
  issueClientToken(opts?: { clientId?: string }): { access_token: string; expires_in: number };
  expireAccessTokens(): void;
  /** Changes the world as if users had been active (see ActivityInput). */
  activity(input: ActivityInput): Record<string, unknown>;
  /** The exact bytes /_cdn serves for a deviation's original file (small files only; see fileSha256). */
  fileBytes(deviationid: string): Buffer;
  /** sha256 (hex) of a deviation's original as the CDN serves it, computed by streaming and cached. */
  fileSha256(deviationid: string): Promise<string>;
  /** Size in bytes of a deviation's original. */
  fileSize(deviationid: string): number;
  /** Successful /deviation/download calls of this user (or "client:<clientId>") in the current simulated week. */
  quotaUsed(userId: string): number;
  /** Allowance, usage and the next reset of a user's weekly quota. */
  quotaStatus(userId: string): QuotaStatus;
  /** Sets the weekly allowance of one user, or (without userId) of everyone without their own. */
  setDownloadQuota(opts: { userId?: string; allowance: number }): void;
  /** Changes the CDN's bandwidth cap (null = none) and Range support, effective immediately (mid-transfer too). */
  setCdn(settings: Partial<CdnSettings>): CdnSettings;
  /**
   * Serves the same simulator over TLS too, on a port of its own, with a certificate the caller made (one for
   * www.deviantart.com lets a program that only talks to the real service reach it through a CONNECT proxy).
   * Links in answers given over TLS (CDN URLs, OAuth redirects) use the origin the request named in its Host.
   */
  listenTls(opts: { key: string | Buffer; cert: string | Buffer; host?: string; port?: number }): Promise<{ port: number }>;
  mode: SimMode;
  profile: SimProfile;
  variance: SimVariance;
  close(): Promise<void>;
};

export const DEFAULT_START_TIME = new Date("2026-11-02T09:00:00Z");
export const DEFAULT_CLIENTS: SimClient[] = [
  {
    clientId: "1001",
    clientSecret: "sim-secret-1001",
    // The https URI lets the implicit grant (https only) be exercised.
    redirectUris: ["http://127.0.0.1:8788/callback", "https://127.0.0.1:8788/callback"],
    implicit: true,
  },
  { clientId: "2002", redirectUris: ["http://127.0.0.1:8788/callback"], oauth21: true },
];

const router = new Router<ApiRoute>(allRoutes);

const OAUTH_ROUTES: Record<string, string> = {
  "/oauth2/authorize": "/oauth2/authorize",
  "/oauth2/token": "/oauth2/token",
  "/oauth2/revoke": "/oauth2/revoke",
};

const CDN_TEMPLATE = "/_cdn/{variant}/{deviationid}/{filename}";

function shortRoute(route: string): string {
  return route.startsWith(API_PREFIX + "/") ? route.slice(API_PREFIX.length) : route;
}

function positiveOrNull(n: number | undefined): number | null {
  return n !== undefined && Number.isFinite(n) && n > 0 ? n : null;
}

/** Userids are uppercase UUIDs; "client:<id>" keys (client-token downloads) are kept as given. */
function quotaKeyOf(userId: string): string {
  return userId.startsWith("client:") ? userId : userId.toUpperCase();
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function serialise(reply: Reply): { status: number; headers: Record<string, string>; body: Buffer | string } {
  if ("redirect" in reply) return { status: reply.status, headers: { location: reply.redirect, "content-type": "text/html; charset=utf-8" }, body: "" };
  if ("json" in reply) {
    return { status: reply.status, headers: { "content-type": "application/json; charset=utf-8", ...reply.headers }, body: JSON.stringify(reply.json) };
  }
  return { status: reply.status, headers: { "content-type": reply.contentType, ...reply.headers }, body: reply.text };
}

export async function startSimulator(options: SimulatorOptions = {}): Promise<Simulator> {
  const seed = options.seed ?? 1;
  const mode: SimMode = options.mode ?? "current";
  const profile: SimProfile = options.profile ?? "classic";
  if (profile === "2026" && mode !== "current") throw new RangeError(`profile "2026" is the current service: it needs mode "current", got "${mode}"`);
  const offsetCeiling = options.offsetCeiling ?? OFFSET_CEILING;
  if (!Number.isSafeInteger(offsetCeiling) || offsetCeiling < 0) throw new RangeError(`offsetCeiling must be a non-negative integer, got ${offsetCeiling}`);
  const quotaExhaustion: QuotaExhaustion = options.quotaExhaustion ?? "400";
  if (quotaExhaustion !== "400" && quotaExhaustion !== "500") throw new RangeError(`quotaExhaustion is "400" or "500", got ${String(quotaExhaustion)}`);
  const start = options.startTime ?? DEFAULT_START_TIME;
  const clock = createClock(start, options.clockMode ?? "frozen");
  const datasetOptions: DatasetOptions = options.variance === undefined ? (options.dataset ?? {}) : { ...options.dataset, variance: options.variance };
  const data = generateDataset(seed, datasetOptions, start);
  for (const [id, bytes] of Object.entries(options.fileSizes ?? {})) {
    const d = data.deviations.get(id.toUpperCase());
    if (!d?.image) throw new Error(`fileSizes: no simulated deviation ${id} with a file`);
    if (!Number.isSafeInteger(bytes) || bytes < 1) throw new RangeError(`fileSizes: ${id} needs a positive integer size, got ${bytes}`);
    d.image.filesize = bytes;
  }
  const world: SimWorld = {
    mode,
    profile,
    offsetCeiling,
    quotaExhaustion,
    data,
    clock,
    rng: createRng(seed ^ 0x5eed5eed),
    tokens: new TokenStore(clock, options.clients ?? DEFAULT_CLIENTS, options.accessTokenLifetimeS ?? 3600),
    baseUrl: "",
    cdnKey: randomBytes(32),
    cdn: { bytesPerSecond: positiveOrNull(options.cdnBytesPerSecond), ranges: options.cdnRanges ?? true },
    quota: new DownloadQuota(options.downloadQuota ?? DEFAULT_DOWNLOAD_QUOTA),
    index: buildIndex(data),
  };
  const faults = new FaultStore(createRng(seed ^ 0xfa017));
  const autoApprove = options.autoApprove ?? true;
  const cdnHooks = options.cdnHooks ?? [];
  const logLimit = Math.max(1, options.logLimit ?? 200_000);
  let logEntries: RequestLogEntry[] = [];
  let seq = 0;
  const sockets = new Set<Socket>();

  function issueUserToken(opts: { clientId?: string; userId?: string; scopes?: string[] } = {}) {
    const clientId = opts.clientId ?? "1001";
    if (!world.tokens.clients.has(clientId)) throw new Error(`no simulated client ${clientId}`);
    const userId = opts.userId ?? data.ownerId;
    if (!data.users.has(userId)) throw new Error(`no simulated user ${userId}`);
    const scopes = opts.scopes ?? [...KNOWN_SCOPES];
    const grantId = world.tokens.newGrantId();
    const access = world.tokens.issueAccess({ kind: "user", clientId, userId, scopes, grantId });
    const refresh = world.tokens.issueRefresh({ clientId, userId, scopes, grantId });
    return { access_token: access.token, refresh_token: refresh.token, expires_in: world.tokens.accessLifetimeS, scope: scopes.join(" ") };
  }

  function issueClientToken(opts: { clientId?: string } = {}) {
    const clientId = opts.clientId ?? "1001";
    if (!world.tokens.clients.has(clientId)) throw new Error(`no simulated client ${clientId}`);
    const access = world.tokens.issueAccess({ kind: "client", clientId, scopes: CLIENT_TOKEN_SCOPES });
    return { access_token: access.token, expires_in: world.tokens.accessLifetimeS };
  }

  function stats(): Record<string, { count: number; byStatus: Record<string, number> }> {
    const out: Record<string, { count: number; byStatus: Record<string, number> }> = {};
    for (const e of logEntries) {
      const key = `${e.method} ${shortRoute(e.route)}`;
      const s = (out[key] ??= { count: 0, byStatus: {} });
      s.count++;
      s.byStatus[String(e.status)] = (s.byStatus[String(e.status)] ?? 0) + 1;
    }
    return out;
  }

  /** Who is calling and how (recorded before faults, so throttled requests are attributed too). */
  function identify(isApi: boolean, isOAuth: boolean, params: Params, authHeader: string | undefined, entry: RequestLogEntry): string | undefined {
    if (isOAuth) {
      const basic = /^Basic\s/i.test(authHeader ?? "");
      entry.auth = basic ? "basic" : params.form.client_secret !== undefined || params.form.client_id !== undefined ? "body" : params.query.client_id !== undefined ? "query" : "none";
      const id = basic ? Buffer.from((authHeader ?? "").replace(/^Basic\s+/i, ""), "base64").toString("utf8").split(":")[0] : params.get("client_id");
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

  function apiDispatch(method: string, path: string, params: Params, files: ApiContext["files"], token: string | undefined, entry: RequestLogEntry): Reply {
    const rel = path.slice(API_PREFIX.length) || "/";
    const match = router.match(rel);
    if (!match) return ERR.notFound();
    if (match.route.removed && mode === "current") return ERR.notFound();
    if (match.route.removedIn2026 && profile === "2026") return ERR.notFound();
    if (!match.route.methods.includes(method as "GET" | "POST")) return ERR.notFound();
    if (!token) return { status: 401, json: errorBody("invalid_request", "Must provide an access_token to access this resource.") };
    const lookup = world.tokens.lookupAccess(token);
    if (!lookup.ok) return ERR.expiredToken();
    const at = lookup.token;
    if (entry.auth === "query" && world.tokens.clients.get(at.clientId)?.oauth21) {
      return { status: 401, json: errorBody("invalid_request", "Access tokens in the query string are not accepted for this application; send an Authorization: Bearer header.") };
    }
    // The service answers client tokens on user endpoints with its "expired user token" 401
    // (docs/service-behaviour.md#client-token-on-user-endpoint).
    if (match.route.userOnly && at.kind === "client") return ERR.expiredToken();
    const missing = match.route.scopes.filter((s) => !at.scopes.includes(s));
    if (missing.length > 0) return ERR.insufficientScope(match.route.scopes.join(" "));
    const user = at.userId ? data.users.get(at.userId) : undefined;
    if (at.kind === "user" && (!user || isGone(user))) return ERR.expiredToken();
    const caller: ApiCaller = { token: at, kind: at.kind, user };
    return match.route.handler({ world, method, path, pathParams: match.params, params, files, caller });
  }

  function oauthDispatch(method: string, path: string, params: Params, bodyKind: string, authHeader: string | undefined, entry: RequestLogEntry): Reply {
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

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const realMs = Date.now();
    const method = (req.method ?? "GET").toUpperCase();
    const url = new URL(req.url ?? "/", "http://sim.invalid");
    const path = url.pathname;
    const raw = await readBody(req);
    if (path.startsWith("/_sim/") || path === "/_sim") {
      const reply = await handleControl(controlTarget, method, path, url.searchParams, raw);
      return send(res, reply);
    }
    const query = parseParams(url.searchParams);
    const body = parseBody(raw, req.headers["content-type"]);
    const params = new Params(query, body.form);
    const entry: RequestLogEntry = {
      seq: ++seq,
      at: clock.now().toISOString(),
      realMs,
      method,
      path,
      route: "(unknown)",
      query,
      form: body.form,
      status: 0,
      auth: "none",
    };
    logEntries.push(entry);
    if (logEntries.length > logLimit) logEntries.splice(0, logEntries.length - logLimit);
    const isApi = path === API_PREFIX || path.startsWith(API_PREFIX + "/");
    const isCdn = path.startsWith("/_cdn/");
    if (OAUTH_ROUTES[path]) entry.route = OAUTH_ROUTES[path] as string;
    else if (isCdn) entry.route = CDN_TEMPLATE;
    else if (isApi) {
      const m = router.match(path.slice(API_PREFIX.length) || "/");
      if (m) entry.route = API_PREFIX + m.route.template;
    }
    const authHeader = req.headers.authorization;
    const token = identify(isApi, OAUTH_ROUTES[path] !== undefined, params, authHeader, entry);
    const decision = faults.decide({ method, path, template: entry.route === "(unknown)" ? undefined : entry.route });
    const latency = (options.latencyMs ?? 0) + decision.latencyMs;
    if (decision.applied.length > 0) entry.fault = decision.applied.join(",");
    if (latency > 0) await sleep(latency);
    const fault = decision.fault;
    if (fault && fault.kind !== "reset" && fault.kind !== "malformed_json") {
      const reply = faultReply(fault.kind);
      if (reply) {
        entry.status = reply.status;
        return send(res, reply);
      }
    }
    // Over TLS the links follow the name the client used (docs in Simulator.listenTls); dispatch is synchronous,
    // so the world's base URL is swapped for exactly this request.
    const origin = (req.socket as TLSSocket).encrypted && req.headers.host ? `https://${req.headers.host}` : undefined;
    const ownBase = world.baseUrl;
    if (origin) world.baseUrl = origin;
    let reply: Reply;
    try {
      if (isCdn && fault?.kind !== "reset") {
        const result = serveCdn(world, { method, path, token: url.searchParams.get("token") ?? undefined, headers: req.headers }, cdnHooks);
        if (result.kind === "file") {
          entry.status = result.status;
          const resetAfter = fault?.kind === "reset_mid_body" ? (fault.atByte ?? Math.floor((result.end - result.start) / 2)) : undefined;
          return sendCdnFile({ req, res, result, settings: world.cdn, ...(resetAfter !== undefined ? { resetAfter } : {}) });
        }
        reply = result.reply;
      } else if (isApi) reply = apiDispatch(method, path, params, body.files, token, entry);
      else if (OAUTH_ROUTES[path]) reply = oauthDispatch(method, path, params, body.kind, authHeader, entry);
      else if (isCdn) reply = { status: 404, text: "Not Found", contentType: "text/plain" };
      else if (path === "/" && method === "GET") reply = { status: 200, contentType: "text/html; charset=utf-8", text: "<!doctype html><title>dvault simulator</title><p>dvault simulator: API at /api/v1/oauth2, OAuth at /oauth2/*</p>" };
      else reply = ERR.notFound();
    } finally {
      world.baseUrl = ownBase;
    }
    if (fault?.kind === "reset") {
      // The request was processed (a refresh token is consumed) but the response is lost.
      entry.status = 0;
      req.socket.destroy();
      return;
    }
    entry.status = reply.status;
    if (fault?.kind === "reset_mid_body") {
      // Headers and part of the body, then the connection drops.
      const full = serialise(reply);
      const bytes = typeof full.body === "string" ? Buffer.from(full.body) : full.body;
      const cut = Math.max(0, Math.min(bytes.length, fault.atByte ?? Math.floor(bytes.length / 2)));
      res.writeHead(full.status, { ...full.headers, "content-length": bytes.length });
      res.write(bytes.subarray(0, cut), () => {
        req.socket.destroy();
      });
      return;
    }
    if ((fault?.kind === "wrong_shape" || fault?.kind === "broken_item") && "json" in reply) {
      reply = { ...reply, json: corruptBody(fault.kind, reply.json) };
    }
    if (fault?.kind === "malformed_json") {
      const full = serialise(reply);
      const text = typeof full.body === "string" ? full.body : full.body.toString("utf8");
      const truncated = text.length > 2 ? text.slice(0, Math.max(1, Math.floor(text.length / 2))) : '{"has_more":tr';
      entry.status = 200;
      res.writeHead(200, { "content-type": "application/json; charset=utf-8", "content-length": Buffer.byteLength(truncated) });
      res.end(truncated);
      return;
    }
    send(res, reply);
  }

  function send(res: ServerResponse, reply: Reply): void {
    const out = serialise(reply);
    const bodyLength = typeof out.body === "string" ? Buffer.byteLength(out.body) : out.body.length;
    res.writeHead(out.status, { ...out.headers, "content-length": bodyLength });
    res.end(out.body);
  }

  const sim: Simulator = {
    url: "",
    apiUrl: "",
    mode,
    profile,
    variance: { enabled: data.variance !== undefined, bucketKey: data.variance?.bucketKey ?? "items" },
    clock: { now: () => clock.now(), advance: (ms) => clock.advance(ms), set: (d) => clock.set(d) },
    truth: data,
    faults: { add: (rule) => faults.add(rule), clear: () => faults.clear() },
    log: () => logEntries.slice(),
    clearLog: () => {
      logEntries = [];
    },
    stats,
    issueUserToken,
    issueClientToken,
    expireAccessTokens: () => world.tokens.expireAllAccess(),
    activity: (input) => applyActivity(world, input),
    fileBytes: (id) => deviationBytes(deviationById(id), "original"),
    fileSha256: (id) => {
      const file = simFile(deviationById(id), "original", "", "");
      if (!file) return Promise.reject(new Error(`simulated deviation ${id} has no original file`));
      return fileSha256(file);
    },
    fileSize: (id) => {
      const file = simFile(deviationById(id), "original", "", "");
      if (!file) throw new Error(`simulated deviation ${id} has no original file`);
      return file.size;
    },
    quotaUsed: (userId) => world.quota.used(quotaKeyOf(userId), clock.nowMs()),
    quotaStatus: (userId) => world.quota.status(quotaKeyOf(userId), clock.nowMs()),
    setDownloadQuota: ({ userId, allowance }) => world.quota.setAllowance(allowance, userId === undefined ? undefined : quotaKeyOf(userId)),
    setCdn: (settings) => {
      if (settings.bytesPerSecond !== undefined) world.cdn.bytesPerSecond = positiveOrNull(settings.bytesPerSecond ?? undefined);
      if (settings.ranges !== undefined) world.cdn.ranges = settings.ranges;
      return { ...world.cdn };
    },
    listenTls: () => Promise.reject(new Error("the simulator is not listening yet")),
    close: async () => {
      await Promise.all(
        [server, ...tlsServers].map(
          (srv) =>
            new Promise<void>((resolve) => {
              srv.close(() => resolve());
              for (const s of sockets) s.destroy();
            }),
        ),
      );
    },
  };

  function deviationById(id: string): SimDeviation {
    const d = data.deviations.get(id.toUpperCase());
    if (!d) throw new Error(`no simulated deviation ${id}`);
    return d;
  }

  const controlTarget = { sim, world, faults };

  const onRequest: RequestListener = (req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) {
        const message = err instanceof Error ? err.message : String(err);
        send(res, { status: 500, json: errorBody("server_error", "Internal server error", { sim_error: message }) });
      } else res.destroy();
    });
  };
  const server = createServer(onRequest);
  server.keepAliveTimeout = 5000;
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  };
  server.on("connection", track);
  const tlsServers: Array<ReturnType<typeof createTlsServer>> = [];
  sim.listenTls = async ({ key, cert, host, port }) => {
    const tls = createTlsServer({ key, cert }, onRequest);
    tls.keepAliveTimeout = 5000;
    tls.on("connection", track);
    tlsServers.push(tls);
    await new Promise<void>((resolve, reject) => {
      tls.once("error", reject);
      tls.listen(port ?? 0, host ?? "127.0.0.1", () => {
        tls.off("error", reject);
        resolve();
      });
    });
    return { port: (tls.address() as AddressInfo).port };
  };
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, options.host ?? "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === "IPv6" ? `[${address.address}]` : address.address;
  world.baseUrl = `http://${host}:${address.port}`;
  sim.url = world.baseUrl;
  sim.apiUrl = world.baseUrl + API_PREFIX;
  return sim;
}
