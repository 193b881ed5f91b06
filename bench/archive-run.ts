// One full archive (every sync source, then the downloads it wanted) through real BullMQ workers, for
// bench/end-to-end.ts (one in-process worker) and bench/scale.ts (worker processes). The workers' own
// schedulers start the sync jobs; once every source has finished, the bench hands the due downloads to the
// queue (what the worker's 2-minute `downloads.enqueue` scheduler would do) and waits until none is left.
import { Queue, type Job } from "bullmq";
import { enqueueDueDownloads } from "../jobs/enqueue-downloads/enqueue-due.ts";
import { JOB_DEFINITIONS } from "../jobs/index.ts";
import { Producer } from "../src/queue/producer.ts";
import { createRedis } from "../src/queue/redis.ts";
import { SOURCES } from "../src/sync/sources/index.ts";
import { BENCH_REDIS_URL, isApiEntry, lastSeq, median, percentile, type BenchEnv } from "./bench-env.ts";

export const SPACING_MS = 50;
export const LATENCY_MS = 30;
const SYNC_SOURCES = SOURCES.filter((s) => s.name !== "tracked").length;
const POLL_MS = 100;

export type ArchiveFigures = {
  wallMs: number;
  apiCalls: number;
  minimumMs: number;
  syncJobs: number;
  downloadJobs: number;
  downloads: Record<string, number>;
  /** Per sync job: the worker's processing time minus the handler's own duration. */
  syncRunOverheadMs: { median: number; p95: number };
  /** Per download job: from a worker slot freeing up to its next job starting. */
  dispatchGapMs: { median: number; p95: number };
  /** Per job: from enqueue to start, for jobs that found a free slot (the first of each queue). */
  firstPickupMs: number;
  refreshes: number;
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

/** Runs the archive with `startWorkers` (which starts the worker(s) and returns how to stop them). */
export async function runArchive(env: BenchEnv, startWorkers: () => Promise<() => Promise<void>>, timeoutMs = 600_000): Promise<ArchiveFigures> {
  const redis = createRedis(BENCH_REDIS_URL);
  await redis.connect();
  const producer = new Producer([...JOB_DEFINITIONS], redis, env.prefix);
  const syncQ = new Queue("sync", { connection: redis, prefix: env.prefix });
  const downloadsQ = new Queue("downloads", { connection: redis, prefix: env.prefix });
  const deadline = Date.now() + timeoutMs;
  const fromSeq = lastSeq(env.sim);
  const started = Date.now();
  const stop = await startWorkers();
  try {
    await until(deadline, "the sync jobs", async () => (await syncQ.getJobCountByTypes("completed", "failed")) >= SYNC_SOURCES);
    await enqueueDueDownloads(env.services, producer);
    await until(deadline, "the downloads", async () => {
      const { rows } = await env.services.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM downloads WHERE status IN ('wanted', 'queued')");
      return (rows[0]?.n ?? 1) === 0 && (await downloadsQ.getJobCountByTypes("active", "waiting", "prioritized")) === 0;
    });
    const wallMs = Date.now() - started;
    const log = env.sim.log().filter((e) => e.seq > fromSeq);
    const apiCalls = log.filter(isApiEntry).length;
    const refreshes = log.filter((e) => e.route === "/oauth2/token" && e.form.grant_type === "refresh_token").length;
    const cdnByPath = new Map<string, number>();
    for (const e of log) if (e.route.startsWith("/_cdn") && e.status === 200) cdnByPath.set(e.path, (cdnByPath.get(e.path) ?? 0) + 1);
    const { rows: dl } = await env.services.pool.query<{ status: string; n: number }>("SELECT status::text, count(*)::int AS n FROM downloads GROUP BY 1 ORDER BY 1");
    const { rows: dup } = await env.services.pool.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM (SELECT deviationid, kind FROM downloads GROUP BY 1, 2 HAVING count(*) > 1) d",
    );
    const syncJobs = (await syncQ.getJobs(["completed"], 0, -1)) as Job[];
    const downloadJobs = (await downloadsQ.getJobs(["completed"], 0, -1)) as Job[];
    const syncOverhead = syncJobs
      .filter((j) => j.processedOn && j.finishedOn && typeof j.returnvalue?.durationMs === "number")
      .map((j) => (j.finishedOn as number) - (j.processedOn as number) - (j.returnvalue.durationMs as number));
    const finishes = downloadJobs.map((j) => j.finishedOn ?? 0).sort((a, b) => a - b);
    const gaps: number[] = [];
    for (const j of downloadJobs) {
      const start = j.processedOn ?? 0;
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
    const firstOf = (jobs: Job[]) => jobs.reduce<Job | undefined>((a, j) => (!a || j.timestamp < a.timestamp ? j : a), undefined);
    const firsts = [firstOf(syncJobs), firstOf(downloadJobs)].filter((j): j is Job => !!j?.processedOn);
    return {
      wallMs,
      apiCalls,
      minimumMs: apiCalls * SPACING_MS,
      syncJobs: syncJobs.length,
      // Completed download jobs are removed from Redis: count them by their rows' final states.
      downloadJobs: dl.filter((r) => r.status !== "wanted" && r.status !== "queued").reduce((n, r) => n + r.n, 0),
      downloads: Object.fromEntries(dl.map((r) => [r.status, r.n])),
      syncRunOverheadMs: { median: median(syncOverhead), p95: percentile(syncOverhead, 95) },
      dispatchGapMs: { median: median(gaps), p95: percentile(gaps, 95) },
      firstPickupMs: median(firsts.map((j) => (j.processedOn as number) - j.timestamp)),
      refreshes,
      duplicateFetches: [...cdnByPath.values()].filter((n) => n > 1).length,
      duplicateRows: dup[0]?.n ?? 0,
    };
  } finally {
    await stop();
    await syncQ.close();
    await downloadsQ.close();
    await producer.close().catch(() => undefined);
    await redis.quit().catch(() => redis.disconnect());
  }
}
