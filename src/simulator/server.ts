// The simulator: a local node:http server that plays DeviantArt's OAuth2 API for tests, the demo and
// experiments — faithful error bodies, paging, token rotation and throttling, with fault injection. This
// file is the server (sockets, TLS, the life of one request); routing is in dispatch.ts, the world in
// create-world.ts and world-controls.ts, faulty answers in faults.ts and respond.ts, the CDN in cdn.ts.
import { createServer, type IncomingMessage, type RequestListener, type ServerResponse } from "node:http";
import { createServer as createTlsServer } from "node:https";
import type { AddressInfo, Socket } from "node:net";
import type { TLSSocket } from "node:tls";
import { sendCdnFile, serveCdn } from "./cdn.ts";
import { handleControl } from "./control.ts";
import { createWorld } from "./create-world.ts";
import { apiDispatch, identify, oauthDispatch, routeOf } from "./dispatch.ts";
import { API_PREFIX, FaultStore, faultReply } from "./faults.ts";
import { ERR, Params, errorBody, parseBody, parseParams, readBody, type Reply } from "./http.ts";
import type { Simulator, SimulatorOptions } from "./options.ts";
import { RequestLog } from "./request-log.ts";
import { send, sendWithFault } from "./respond.ts";
import { createRng } from "./rng.ts";
import { worldControls } from "./world-controls.ts";

export type { SimClient } from "./tokens.ts";
export type { FaultRule, FaultKind } from "./faults.ts";
export type * from "./dataset.ts";
export type { ActivityInput } from "./activity.ts";
export type { CdnHook, CdnRequest } from "./cdn.ts";
export type { SimFile } from "./files.ts";
export type { QuotaStatus } from "./quota.ts";
export type { CdnSettings, QuotaExhaustion, SimMode, SimProfile } from "./world.ts";
export { DEFAULT_CLIENTS, DEFAULT_START_TIME, type SimVariance, type Simulator, type SimulatorOptions } from "./options.ts";
export type { RequestLogEntry } from "./request-log.ts";
export type { VelocityKeyState, VelocitySettings } from "./velocity.ts";

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export async function startSimulator(options: SimulatorOptions = {}): Promise<Simulator> {
  const world = createWorld(options);
  const { data, clock } = world;
  const faults = new FaultStore(createRng((options.seed ?? 1) ^ 0xfa017));
  const autoApprove = options.autoApprove ?? true;
  const cdnHooks = options.cdnHooks ?? [];
  const requests = new RequestLog(Math.max(1, options.logLimit ?? 200_000));
  const sockets = new Set<Socket>();

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
    const { isApi, isOAuth, isCdn, route } = routeOf(path);
    const entry = requests.start({ at: clock.now().toISOString(), realMs, method, path, route, query, form: body.form, status: 0, auth: "none" });
    const authHeader = req.headers.authorization;
    const token = identify(world, { isApi, isOAuth, params, authHeader }, entry);
    // The velocity filter watches API calls before anything else answers them (docs/service-behaviour.md#rate-limits).
    const velocityKey = isApi ? world.velocity.keyOf(entry) : undefined;
    if (velocityKey !== undefined) {
      const verdict = world.velocity.admit(velocityKey, clock.nowMs());
      if (verdict.refused) {
        entry.fault = "velocity";
        entry.status = verdict.reply.status;
        return send(res, verdict.reply);
      }
    }
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
      } else if (isApi) reply = apiDispatch(world, { method, path, params, files: body.files, token }, entry);
      else if (isOAuth) reply = oauthDispatch(world, { method, path, params, bodyKind: body.kind, authHeader, autoApprove }, entry);
      else if (isCdn) reply = { status: 404, text: "Not Found", contentType: "text/plain" };
      else if (path === "/" && method === "GET")
        reply = {
          status: 200,
          contentType: "text/html; charset=utf-8",
          text: "<!doctype html><title>dvault simulator</title><p>dvault simulator: API at /api/v1/oauth2, OAuth at /oauth2/*</p>",
        };
      else reply = ERR.notFound();
    } finally {
      world.baseUrl = ownBase;
    }
    sendWithFault({ req, res, reply, fault, entry });
  }

  const sim: Simulator = {
    url: "",
    apiUrl: "",
    mode: world.mode,
    profile: world.profile,
    variance: { enabled: data.variance !== undefined, bucketKey: data.variance?.bucketKey ?? "items" },
    clock: { now: () => clock.now(), advance: (ms) => clock.advance(ms), set: (d) => clock.set(d) },
    truth: data,
    faults: { add: (rule) => faults.add(rule), clear: () => faults.clear() },
    log: () => requests.list(),
    clearLog: () => requests.clear(),
    stats: () => requests.stats(),
    ...worldControls(world),
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
