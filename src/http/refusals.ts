// What the dashboard answers when it refuses a request after the guards (src/http/guards.ts): each refusal says
// what it is, never "something failed". A method the path does not take gets 405 with the methods it does
// (Allow); a body or address the parsers refuse gets its 4xx with the reason; the database pool or a route's
// queue being full gets 503 with Retry-After (src/http/route-gate.ts); only a failure of dvault itself is a 500.
import { STATUS_CODES } from "node:http";
import type express from "express";
import type { Request, RequestHandler, Response } from "express";
import type { Logger } from "../log.ts";
import { isPoolExhausted } from "../db/pool-errors.ts";
import { sendPage } from "./respond.ts";
import { messagePage } from "./pages/jobs.ts";

/** The slice of Express 5's router this module reads: each route's matcher and methods. */
type RouteLayer = { match(path: string): unknown; route?: { methods: Record<string, boolean> } };

/** The methods some route of `app` answers at `path` (HEAD with GET, as Express does), in a stable order. */
export function methodsAt(app: express.Express, path: string): string[] {
  const stack = (app.router as unknown as { stack: RouteLayer[] }).stack;
  const methods = new Set<string>();
  for (const layer of stack) {
    if (!layer.route || !layer.match(path)) continue;
    for (const [method, on] of Object.entries(layer.route.methods)) {
      if (!on || method === "_all") continue;
      methods.add(method.toUpperCase());
      if (method === "get") methods.add("HEAD");
    }
  }
  return [...methods].sort();
}

/** 405 for a path that exists under other methods (a POST to /archive, a GET of /jobs/retry); the rest go on to the 404. */
export function methodNotAllowed(app: express.Express, log: Logger): RequestHandler {
  return (req, res, next) => {
    const allowed = methodsAt(app, req.path);
    if (allowed.length === 0 || allowed.includes(req.method)) return next();
    log.warn({ method: req.method, path: req.path }, "dashboard: method not allowed");
    return res
      .status(405)
      .set("Allow", allowed.join(", "))
      .type("text")
      .send(`dvault: ${req.method} is not allowed on ${req.path} (it takes ${allowed.join(", ")})\n`);
  };
}

/** What the body parser's and the router's refusals mean, by their `type` (body-parser's, stable across releases). */
const PARSER_REFUSALS: Record<string, string> = {
  "entity.too.large": "the request's body is larger than dvault accepts here",
  "parameters.too.many": "the form has more fields than dvault accepts",
  "charset.unsupported": "the body's charset is not one dvault reads (send UTF-8)",
  "encoding.unsupported": "the body's Content-Encoding is not one dvault reads",
  "entity.parse.failed": "the body could not be parsed",
  "entity.verify.failed": "the body could not be parsed",
  "request.aborted": "the request ended before its body did",
  "request.size.invalid": "the body's length does not match its Content-Length",
  "stream.encoding.set": "the body could not be read",
};

/** The 4xx an express or body-parser error carries (a path that does not decode, a body too large), if any. */
function clientErrorStatus(err: unknown): number | undefined {
  const status = err && typeof err === "object" && "status" in err ? err.status : undefined;
  return typeof status === "number" && status >= 400 && status < 500 ? status : undefined;
}

/** How long a client should wait before asking again when the database pool is exhausted. */
const POOL_RETRY_AFTER_S = 2;

/**
 * The last error handler: a client's error gets its 4xx with the reason; an exhausted database pool a 503 with
 * Retry-After (the load is an answer, not a failure: answer-counts.ts counts it apart); anything else the 500 page,
 * whose text is dvault's own UserError's or a pointer to the log (a PostgreSQL message may carry internals).
 */
export function refusalHandler(o: {
  log: Logger;
  userMessage: (err: unknown) => string | undefined;
}): (err: unknown, req: Request, res: Response, next: express.NextFunction) => void {
  return (err, req, res, _next) => {
    const status = clientErrorStatus(err);
    if (status !== undefined) {
      o.log.warn({ err, path: req.path }, "dashboard: request refused");
      if (res.headersSent) return;
      const type = err && typeof err === "object" && "type" in err ? String(err.type) : "";
      const why = PARSER_REFUSALS[type];
      res
        .status(status)
        .type("text")
        .send(`dvault: the request was refused (HTTP ${status} ${STATUS_CODES[status] ?? ""})${why ? `: ${why}` : ""}\n`);
      return;
    }
    if (isPoolExhausted(err)) {
      o.log.warn({ path: req.path }, "dashboard: the database pool is busy; answered 503");
      if (res.headersSent) return;
      res
        .status(503)
        .set("Retry-After", String(POOL_RETRY_AFTER_S))
        .type("text")
        .send(`dvault: the dashboard is busy (every database connection is in use); try again in ${POOL_RETRY_AFTER_S} s\n`);
      return;
    }
    o.log.error({ err, path: req.path }, "dashboard: request failed");
    if (res.headersSent) return;
    sendPage(res, 500, messagePage(500, "Something failed", o.userMessage(err) ?? "Something failed; the worker's log has the details."));
  };
}
