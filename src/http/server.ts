// The web dashboard (`dvault worker --http`): dvault's own pages (overview, archive browser, item, failed
// jobs, feeds, "Connect DeviantArt" with its /oauth/callback: src/http/routes/connect.ts), bull-board at
// /queues, /healthz and /metrics, and the Atom feeds for feed readers under /feeds/<feed token>/
// (src/http/routes/feeds.ts). Server-rendered, no front-end build.
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
// The feeds come after these checks and before the token's: a feed reader carries its own feed token in the
// path instead of the dashboard's (a wrong or revoked one gets 404). So do the digests' thumbnail links: a
// signature for exactly one size of one thumbnail opens that one (src/storage/thumb-link.ts), nothing else.
// dvault's own state changes are POSTs with a signed double-submit CSRF token; bull-board's API has no
// token of ours, so its writes need a browser's same-origin Origin / Sec-Fetch-Site, or the bearer token.
// Every answer carries a Content-Security-Policy (a strict one unless a page or a file sets its own), 401 and
// refusals included. Under load each route runs at most DVAULT_HTTP_CONCURRENCY requests at once and queues
// DVAULT_HTTP_QUEUE more; past that, or when the database pool has no connection to give, the answer is 503
// with Retry-After, never a 500 (src/http/route-gate.ts, refusals.ts), counted apart from errors in /metrics.
// Service-provided text is escaped everywhere (the html`` template of src/text/html.ts); errors other than dvault's own UserError
// show a generic message (details in the log), refusals say what they are (a 405 names the methods a path
// takes); archived files are served by download id, only from inside DVAULT_ARCHIVE_DIR.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import express from "express";
import { ArchiveBrowserRepository } from "../db/archive-browser.repository.ts";
import { DashboardRepository } from "../db/dashboard.repository.ts";
import { UserError } from "../errors.ts";
import { QueueAdmin } from "../queue/queue-admin.ts";
import type { DashboardContext, DashboardDeps } from "./context.ts";
import { sendPage } from "./respond.ts";
import { createCsrf } from "./csrf.ts";
import { createFeedAdverts } from "./feeds/feed-adverts.ts";
import { createAnswerCounts } from "./answer-counts.ts";
import { createProvenance, installGuards } from "./guards.ts";
import { createHostGuard, isLoopbackHost } from "./host-guard.ts";
import { messagePage } from "./pages/jobs.ts";
import { methodNotAllowed, refusalHandler } from "./refusals.ts";
import { createRouteGate } from "./route-gate.ts";
import { actionsRoutes } from "./routes/actions.ts";
import { archiveRoutes } from "./routes/archive.ts";
import { connectRoutes } from "./routes/connect.ts";
import { boardRoutes } from "./routes/board.ts";
import { feedPageRoutes, feedRoutes } from "./routes/feeds.ts";
import { healthRoutes } from "./routes/health.ts";
import { jobsRoutes } from "./routes/jobs.ts";
import { readingRoutes } from "./routes/reading.ts";
import { signedThumbRoutes, thumbsRoutes } from "./routes/thumbs.ts";
import { trackRoutes } from "./routes/track.ts";
import { themeRoutes } from "./theme.ts";

export { isLoopbackHost };

export const DEFAULT_HTTP_HOST = "127.0.0.1";
export const DEFAULT_HTTP_PORT = 8787;

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

export type DashboardApp = { app: express.Express; close(): Promise<void> };

