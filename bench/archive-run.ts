// One full archive (every sync source and the downloads they want) through real BullMQ workers, for
// bench/end-to-end.ts (one in-process worker) and bench/scale.ts (worker processes). The bench only starts
// the workers and watches: their schedulers start the sync jobs, each sync job that mirrored something
// hands the due downloads to the queue itself, and the run ends when every source has finished and no
// download is wanted, queued or running. BENCH_DUMP=<file> writes the request timeline (for analysis).
import type { Job } from "bullmq";
import { SOURCES } from "../src/sync/sources/index.ts";
import { isApiEntry, lastSeq, median, percentile, type BenchEnv } from "./bench-env.ts";

export const SPACING_MS = 50;
export const LATENCY_MS = 30;
const SYNC_SOURCES = SOURCES.filter((s) => s.name !== "tracked").length;
const POLL_MS = 100;

export type ArchiveFigures = {
  wallMs: number;
  apiCalls: number;
  /** API calls by route template and status ("<route> <status>"), to see where two runs' counts part. */
  apiCallsByRoute: Record<string, number>;
  minimumMs: number;
  syncJobs: number;
  downloadJobs: number;
  downloads: Record<string, number>;
  /** Per sync job: the worker's processing time minus the handler's own duration. */
  syncRunOverheadMs: { median: number; p95: number };
  /** Per download job: from a worker slot freeing up to its next job starting (from the queue's event stream). */
  dispatchGapMs: { median: number; p95: number; n: number };
  /** Per download job: active → completed (the handler's own work included). */
  downloadJobMs: { median: number; p95: number };
  /** Worker start → first API request, and last API request → the end of the run. */
  firstApiMs: number;
  tailMs: number;
  /** Sum over consecutive API requests of the gap beyond the spacing: budget left idle mid-run. */
  idleBudgetMs: number;
  /** Sync jobs handing their downloads to the queue: total time and jobs queued. */
  handover: { ms: number; queued: number; jobs: number };
  /** The first sync job: from enqueue to start (it found a free slot). */
  firstPickupMs: number;
  refreshes: number;
  /** Deviations whose /deviation/download was answered 200 more than once: a paid download done twice. */
  downloadedTwice: string[];
  /** Deviations whose original was fetched from the CDN more than once, and download rows per deviation > 1. */
  duplicateFetches: number;
  duplicateRows: number;
};

