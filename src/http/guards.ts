// What runs before any route, token or not (src/http/server.ts has the whole list): the headers every answer
// carries (a Content-Security-Policy included: pages and files set their own, every other answer keeps this
// one), the Host check (host-guard.ts), malformed addresses, cross-site writes, each route's turn
// (route-gate.ts), and the token.
import { createHash, timingSafeEqual } from "node:crypto";
import type express from "express";
import type { Request, RequestHandler } from "express";
import type { Logger } from "../log.ts";
import { ANSWER_CSP, one, sendPage } from "./respond.ts";
import { readCookie, setCookie, TOKEN_COOKIE } from "./cookies.ts";
import type { HostGuard } from "./host-guard.ts";
import { messagePage } from "./pages/jobs.ts";

export const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/**
 * Where a request comes from, as the browser tells it: "same" (the dashboard's own pages), "cross" (another
 * site, or an origin that is not one of the dashboard's hosts), "unknown" (neither header: curl, a script).
 */
export type Provenance = (req: Request) => "same" | "cross" | "unknown";

/** Compares two secrets in constant time, whatever their lengths. */
export function sameSecret(given: string, expected: string): boolean {
  const a = createHash("sha256").update(given).digest();
  const b = createHash("sha256").update(expected).digest();
  return timingSafeEqual(a, b);
}

export function bearerToken(req: Request): string | undefined {
  const header = req.get("authorization");
  return header?.toLowerCase().startsWith("bearer ") ? header.slice(7).trim() : undefined;
}

/** NUL, or a percent-encoding that does not decode to UTF-8, anywhere in a request's path or query. */
function malformedTarget(url: string): boolean {
  try {
    return decodeURIComponent(url).includes("\0");
  } catch {
    return true;
  }
}

function parseOrigin(origin: string): URL | undefined {
  try {
    return new URL(origin);
  } catch {
    return undefined; // "null" and other opaque origins never match
  }
}

export function createProvenance(hosts: HostGuard, publicOrigin: string | undefined): Provenance {
  return (req) => {
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
}

/** Installs the guards, in order, before any route. */
export function installGuards(
  app: express.Express,
  g: {
    log: Logger;
    token: string | undefined;
    hosts: HostGuard;
    provenance: Provenance;
    /** Runs first, after the headers: counts every answer (answer-counts.ts), refusals included. */
    count?: RequestHandler;
    /** Each route's turn (route-gate.ts): after the cheap refusals, before anything that reads the database. */
    gate?: RequestHandler;
    /** Routes with a credential of their own (the feeds' token in the path), installed before the dashboard token's check. */
    beforeToken?: (app: express.Express) => void;
  },
): void {
  const { log, token, hosts, provenance } = g;
  app.use((_req, res, next) => {
    res.set({
      "X-Content-Type-Options": "nosniff",
      "Referrer-Policy": "same-origin",
      "X-Frame-Options": "DENY",
      "Cache-Control": "no-store",
      "Content-Security-Policy": ANSWER_CSP,
    });
    next();
  });
  if (g.count) app.use(g.count);

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

  if (g.gate) app.use(g.gate);
  g.beforeToken?.(app);

  // The token, when configured, guards everything else: pages, files, bull-board, /healthz and /metrics.
  app.get("/login", (req, res) => {
    if (!token) return res.redirect(303, "/");
    const given = one(req.query.token);
    if (!given || !sameSecret(given, token))
      return sendPage(res, 401, messagePage(401, "Wrong token", "Open /login?token=<DVAULT_HTTP_TOKEN> with the dashboard's token."));
    setCookie(res, TOKEN_COOKIE, given, { path: "/", httpOnly: true, sameSite: "lax", maxAge: 30 * 86400 });
    return res.redirect(303, "/");
  });
  app.use((req, res, next) => {
    if (!token) return next();
    const given = bearerToken(req) ?? readCookie(req, TOKEN_COOKIE);
    if (given && sameSecret(given, token)) return next();
    res.set("WWW-Authenticate", 'Bearer realm="dvault"');
    if (req.accepts(["html", "json", "text"]) === "html") {
      const hint = "This dashboard needs its token: open /login?token=<DVAULT_HTTP_TOKEN> once in this browser, or send Authorization: Bearer <token>.";
      return sendPage(res, 401, messagePage(401, "Token required", hint));
    }
    return res.status(401).type("text").send("dvault: this dashboard needs DVAULT_HTTP_TOKEN (Authorization: Bearer <token>)\n");
  });
}
