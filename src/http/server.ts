// The web dashboard (`dvault worker --http`): dvault's own pages (overview, archive browser, item, failed
// jobs), bull-board at /queues, /healthz and /metrics. Server-rendered, no front-end build.
//
// Security: it listens on 127.0.0.1 unless told otherwise; any other address needs DVAULT_HTTP_TOKEN, and
// with a token every request must carry it (Authorization: Bearer, or the cookie /login?token= sets).
// Before anything else runs (bull-board, /healthz, /metrics and /login included), token or not:
// - Host: only names the dashboard answers for are served (loopback names, the bind address, the host of
//   DVAULT_PUBLIC_URL, DVAULT_HTTP_ALLOWED_HOSTS; on 0.0.0.0 also this machine's addresses), any other or
//   none gets 421, which stops DNS rebinding (src/http/host-guard.ts);
// - the address: NUL or a percent-encoding that is not UTF-8 in the path or query gets 400;
// - Origin: a state-changing request (not GET/HEAD/OPTIONS) whose Origin is not same-origin with an
//   allowed host, or whose Sec-Fetch-Site says another site, gets 403.
// dvault's own state changes are POSTs with a signed double-submit CSRF token; bull-board's API has no
// token of ours, so its writes need a browser's same-origin Origin / Sec-Fetch-Site, or the bearer token.
// Service-provided text is escaped everywhere (src/http/html.ts); errors other than dvault's own UserError
// show a generic message (details in the log); archived files are served by download id, only from inside
// DVAULT_ARCHIVE_DIR.
import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import fs from "node:fs/promises";
import { createServer, STATUS_CODES, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { createBullBoard } from "@bull-board/api";
import { BullMQAdapter } from "@bull-board/api/bullMQAdapter";
import { ExpressAdapter } from "@bull-board/express";
import express, { type NextFunction, type Request, type Response } from "express";
import type { Redis } from "ioredis";
import type { TransportStats } from "../api/http.ts";
import type { Pacer } from "../api/pacer.ts";
import type { TokenManager } from "../api/tokens.ts";
import type { Config } from "../config.ts";
import type { AccountRepository } from "../db/account.repository.ts";
import { ArchiveBrowserRepository } from "../db/archive-browser.repository.ts";
import type { Queryable } from "../db/with-transaction.ts";
import { UserError } from "../errors.ts";
import type { Logger } from "../log.ts";
import { createMetrics } from "../metrics.ts";
import { isQueueName, QueueAdmin } from "../queue/queue-admin.ts";
import { QUEUE_NAMES } from "../queue/queues.ts";
import { resolveArchivePath, SEARCH_KINDS, searchArchive, type SearchKind } from "../search/search.ts";
import { collectStatus, workerHeartbeats } from "../status/collect.ts";
import { createHostGuard, isLoopbackHost } from "./host-guard.ts";
import { archivePage, itemPage, jobsPage, messagePage, overviewPage, PLACEHOLDER_SVG, searchPage, TEXT_SVG } from "./pages.ts";

export { isLoopbackHost };

export const DEFAULT_HTTP_HOST = "127.0.0.1";
export const DEFAULT_HTTP_PORT = 8787;
const PAGE_SIZE = 48;
const TOKEN_COOKIE = "dvault_token";
const CSRF_COOKIE = "dvault_csrf";
const HEALTH_TIMEOUT_MS = 2000;

/** What the dashboard reads; the worker's Services fit. */
export type DashboardDeps = {
  config: Config;
  log: Logger;
  pool: Queryable;
  redis: Redis;
  accounts: AccountRepository;
  pacer: Pacer;
  apiTotals: TransportStats;
  tokens?: (() => TokenManager) | undefined;
  now?: () => number;
};

export type DashboardOptions = {
  host?: string | undefined;
  port?: number | undefined;
  /** DVAULT_HTTP_TOKEN: required for any non-loopback address; when set, every request must carry it. */
  token?: string | undefined;
};

export type RunningDashboard = { url: string; host: string; port: number; close(): Promise<void> };

/** Refuses, in one line, to expose the dashboard beyond this machine without a token. */
export function assertSafeBind(host: string, token: string | undefined): void {
  if (!isLoopbackHost(host) && !token) {
    throw new UserError(
      `refusing to serve the dashboard on ${host} without DVAULT_HTTP_TOKEN: set it (e.g. openssl rand -hex 32) so every request must carry it, or bind 127.0.0.1`,
    );
  }
}

function sameSecret(given: string, expected: string): boolean {
  const a = createHash("sha256").update(given).digest();
  const b = createHash("sha256").update(expected).digest();
  return timingSafeEqual(a, b);
}

function cookies(req: Request): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of (req.headers.cookie ?? "").split(";")) {
    const eq = part.indexOf("=");
    if (eq <= 0) continue;
    const name = part.slice(0, eq).trim();
    try {
      out[name] = decodeURIComponent(part.slice(eq + 1).trim());
    } catch {
      // A malformed cookie is ignored.
    }
  }
  return out;
}

