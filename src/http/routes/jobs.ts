// The failed-jobs page and its state changes (retry, retry all, pause, resume): POSTs that carry a signed
// double-submit CSRF token (the page's cookie and a form field, both signed with a key of this process).
import { createHmac, randomBytes } from "node:crypto";
import express, { type NextFunction, type Request, type Response } from "express";
import { isQueueName } from "../../queue/queue-admin.ts";
import { type DashboardContext, one, sendPage } from "../context.ts";
import { CSRF_COOKIE, readCookie, setCookie } from "../cookies.ts";
import { sameSecret } from "../guards.ts";
import { jobsPage } from "../pages.ts";

export function jobsRoutes(app: express.Express, ctx: DashboardContext): void {
  const { log, queues } = ctx;
  const csrfKey = randomBytes(32);
  const signCsrf = (nonce: string) => `${nonce}.${createHmac("sha256", csrfKey).update(nonce).digest("base64url")}`;
  const validCsrf = (value: string | undefined) => {
    if (!value) return false;
    const nonce = value.split(".")[0] ?? "";
    return /^[A-Za-z0-9_-]{16,}$/.test(nonce) && sameSecret(value, signCsrf(nonce));
  };
  /** The page's CSRF token: the cookie's when it is valid, else a new one set as the cookie. */
  const csrfFor = (req: Request, res: Response): string => {
    const existing = readCookie(req, CSRF_COOKIE);
    if (existing !== undefined && validCsrf(existing)) return existing;
    const fresh = signCsrf(randomBytes(18).toString("base64url"));
    setCookie(res, CSRF_COOKIE, fresh, { path: "/", httpOnly: true, sameSite: "strict" });
    return fresh;
  };

  app.get("/jobs", async (req, res) => {
    const queueParam = one(req.query.queue);
    const queue = queueParam && isQueueName(queueParam) ? queueParam : undefined;
    const [failed, counts] = await Promise.all([queues.failed({ queue, limit: 200 }), queues.counts()]);
    const csrf = csrfFor(req, res);
    const queueRows = counts.map((c) => ({ ...c, oldestWaitingS: c.oldestWaitingMs === null ? null : Math.round(c.oldestWaitingMs / 1000) }));
    sendPage(res, 200, jobsPage({ failed, queues: queueRows, csrf, notice: one(req.query.done), queue }));
  });

  const form = express.urlencoded({ extended: false, limit: "8kb", parameterLimit: 20 });
  const requireCsrf = (req: Request, res: Response, next: NextFunction) => {
    const body = (req.body ?? {}) as Record<string, unknown>;
    const sent = one(body._csrf);
    const cookie = readCookie(req, CSRF_COOKIE);
    if (!sent || !cookie || !validCsrf(sent) || !sameSecret(sent, cookie)) {
      log.warn({ path: req.path }, "dashboard: request without a valid CSRF token refused");
      return res.status(403).type("text").send("dvault: missing or invalid CSRF token; reload the page and try again\n");
    }
    return next();
  };
  const backToJobs = (res: Response, notice: string, queue?: string) =>
    res.redirect(303, `/jobs?${new URLSearchParams({ ...(queue ? { queue } : {}), done: notice }).toString()}`);

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
}