export function createDashboardApp(deps: DashboardDeps, options: { token?: string | undefined; host?: string | undefined } = {}): DashboardApp {
  const { config, log } = deps;
  const hosts = createHostGuard({ bindHost: options.host ?? config.httpHost, publicUrl: config.publicUrl, allowedHosts: config.httpAllowedHosts, log });
  const ctx: DashboardContext = {
    deps,
    config,
    log,
    token: options.token,
    now: deps.now ?? Date.now,
    queues: new QueueAdmin(deps.queues, deps.retryDownload),
    browser: new ArchiveBrowserRepository(deps.pool),
    dashboard: new DashboardRepository(deps.pool),
    provenance: createProvenance(hosts, config.publicUrl ? new URL(config.publicUrl).origin : undefined),
    csrf: createCsrf(log),
    feeds: createFeedAdverts({ pool: deps.pool, config, log }),
    answers: createAnswerCounts(),
  };
  const gate = createRouteGate({ limit: config.httpLoad.concurrency, queue: config.httpLoad.queue, maxWaitMs: config.httpLoad.queueWaitMs });

  const app = express();
  app.disable("x-powered-by");
  app.set("query parser", "simple");
  // Express's last-resort handler prints stack traces outside "production"; this app never shows one.
  app.set("env", "production");

  installGuards(app, {
    log,
    token: ctx.token,
    hosts,
    provenance: ctx.provenance,
    count: ctx.answers.middleware,
    gate: gate.middleware,
    beforeToken: (open) => {
      feedRoutes(open, ctx);
      signedThumbRoutes(open, ctx);
    },
  });
  healthRoutes(app, ctx);
  boardRoutes(app, ctx);
  archiveRoutes(app, ctx);
  readingRoutes(app, ctx);
  actionsRoutes(app, ctx);
  connectRoutes(app, ctx);
  trackRoutes(app, ctx);
  jobsRoutes(app, ctx);
  thumbsRoutes(app, ctx);
  feedPageRoutes(app, ctx);
  themeRoutes(app);

  app.use(methodNotAllowed(app, log));
  app.use((_req, res) => {
    sendPage(res, 404, messagePage(404, "Not found", "There is no such page."));
  });
  // Only dvault's own UserError speaks to the reader; any other message (PostgreSQL's, a bug's) may carry
  // internals, so the page says where to look instead.
  app.use(refusalHandler({ log, userMessage: (err) => (err instanceof UserError ? err.message : undefined) }));

  return { app, close: () => ctx.queues.close() };
}

/** Why the dashboard could not listen, in one line that says what to do; an error it does not know, as it is. */
function listenRefusal(err: NodeJS.ErrnoException, host: string, port: number): Error {
  const where = `cannot serve the dashboard on ${host}:${port}`;
  switch (err.code) {
    case "EADDRINUSE":
      return new UserError(`${where}: the port is in use (choose another with --http-port)`);
    case "EACCES":
      return new UserError(`${where}: this user may not open that port (ports below 1024 need privileges; choose another with --http-port)`);
    case "EADDRNOTAVAIL":
      return new UserError(`${where}: no interface of this machine has that address (choose one it has with --http-host, or 0.0.0.0 for all)`);
    case "ENOTFOUND":
    case "EAI_AGAIN":
    case "EAI_NONAME":
      return new UserError(`${where}: the host name does not resolve (give an address with --http-host, such as 127.0.0.1)`);
    default:
      return err;
  }
}

/** Starts the dashboard; refuses a non-loopback bind without a token, and a busy port, in one line. */
export async function startDashboard(deps: DashboardDeps, options: DashboardOptions = {}): Promise<RunningDashboard> {
  const host = options.host ?? DEFAULT_HTTP_HOST;
  const port = options.port ?? DEFAULT_HTTP_PORT;
  assertSafeBind(host, options.token);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new UserError(`cannot serve the dashboard on port ${port}: give a port from 0 to 65535 (--http-port, DVAULT_HTTP_PORT)`);
  const { app, close } = createDashboardApp(deps, { token: options.token, host });
  const server: Server = await new Promise((resolve, reject) => {
    // Node's own 400 for a request without Host would pre-empt the host check's 421, which says what to do.
    const s = createServer({ requireHostHeader: false }, app).listen(port, host);
    s.once("listening", () => resolve(s));
    // The app's queue connections are closed with the refusal: nothing of a dashboard that never listened stays open.
    s.once("error", (err: NodeJS.ErrnoException) => void close().finally(() => reject(listenRefusal(err, host, port))));
  });
  const address = server.address() as AddressInfo;
  const shownHost = address.family === "IPv6" ? `[${address.address}]` : address.address;
  const url = `http://${shownHost}:${address.port}`;
  deps.log.info({ url, access: options.token ? "DVAULT_HTTP_TOKEN required" : "open to whoever reaches it" }, "dashboard listening");
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