const PAGE_CSP = "default-src 'none'; img-src 'self'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";
const FILE_CSP = "default-src 'none'; img-src 'self'; media-src 'self'; style-src 'unsafe-inline'; sandbox";

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function parseOrigin(origin: string): URL | undefined {
  try {
    return new URL(origin);
  } catch {
    return undefined; // "null" and other opaque origins never match
  }
}

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/** NUL, or a percent-encoding that does not decode to UTF-8, anywhere in a request's path or query. */
function malformedTarget(url: string): boolean {
  try {
    return decodeURIComponent(url).includes("\0");
  } catch {
    return true;
  }
}

function bearerToken(req: Request): string | undefined {
  const header = req.get("authorization");
  return header?.toLowerCase().startsWith("bearer ") ? header.slice(7).trim() : undefined;
}

/** The 4xx an express or body-parser error carries (a path that does not decode, a body too large), if any. */
function clientErrorStatus(err: unknown): number | undefined {
  const status = err && typeof err === "object" && "status" in err ? err.status : undefined;
  return typeof status === "number" && status >= 400 && status < 500 ? status : undefined;
}

function one(value: unknown): string | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  return typeof v === "string" && v.trim() !== "" ? v.trim() : undefined;
}

export type DashboardApp = { app: express.Express; close(): Promise<void> };

