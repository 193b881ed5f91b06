// /healthz (PostgreSQL, Redis on its engine, and a worker heartbeat, each within a time limit) and /metrics: Prometheus text
// to a scraper, the metrics page (src/http/pages/metrics.ts) to a browser.
import type express from "express";
import { createMetrics } from "../../metrics.ts";
import { workerHeartbeats } from "../../status/redis-state.ts";
import type { DashboardContext } from "../context.ts";
import { sendPage } from "../respond.ts";
import { metricsPage } from "../pages/metrics.ts";

const HEALTH_TIMEOUT_MS = 2000;

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

export function healthRoutes(app: express.Express, ctx: DashboardContext): void {
  const { deps, config, queues } = ctx;
  const metrics = createMetrics({ ...deps, queues, httpAnswers: ctx.answers.snapshot });

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
      check("PostgreSQL", () => ctx.dashboard.ping()).then(({ ok, ms, ...rest }) => ({ ok, ms, ...("error" in rest ? { error: rest.error } : {}) })),
      // On the PostgreSQL engine the postgres check covers the coordination store too: no Redis to ask.
      deps.coord.engine === "redis"
        ? check("Redis", () => deps.coord.ping()).then(({ ok, ms, ...rest }) => ({ ok, ms, ...("error" in rest ? { error: rest.error } : {}) }))
        : undefined,
      check("worker heartbeats", async () => {
        const beats = await workerHeartbeats(deps.coord, config.redisPrefix, Date.now());
        if (beats.length === 0) throw new Error("no worker heartbeat in the last minute");
        return { count: beats.length };
      }),
    ]);
    const healthy = postgres.ok && (redis?.ok ?? true) && workers.ok;
    res.status(healthy ? 200 : 503).json({ status: healthy ? "ok" : "unhealthy", checks: { postgres, ...(redis ? { redis } : {}), workers } });
  });

  // A scraper asks for text (Prometheus: text/plain or OpenMetrics before */*; curl: */* or nothing) and gets it;
  // a browser, whose Accept puts text/html first, gets the page, unless it follows the page's "raw" link.
  app.get("/metrics", async (req, res) => {
    const text = await metrics.render();
    res.vary("Accept");
    if (req.query.format !== "text" && req.accepts(["text/plain", "text/html"]) === "text/html")
      return sendPage(res, 200, metricsPage(await metrics.registry.getMetricsAsJSON(), new Date(ctx.now())));
    return res.type(metrics.contentType).send(text);
  });
}