async function until(deadline: number, what: string, check: () => Promise<boolean>): Promise<void> {
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`bench timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

/**
 * Runs the archive with `startWorkers` (which starts the worker(s) and returns how to stop them), watching the
 * queues of the services' engine (`services.queues`: Redis or PostgreSQL alone, src/queue/backend.ts). The fault
 * suite's no-shared-filesystem test runs it too.
 */
export async function runArchive(
  env: Pick<BenchEnv, "sim" | "services">,
  startWorkers: () => Promise<() => Promise<void>>,
  { timeoutMs = 600_000 }: { timeoutMs?: number } = {},
): Promise<ArchiveFigures> {
  const queues = env.services.queues;
  const syncQ = queues.queue("sync");
  const downloadsQ = queues.queue("downloads");
  // Job starts and ends as the workers report them (the downloads queue removes completed jobs).
  const events = queues.events("downloads");
  const activeAt = new Map<string, number>();
  const completedAt = new Map<string, number>();
  // A Redis stream entry's id is the time Redis wrote it ("<ms>-<seq>"); BullMQ's PostgreSQL event ids are a
  // sequence, so there the bench stamps the event when it receives it (LISTEN/NOTIFY's delay included).
  const stamp = (id: string) => (/^\d+-\d+$/.test(id) ? Number(id.split("-")[0]) : Date.now());
  events.on("active", ({ jobId }, id) => activeAt.set(jobId, stamp(id)));
  events.on("completed", ({ jobId }, id) => completedAt.set(jobId, stamp(id)));
  await events.waitUntilReady();
  const deadline = Date.now() + timeoutMs;
  const fromSeq = lastSeq(env.sim);
  const started = Date.now();
  const stop = await startWorkers();
  try {
    await until(deadline, "the sync jobs", async () => (await syncQ.getJobCountByTypes("completed", "failed")) >= SYNC_SOURCES);
    const syncDoneAt = Date.now();
    await until(deadline, "the downloads", async () => {
      const { rows } = await env.services.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM downloads WHERE status IN ('wanted', 'queued')");
      return (rows[0]?.n ?? 1) === 0 && (await downloadsQ.getJobCountByTypes("active", "waiting", "prioritized")) === 0;
    });
    const wallMs = Date.now() - started;
    const log = env.sim.log().filter((e) => e.seq > fromSeq);
    if (process.env.BENCH_DUMP)
      (await import("node:fs")).writeFileSync(
        process.env.BENCH_DUMP,
        JSON.stringify({
          started,
          syncDoneAt,
          wallMs: Date.now() - started,
          log: log.map((e) => ({ t: e.realMs, r: e.route, s: e.status, g: e.form.grant_type })),
        }),
      );
    const api = log.filter(isApiEntry);
    const apiCalls = api.length;
    const apiCallsByRoute: Record<string, number> = {};
    for (const e of api) apiCallsByRoute[`${e.route} ${e.status}`] = (apiCallsByRoute[`${e.route} ${e.status}`] ?? 0) + 1;
    let idleBudgetMs = 0;
    for (let i = 1; i < api.length; i++) idleBudgetMs += Math.max(0, (api[i]?.realMs ?? 0) - (api[i - 1]?.realMs ?? 0) - SPACING_MS);
    const refreshes = log.filter((e) => e.route === "/oauth2/token" && e.form.grant_type === "refresh_token").length;
    const paidByDeviation = new Map<string, number>();
    for (const e of log) {
      const m = /^\/api\/v1\/oauth2\/deviation\/download\/([^/]+)$/.exec(e.path);
      if (m && e.status === 200) paidByDeviation.set(m[1] as string, (paidByDeviation.get(m[1] as string) ?? 0) + 1);
    }
    const cdnByPath = new Map<string, number>();
    for (const e of log) if (e.route.startsWith("/_cdn") && e.status === 200) cdnByPath.set(e.path, (cdnByPath.get(e.path) ?? 0) + 1);
    const { rows: dl } = await env.services.pool.query<{ status: string; n: number }>(
      "SELECT status::text, count(*)::int AS n FROM downloads GROUP BY 1 ORDER BY 1",
    );
    const { rows: dup } = await env.services.pool.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM (SELECT deviationid, kind FROM downloads GROUP BY 1, 2 HAVING count(*) > 1) d",
    );
    const syncJobs = (await syncQ.getJobs(["completed"], 0, -1)) as Job[];
    const syncOverhead = syncJobs
      .filter((j) => j.processedOn && j.finishedOn && typeof j.returnvalue?.durationMs === "number")
      .map(
        (j) =>
          (j.finishedOn as number) - (j.processedOn as number) - (j.returnvalue.durationMs as number) - ((j.returnvalue.enqueueMs as number | undefined) ?? 0),
      );
    const finishes = [...completedAt.values()].sort((a, b) => a - b);
    const gaps: number[] = [];
    const jobMs: number[] = [];
    for (const [jobId, start] of activeAt) {
      const end = completedAt.get(jobId);
      if (end !== undefined) jobMs.push(end - start);
      let lo = 0;
      let hi = finishes.length - 1;
      let prev = -1;
      while (lo <= hi) {
        const mid = (lo + hi) >> 1;
        if ((finishes[mid] as number) <= start) {
          prev = finishes[mid] as number;
          lo = mid + 1;
        } else hi = mid - 1;
      }
      if (prev > 0 && start - prev < 1000) gaps.push(start - prev);
    }
    const firstSync = syncJobs.reduce<Job | undefined>((a, j) => (!a || j.timestamp < a.timestamp ? j : a), undefined);
    return {
      wallMs,
      apiCalls,
      apiCallsByRoute,
      minimumMs: apiCalls * SPACING_MS,
      syncJobs: syncJobs.length,
      // Completed download jobs are removed from Redis: count them by their rows' final states.
      downloadJobs: dl.filter((r) => r.status !== "wanted" && r.status !== "queued").reduce((n, r) => n + r.n, 0),
      downloads: Object.fromEntries(dl.map((r) => [r.status, r.n])),
      syncRunOverheadMs: { median: median(syncOverhead), p95: percentile(syncOverhead, 95) },
      dispatchGapMs: { median: median(gaps), p95: percentile(gaps, 95), n: gaps.length },
      downloadJobMs: { median: median(jobMs), p95: percentile(jobMs, 95) },
      firstApiMs: (api[0]?.realMs ?? started) - started,
      tailMs: started + wallMs - (api[api.length - 1]?.realMs ?? started),
      idleBudgetMs,
      handover: syncJobs.reduce(
        (h, j) =>
          typeof j.returnvalue?.enqueueMs === "number"
            ? {
                ms: h.ms + (j.returnvalue.enqueueMs as number),
                queued: h.queued + ((j.returnvalue.downloadsQueued as number | undefined) ?? 0),
                jobs: h.jobs + 1,
              }
            : h,
        { ms: 0, queued: 0, jobs: 0 },
      ),
      firstPickupMs: firstSync?.processedOn ? firstSync.processedOn - firstSync.timestamp : 0,
      refreshes,
      downloadedTwice: [...paidByDeviation].filter(([, n]) => n > 1).map(([id]) => id),
      duplicateFetches: [...cdnByPath.values()].filter((n) => n > 1).length,
      duplicateRows: dup[0]?.n ?? 0,
    };
  } finally {
    await stop();
    await events.close().catch(() => undefined);
    // BullMQ leaves a Redis connection it was given open (the backend made this one for the events alone).
    const given = events.opts.connection as { quit?: () => Promise<unknown>; disconnect?: () => void };
    if (typeof given.quit === "function") await given.quit().catch(() => given.disconnect?.());
    await syncQ.close();
    await downloadsQ.close();
  }
}