export function createDashboardApp(deps: DashboardDeps, options: { token?: string | undefined; host?: string | undefined } = {}): DashboardApp {
  const { config, log } = deps;
  const token = options.token;
  const hosts = createHostGuard({ bindHost: options.host ?? config.httpHost, publicUrl: config.publicUrl, allowedHosts: config.httpAllowedHosts, log });
  const publicOrigin = config.publicUrl ? new URL(config.publicUrl).origin : undefined;
  const now = deps.now ?? Date.now;
  const queues = new QueueAdmin(deps.redis, config.redisPrefix);
  const browser = new ArchiveBrowserRepository(deps.pool);
  const metrics = createMetrics({ ...deps, queues });
  const csrfKey = randomBytes(32);
  const archiveRoot = path.resolve(config.archiveDir);

  const signCsrf = (nonce: string) => `${nonce}.${createHmac("sha256", csrfKey).update(nonce).digest("base64url")}`;
  const validCsrf = (value: string | undefined) => {
    if (!value) return false;
    const nonce = value.split(".")[0] ?? "";
    return /^[A-Za-z0-9_-]{16,}$/.test(nonce) && sameSecret(value, signCsrf(nonce));
  };
  /** The page's CSRF token: the cookie's when it is valid, else a new one set as the cookie. */
  const csrfFor = (req: Request, res: Response): string => {
    const existing = cookies(req)[CSRF_COOKIE];
    if (validCsrf(existing)) return existing as string;
    const fresh = signCsrf(randomBytes(18).toString("base64url"));
    res.append("Set-Cookie", `${CSRF_COOKIE}=${fresh}; Path=/; HttpOnly; SameSite=Strict`);
    return fresh;
  };

  /**
   * Where a request comes from, as the browser tells it: "same" (the dashboard's own pages), "cross" (another
   * site, or an origin that is not one of the dashboard's hosts), "unknown" (neither header: curl, a script).
   */
  const provenance = (req: Request): "same" | "cross" | "unknown" => {
    const site = req.get("sec-fetch-site");
    const origin = req.get("origin");
    if (site !== undefined && site !== "same-origin" && site !== "none") return "cross";
    if (origin === undefined) return site === "same-origin" ? "same" : "unknown";
    const from = parseOrigin(origin);
    if (!from || !hosts.allows(from.host)) return "cross";
    // The host decides, not the scheme: behind a TLS-terminating proxy the browser's origin is https; a proxy
    // that rewrites Host is matched by DVAULT_PUBLIC_URL's origin.
    return from.host === req.get("host")?.toLowerCase() || from.origin === publicOrigin ? "same" : "cross";
  };

  const app = express();
  app.disable("x-powered-by");
  app.set("query parser", "simple");
  // Express's last-resort handler prints stack traces outside "production"; this app never shows one.
  app.set("env", "production");

  app.use((_req, res, next) => {
    res.set({ "X-Content-Type-Options": "nosniff", "Referrer-Policy": "same-origin", "X-Frame-Options": "DENY", "Cache-Control": "no-store" });
    next();
  });

  // First, for every route, token or not: the Host must name this dashboard (421 otherwise, see host-guard.ts).
  app.use(hosts.middleware);

  // An address PostgreSQL or the router cannot take is refused here, not as a 500 from deep inside a handler.
  app.use((req, res, next) => {
    if (!malformedTarget(req.url)) return next();
    log.warn({ method: req.method, path: req.path }, "dashboard: malformed address refused");
    return res.status(400).type("text").send("dvault: the address holds a character dvault does not accept (NUL or invalid UTF-8)\n");
  });

  // Cross-site requests never change state: a browser's Origin or Sec-Fetch-Site must say same-origin.
  app.use((req, res, next) => {
    if (SAFE_METHODS.has(req.method) || provenance(req) !== "cross") return next();
    log.warn({ method: req.method, path: req.path, origin: req.get("origin"), site: req.get("sec-fetch-site") }, "dashboard: cross-site request refused");
    return res.status(403).type("text").send("dvault: cross-site request refused\n");
  });

  // The token, when configured, guards everything: pages, files, bull-board, /healthz and /metrics.
  app.get("/login", (req, res) => {
    if (!token) return res.redirect(303, "/");
    const given = one(req.query.token);
    if (!given || !sameSecret(given, token)) return res.status(401).type("html").send(messagePage(401, "Wrong token", "Open /login?token=<DVAULT_HTTP_TOKEN> with the dashboard's token."));
    res.append("Set-Cookie", `${TOKEN_COOKIE}=${encodeURIComponent(given)}; Path=/; HttpOnly; SameSite=Lax; Max-Age=${30 * 86400}`);
    return res.redirect(303, "/");
  });
  app.use((req, res, next) => {
    if (!token) return next();
    const given = bearerToken(req) ?? cookies(req)[TOKEN_COOKIE];
    if (given && sameSecret(given, token)) return next();
    res.set("WWW-Authenticate", 'Bearer realm="dvault"');
    if (req.accepts(["html", "json", "text"]) === "html") {
      return res.status(401).type("html").send(messagePage(401, "Token required", "This dashboard needs its token: open /login?token=<DVAULT_HTTP_TOKEN> once in this browser, or send Authorization: Bearer <token>."));
    }
    return res.status(401).type("text").send("dvault: this dashboard needs DVAULT_HTTP_TOKEN (Authorization: Bearer <token>)\n");
  });

  // ---- health and metrics ----
  app.get("/healthz", async (_req, res) => {
    const check = async (what: string, run: () => Promise<unknown>) => {
      const started = Date.now();
      try {
        const detail = await withTimeout(run(), HEALTH_TIMEOUT_MS, what);
        return { ok: true, ms: Date.now() - started, ...(detail && typeof detail === "object" ? detail : {}) };
      } catch (err) {
        return { ok: false, ms: Date.now() - started, error: err instanceof Error ? err.message : String(err) };
      }
    };
    const [postgres, redis, workers] = await Promise.all([
      check("PostgreSQL", () => deps.pool.query("SELECT 1")).then(({ ok, ms, ...rest }) => ({ ok, ms, ...("error" in rest ? { error: rest.error } : {}) })),
      check("Redis", () => deps.redis.ping()).then(({ ok, ms, ...rest }) => ({ ok, ms, ...("error" in rest ? { error: rest.error } : {}) })),
      check("worker heartbeats", async () => {
        const beats = await workerHeartbeats(deps.redis, config.redisPrefix, Date.now());
        if (beats.length === 0) throw new Error("no worker heartbeat in the last minute");
        return { count: beats.length };
      }),
    ]);
    const healthy = postgres.ok && redis.ok && workers.ok;
    res.status(healthy ? 200 : 503).json({ status: healthy ? "ok" : "unhealthy", checks: { postgres, redis, workers } });
  });

  app.get("/metrics", async (_req, res) => {
    const text = await metrics.render();
    res.type(metrics.contentType).send(text);
  });

  // ---- bull-board ----
  const board = new ExpressAdapter();
  board.setBasePath("/queues");
  createBullBoard({ queues: QUEUE_NAMES.map((name) => new BullMQAdapter(queues.queue(name))), serverAdapter: board });
  // bull-board's API changes queues without a CSRF token of ours, so its writes need proof they come from the
  // dashboard's own pages (browsers send Origin / Sec-Fetch-Site on every PUT, POST and DELETE), or the
  // bearer token (curl; a cookie alone is ambient and proves nothing). A rebinding page is already refused by
  // the Host check; this is the second lock. Mounted with bull-board so every path that reaches it passes here.
  const boardWrites = (req: Request, res: Response, next: NextFunction) => {
    if (SAFE_METHODS.has(req.method) || provenance(req) === "same") return next();
    const given = bearerToken(req);
    if (token && given && sameSecret(given, token)) return next();
    log.warn({ method: req.method, path: req.originalUrl.split("?")[0] }, "dashboard: bull-board change without a same-origin browser or the token refused");
    return res
      .status(403)
      .type("text")
      .send(`dvault: bull-board changes queues only from the dashboard's own pages${token ? " or with Authorization: Bearer <DVAULT_HTTP_TOKEN>" : ""}\n`);
  };
  app.use("/queues", boardWrites, board.getRouter());

  // ---- dvault's pages ----
  const page = (res: Response, status: number, body: string) => res.status(status).set("Content-Security-Policy", PAGE_CSP).type("html").send(body);

  app.get("/", async (_req, res) => {
    const report = await collectStatus({ ...deps, queues, now });
    page(res, 200, overviewPage(report));
  });

  app.get("/archive", async (req, res) => {
    const q = one(req.query.q);
    if (q) {
      const typeParam = one(req.query.type);
      const type = typeParam && (SEARCH_KINDS as readonly string[]).includes(typeParam) ? (typeParam as SearchKind) : undefined;
      const hits = await searchArchive(deps.pool, { text: q, type, user: one(req.query.artist), limit: 100, archiveDir: config.archiveDir });
      const files = await browser.bestFiles([...new Set(hits.map((h) => h.deviationid).filter((d): d is string => d !== null))]);
      return page(res, 200, searchPage({ query: q, type, hits, files }));
    }
    const pageNo = Math.max(1, Math.min(10_000, Number.parseInt(one(req.query.page) ?? "1", 10) || 1));
    const filter = { artist: one(req.query.artist), folder: one(req.query.folder), collection: one(req.query.collection), archived: one(req.query.archived) === "1" };
    const [choices, found] = await Promise.all([
      browser.filterChoices(),
      browser.recentItems({ ...filter, archivedOnly: filter.archived, limit: PAGE_SIZE, offset: (pageNo - 1) * PAGE_SIZE }),
    ]);
    return page(res, 200, archivePage({ filter, choices, items: found.items, page: pageNo, hasMore: found.hasMore }));
  });

  app.get("/item/:id", async (req, res) => {
    const item = await browser.item(String(req.params.id));
    if (!item) return page(res, 404, messagePage(404, "Not in the archive", "No deviation with this id has been archived."));
    return page(res, 200, itemPage(item));
  });

  app.get("/files/:id", async (req, res) => {
    const file = await browser.storedFile(String(req.params.id));
    const real = file ? await insideArchive(archiveRoot, resolveArchivePath(archiveRoot, file.path)) : undefined;
    if (!file || !real) return res.status(404).type("text").send("not in the archive\n");
    const mime = file.mime ?? "";
    const inline = /^(image|video)\//.test(mime) || (!mime && /\.(jpe?g|png|gif|webp|avif|bmp|mp4|webm)$/i.test(real));
    res.set({ "Content-Security-Policy": FILE_CSP, "Cache-Control": "private, max-age=86400" });
    if (!inline) res.attachment(path.basename(real));
    if (mime) res.type(mime);
    return res.sendFile(real, { dotfiles: "deny", lastModified: true });
  });

  for (const [name, svg] of [["placeholder.svg", PLACEHOLDER_SVG], ["text.svg", TEXT_SVG]] as const) {
    app.get(`/static/${name}`, (_req, res) => {
      res.set({ "Content-Security-Policy": FILE_CSP, "Cache-Control": "public, max-age=86400" }).type("image/svg+xml").send(svg);
    });
  }

  app.get("/jobs", async (req, res) => {
    const queueParam = one(req.query.queue);
    const queue = queueParam && isQueueName(queueParam) ? queueParam : undefined;
    const [failed, counts] = await Promise.all([queues.failed({ queue, limit: 200 }), queues.counts()]);
    const csrf = csrfFor(req, res);
    const queueRows = counts.map((c) => ({ ...c, oldestWaitingS: c.oldestWaitingMs === null ? null : Math.round(c.oldestWaitingMs / 1000) }));
    page(res, 200, jobsPage({ failed, queues: queueRows, csrf, notice: one(req.query.done), queue }));
  });

  const form = express.urlencoded({ extended: false, limit: "8kb", parameterLimit: 20 });
  const requireCsrf = (req: Request, res: Response, next: NextFunction) => {
    const body = (req.body ?? {}) as Record<string, unknown>;
    const sent = one(body._csrf);
    const cookie = cookies(req)[CSRF_COOKIE];
    if (!sent || !cookie || !validCsrf(sent) || !sameSecret(sent, cookie)) {
      log.warn({ path: req.path }, "dashboard: request without a valid CSRF token refused");
      return res.status(403).type("text").send("dvault: missing or invalid CSRF token; reload the page and try again\n");
    }
    return next();
  };
  const backToJobs = (res: Response, notice: string, queue?: string) => res.redirect(303, `/jobs?${new URLSearchParams({ ...(queue ? { queue } : {}), done: notice }).toString()}`);

  app.post("/jobs/retry", form, requireCsrf, async (req, res) => {
    const body = req.body as Record<string, unknown>;
    const id = one(body.id);
    const queueName = one(body.queue);
    if (!id || !queueName || !isQueueName(queueName)) return res.status(400).type("text").send("dvault: name a job id and its queue\n");
    const outcome = await queues.retry(id, queueName);
    log.info({ queue: queueName, jobId: id, retried: outcome.retried.length }, "dashboard: retry");
    return backToJobs(res, outcome.retried.length ? `Retried ${queueName}/${id}.` : `Not retried: ${outcome.skipped[0]?.reason ?? "unknown"}`);
  });

  app.post("/jobs/retry-all", form, requireCsrf, async (req, res) => {
    const queueName = one((req.body as Record<string, unknown>).queue);
    const queue = queueName && isQueueName(queueName) ? queueName : undefined;
    const outcome = await queues.retryAll({ queue });
    log.info({ queue, retried: outcome.retried.length }, "dashboard: retry all");
    return backToJobs(res, `Retried ${outcome.retried.length} job(s)${outcome.skipped.length ? `, ${outcome.skipped.length} not retried` : ""}.`, queue);
  });

  for (const action of ["pause", "resume"] as const) {
    app.post(`/jobs/${action}`, form, requireCsrf, async (req, res) => {
      const queueName = one((req.body as Record<string, unknown>).queue);
      if (!queueName || !isQueueName(queueName)) return res.status(400).type("text").send("dvault: name a queue\n");
      await (action === "pause" ? queues.pause(queueName) : queues.resume(queueName));
      log.info({ queue: queueName }, `dashboard: ${action}`);
      return backToJobs(res, `${queueName} ${action === "pause" ? "paused" : "resumed"}.`);
    });
  }

  app.use((_req, res) => {
    page(res, 404, messagePage(404, "Not found", "There is no such page."));
  });
  app.use((err: unknown, req: Request, res: Response, _next: NextFunction) => {
    const status = clientErrorStatus(err);
    if (status !== undefined) {
      log.warn({ err, path: req.path }, "dashboard: request refused");
      if (!res.headersSent) res.status(status).type("text").send(`dvault: the request was refused (HTTP ${status} ${STATUS_CODES[status] ?? ""})\n`);
      return;
    }
    log.error({ err, path: req.path }, "dashboard: request failed");
    if (res.headersSent) return;
    // Only dvault's own UserError speaks to the reader; any other message (PostgreSQL's, a bug's) may carry
    // internals, so the page says where to look instead.
    page(res, 500, messagePage(500, "Something failed", err instanceof UserError ? err.message : "Something failed; the worker's log has the details."));
  });

  return { app, close: () => queues.close() };
}

