// The failed-jobs page and its state changes (retry, retry all, pause, resume): POSTs with the CSRF token
// of src/http/csrf.ts.
import type express from "express";
import type { Response } from "express";
import { isQueueName } from "../../queue/queue-admin.ts";
import type { DashboardContext } from "../context.ts";
import { one, sendPage } from "../respond.ts";
import { FAILED_JOBS_SHOWN, jobsPage } from "../pages/jobs.ts";

export function jobsRoutes(app: express.Express, ctx: DashboardContext): void {
  const { log, queues } = ctx;
  const { tokenFor, guard } = ctx.csrf;

  app.get("/jobs", async (req, res) => {
    const queueParam = one(req.query.queue);
    const queue = queueParam && isQueueName(queueParam) ? queueParam : undefined;
    const [failed, counts] = await Promise.all([queues.failed({ queue, limit: FAILED_JOBS_SHOWN + 1 }), queues.counts()]);
    const csrf = tokenFor(req, res);
    const queueRows = counts.map((c) => ({ ...c, oldestWaitingS: c.oldestWaitingMs === null ? null : Math.round(c.oldestWaitingMs / 1000) }));
    sendPage(res, 200, jobsPage({ failed, queues: queueRows, csrf, notice: ctx.csrf.noticeOf(req), queue }));
  });

  const backToJobs = (res: Response, notice: string, queue?: string) =>
    res.redirect(303, `/jobs?${new URLSearchParams({ ...(queue ? { queue } : {}), ...ctx.csrf.notice(notice) }).toString()}`);

  app.post("/jobs/retry", ...guard, async (req, res) => {
    const body = req.body as Record<string, unknown>;
    const id = one(body.id);
    const queueName = one(body.queue);
    if (!id || !queueName || !isQueueName(queueName)) return res.status(400).type("text").send("dvault: name a job id and its queue\n");
    const outcome = await queues.retry(id, queueName);
    log.info({ queue: queueName, jobId: id, retried: outcome.retried.length }, "dashboard: retry");
    return backToJobs(res, outcome.retried.length ? `Retried ${queueName}/${id}.` : `Not retried: ${outcome.skipped[0]?.reason ?? "unknown"}`);
  });

  app.post("/jobs/retry-all", ...guard, async (req, res) => {
    const queueName = one((req.body as Record<string, unknown>).queue);
    const queue = queueName && isQueueName(queueName) ? queueName : undefined;
    const outcome = await queues.retryAll({ queue });
    log.info({ queue, retried: outcome.retried.length }, "dashboard: retry all");
    return backToJobs(res, `Retried ${outcome.retried.length} job(s)${outcome.skipped.length ? `, ${outcome.skipped.length} not retried` : ""}.`, queue);
  });

  for (const action of ["pause", "resume"] as const) {
    app.post(`/jobs/${action}`, ...guard, async (req, res) => {
      const queueName = one((req.body as Record<string, unknown>).queue);
      if (!queueName || !isQueueName(queueName)) return res.status(400).type("text").send("dvault: name a queue\n");
      await (action === "pause" ? queues.pause(queueName) : queues.resume(queueName));
      log.info({ queue: queueName }, `dashboard: ${action}`);
      return backToJobs(res, `${queueName} ${action === "pause" ? "paused" : "resumed"}.`);
    });
  }
}
