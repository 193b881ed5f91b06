// "Sync now" and "Download now" (POSTs with the CSRF token, queued through the Producer by the worker's
// actions), and /api/activity: what runs now, read from Redis and PostgreSQL, so a page follows a worker on
// any host. The overview's script polls it; without script the overview shows the same on each load.
import type express from "express";
import { workerHeartbeats } from "../../status/redis-state.ts";
import type { DashboardContext } from "../context.ts";
import { sendPage } from "../respond.ts";
import { messagePage } from "../pages/jobs.ts";
import { activitySummary } from "../pages/overview.ts";

export function actionsRoutes(app: express.Express, ctx: DashboardContext): void {
  const { deps, log, queues, csrf } = ctx;
  const back = (res: express.Response, notice: string) => res.redirect(303, `/?${new URLSearchParams(csrf.notice(notice)).toString()}`);
  const unavailable = (res: express.Response) =>
    sendPage(res, 409, messagePage(409, "Not available here", "Only the worker's dashboard (dvault worker --http) can queue work."));

  app.post("/actions/sync", ...csrf.guard, async (_req, res) => {
    if (!deps.actions) return unavailable(res);
    const queued = await deps.actions.syncNow();
    log.info({ queued }, "dashboard: sync now");
    return back(
      res,
      queued ? `Sync started: ${queued} source run${queued === 1 ? "" : "s"} queued.` : "Nothing to sync: no account can sync (see the accounts).",
    );
  });

  app.post("/actions/download", ...csrf.guard, async (_req, res) => {
    if (!deps.actions) return unavailable(res);
    const queued = await deps.actions.downloadNow();
    log.info({ queued }, "dashboard: download now");
    return back(res, "Downloads asked for: the due files are handed to the downloads queue.");
  });

  app.get("/api/activity", async (_req, res) => {
    const [counts, lastSync, workers] = await Promise.all([
      queues.counts(),
      ctx.dashboard.lastSyncRunAt(),
      workerHeartbeats(deps.coord, ctx.config.redisPrefix, ctx.now()),
    ]);
    const shown = counts.map(({ name, waiting, active, delayed, failed, paused }) => ({ name, waiting, active, delayed, failed, paused }));
    res.json({
      busy: shown.some((q) => q.waiting + q.active > 0),
      summary: activitySummary(shown),
      queues: shown,
      workers: workers.length,
      lastSyncAt: lastSync?.toISOString() ?? null,
    });
  });
}