/** The real path of `candidate` when it is a file inside the archive root (symlinks resolved), else undefined. */
export async function insideArchive(root: string, candidate: string): Promise<string | undefined> {
  try {
    const [realRoot, real] = await Promise.all([fs.realpath(root), fs.realpath(candidate)]);
    if (real !== realRoot && !real.startsWith(realRoot + path.sep)) return undefined;
    const stat = await fs.stat(real);
    return stat.isFile() ? real : undefined;
  } catch {
    return undefined;
  }
}

/** Starts the dashboard; refuses a non-loopback bind without a token, and a busy port, in one line. */
export async function startDashboard(deps: DashboardDeps, options: DashboardOptions = {}): Promise<RunningDashboard> {
  const host = options.host ?? DEFAULT_HTTP_HOST;
  const port = options.port ?? DEFAULT_HTTP_PORT;
  assertSafeBind(host, options.token);
  const { app, close } = createDashboardApp(deps, { token: options.token, host });
  const server: Server = await new Promise((resolve, reject) => {
    // Node's own 400 for a request without Host would pre-empt the host check's 421, which says what to do.
    const s = createServer({ requireHostHeader: false }, app).listen(port, host);
    s.once("listening", () => resolve(s));
    s.once("error", (err: NodeJS.ErrnoException) => {
      reject(err.code === "EADDRINUSE" ? new UserError(`cannot serve the dashboard on ${host}:${port}: the port is in use (choose another with --http-port)`) : err);
    });
  });
  const address = server.address() as AddressInfo;
  const shownHost = address.family === "IPv6" ? `[${address.address}]` : address.address;
  const url = `http://${shownHost}:${address.port}`;
  deps.log.info({ url, token: options.token ? "required" : "none" }, "dashboard listening");
  return {
    url,
    host: address.address,
    port: address.port,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await close();
    },
  };
}
