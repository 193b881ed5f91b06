// "Sync now" and "Download now" (POSTs with the CSRF token, queued through the Producer by the worker's
// actions), and /api/activity: what runs now, read from Redis and PostgreSQL, so a page follows a worker on
// any host. The overview's script polls it; without script the overview shows the same on each load.
import type express from "express";
import { missingRoles, workerHeartbeats, workersWithRoles } from "../../status/redis-state.ts";
import { waitingFor } from "../pages/overview.ts";
import type { DashboardContext } from "../context.ts";
import { sendPage } from "../respond.ts";
import { messagePage } from "../pages/jobs.ts";
import { activitySummary } from "../pages/overview.ts";

export function actionsRoutes(app: express.Express, ctx: DashboardContext): void {
  const { deps, log, queues, csrf } = ctx;
  const back = (res: express.Response, notice: string) => res.redirect(303, `/?${new URLSearchParams(csrf.notice(notice)).toString()}`);
  const unavailable = (res: express.Response) =>
    sendPage(res, 409, messagePage(409, "Not available here", "Only the worker's dashboard (dvault worker --http) can queue work."));

  // What a button queued waits for when no live worker takes its queue (an http-only host, a stopped worker): said
  // on the notice, never "started". A failure to read the heartbeats says nothing rather than fail the button.
  const waiting = async (action: "sync" | "download") => {
    const workers = await workersWithRoles(deps.coord, ctx.config.redisPrefix, ctx.now()).catch(() => undefined);
    return workers ? waitingFor(action, workers.length, missingRoles(workers)) : undefined;
  };

  app.post("/actions/sync", ...csrf.guard, async (_req, res) => {
    if (!deps.actions) return unavailable(res);
    const queued = await deps.actions.syncNow();
    log.info({ queued }, "dashboard: sync now");
    if (!queued) return back(res, "Nothing to sync: no account can sync (see the accounts).");
    const runs = `${queued} source run${queued === 1 ? "" : "s"}`;
    const wait = await waiting("sync");
    return back(res, wait ? `Sync queued: ${runs} ${queued === 1 ? "waits" : "wait"}: ${wait}.` : `Sync started: ${runs} queued.`);
  });

  app.post("/actions/download", ...csrf.guard, async (_req, res) => {
    if (!deps.actions) return unavailable(res);
    const queued = await deps.actions.downloadNow();
    log.info({ queued }, "dashboard: download now");
    const wait = await waiting("download");
    return back(res, wait ? `Downloads asked for: the due files wait: ${wait}.` : "Downloads asked for: the due files are handed to the downloads queue.");
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
